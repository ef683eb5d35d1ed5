// `tandem-bench steps`: what one target step costs as it carries more new
// tokens per sequence. Theorem 3.8 assumes verifying γ+1 tokens costs the
// same as decoding one; this prints v(k) = t(k new tokens per sequence) /
// t(1) for k = 1..9 at each batch size, and with a draft the cost ratio
// c = t_draft(1) / t_target(1), so the assumption can be checked on the
// machine at hand. --compare-dummy times a second shape's table in the same
// run (a sparse MoE model next to the dense model of its active size: a MoE
// verification block's tokens pick more distinct experts than one token
// does, so its v(k) grows faster).
#include <algorithm>
#include <chrono>
#include <memory>
#include <cstdio>
#include <random>
#include <sstream>

#include "common/error.h"
#include "coordinator/models/model_flags.h"
#include "tools/bench/bench_suites.h"
#include "tools/bench/step_timer.h"

namespace tandem::bench {
// The cache is truncated back after every repeat, so all repeats see the
// same state.
double step_seconds(LoadedModel& m, int batch, int context, int k, int repeats) {
  const int V = m.model->config().vocab_size;
  std::mt19937 rng(static_cast<uint32_t>(batch * 100 + k));
  std::uniform_int_distribution<int32_t> pick(0, V - 1);
  std::vector<SequenceId> seqs;
  std::vector<std::vector<int32_t>> prompts(static_cast<size_t>(batch)), news(static_cast<size_t>(batch));
  for (int b = 0; b < batch; ++b) {
    const SequenceId seq = m.cache->create_sequence();
    require(m.cache->reserve(seq, context + k), ErrorKind::out_of_resources,
            "KV cache too small: raise --kv-blocks");
    prompts[static_cast<size_t>(b)].resize(static_cast<size_t>(context));
    news[static_cast<size_t>(b)].resize(static_cast<size_t>(k));
    for (auto& t : prompts[static_cast<size_t>(b)]) t = pick(rng);
    for (auto& t : news[static_cast<size_t>(b)]) t = pick(rng);
    SequenceStep prefill{seq, prompts[static_cast<size_t>(b)], 1};
    m.model->forward(std::span(&prefill, 1), *m.cache);
    seqs.push_back(seq);
  }
  std::vector<double> times;
  for (int r = 0; r < repeats; ++r) {
    std::vector<SequenceStep> steps;
    for (int b = 0; b < batch; ++b) {
      m.cache->reserve(seqs[static_cast<size_t>(b)], context + k);  // truncate freed the tail
      steps.push_back({seqs[static_cast<size_t>(b)], news[static_cast<size_t>(b)], k});
    }
    const auto start = std::chrono::steady_clock::now();
    m.model->forward(steps, *m.cache);
    times.push_back(std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count());
    for (SequenceId seq : seqs) m.cache->truncate(seq, context);
  }
  for (SequenceId seq : seqs) m.cache->release(seq);
  std::sort(times.begin(), times.end());
  return times[times.size() / 2];
}

namespace {

struct StepsFlags {
  ModelFlags model;
  std::string batches = "1,4,16";
  int context = 64;
  int repeats = 9;
  int max_k = 9;
  std::string compare_dummy;  // another shape, timed the same way
};

// v(k) = t(k) / t(1) for k = 2..max_k at every batch size, as a table.
void print_table(LoadedModel& m, const StepsFlags& flags, const std::vector<int>& batches) {
  const ModelConfig& c = m.model->config();
  std::printf("%s: %lld parameters, %lld active per token, %.1f MB of %s weights (all of them) "
              "per step; context %d tokens; median of %d\n\n",
              c.architecture.c_str(), static_cast<long long>(c.parameter_count()),
              static_cast<long long>(c.active_parameter_count()),
              m.model->weights().bytes_read_per_step() / 1e6,
              dtype_name(m.model->backend().weight_dtype()), flags.context, flags.repeats);
  std::printf("| batch | t(1) ms |");
  for (int k = 2; k <= flags.max_k; ++k) std::printf(" v(%d) |", k);
  std::printf("\n|---|---|");
  for (int k = 2; k <= flags.max_k; ++k) std::printf("---|");
  std::printf("\n");
  for (int batch : batches) {
    const double t1 = step_seconds(m, batch, flags.context, 1, flags.repeats);
    std::printf("| %d | %.2f |", batch, t1 * 1e3);
    for (int k = 2; k <= flags.max_k; ++k)
      std::printf(" %.2f |", step_seconds(m, batch, flags.context, k, flags.repeats) / t1);
    std::printf("\n");
    std::fflush(stdout);
  }
}

int bench_steps(const StepsFlags& flags) {
  OpenModel open = open_model(flags.model);
  const int context = flags.context;
  const int repeats = flags.repeats;
  std::vector<int> batches;
  for (double batch : cli::parse_number_list("--batches", flags.batches))
    batches.push_back(static_cast<int>(batch));
  std::printf("target ");
  print_table(open.target, flags, batches);
  if (!flags.compare_dummy.empty()) {
    ModelSpec spec;
    spec.path = flags.compare_dummy;
    spec.dummy = true;
    spec.dummy_seed = static_cast<uint64_t>(flags.model.seed_weights);
    spec.kv_blocks = flags.model.kv_blocks;
    spec.block_size = flags.model.block_size;
    LoadedModel other = load_model(spec, *open.backend);
    std::printf("\ncompared ");
    print_table(other, flags, batches);
  }
  if (open.draft) {
    const double target = step_seconds(open.target, 1, context, 1, repeats);
    const double draft = step_seconds(*open.draft, 1, context, 1, repeats);
    std::printf("\ndraft: %lld parameters; t_draft(1) %.3f ms / t_target(1) %.3f ms: c = %.3f\n",
                static_cast<long long>(open.draft->model->config().parameter_count()),
                draft * 1e3, target * 1e3, draft / target);
  }
  return 0;
}

}  // namespace

cli::Run define_steps(cli::Command& command) {
  auto flags = std::make_shared<StepsFlags>();
  add_model_flags(command, flags->model);
  cli::add_number_list(command, "--batches", flags->batches, "the batch sizes to time");
  cli::add_value(command, "--context", flags->context, "tokens each sequence already holds");
  cli::add_value(command, "--repeats", flags->repeats, "timed steps per cell; the median is shown");
  cli::add_value(command, "--max-k", flags->max_k, "v(k) for k = 2..this");
  cli::add_value(command, "--compare-dummy", flags->compare_dummy,
                 "a second config.json shape (dummy weights) whose table is timed in the same "
                 "run, e.g. the dense model of a MoE target's active size");
  return [flags] { return bench_steps(*flags); };
}

}  // namespace tandem::bench
