// `tandem-bench forward`: decode and prefill throughput of one model on this
// machine, with the weight bytes each step reads and the bandwidth that
// implies. A benchmark, not a test: it prints numbers and asserts nothing.
#include <algorithm>
#include <chrono>
#include <memory>
#include <cstdio>
#include <random>
#include <vector>

#include "common/error.h"
#include "coordinator/models/model_flags.h"
#include "tools/bench/bench_suites.h"

namespace tandem::bench {
namespace {

using Clock = std::chrono::steady_clock;

double median(std::vector<double> values) {
  std::sort(values.begin(), values.end());
  return values[values.size() / 2];
}

std::vector<int32_t> random_tokens(int count, int vocab, uint32_t seed) {
  std::mt19937 rng(seed);
  std::uniform_int_distribution<int32_t> pick(0, vocab - 1);
  std::vector<int32_t> tokens(static_cast<size_t>(count));
  for (auto& t : tokens) t = pick(rng);
  return tokens;
}

// Seconds to push `count` random tokens through one fresh sequence, `chunk`
// tokens per forward step: chunk 1 is decoding (llama-bench's tg), chunk =
// count is one prefill (its pp).
double time_tokens(LlamaModel& model, PagedKvCache& cache, int count, int chunk, uint32_t seed) {
  const auto tokens = random_tokens(count, model.config().vocab_size, seed);
  const SequenceId seq = cache.create_sequence();
  require(cache.reserve(seq, count), ErrorKind::out_of_resources, "KV cache too small for bench");
  const auto start = Clock::now();
  for (int i = 0; i < count; i += chunk) {
    SequenceStep step{seq, std::span(tokens).subspan(i, std::min(chunk, count - i)), 1};
    model.forward(std::span(&step, 1), cache);
  }
  const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
  cache.release(seq);
  return seconds;
}

struct ForwardFlags {
  ModelFlags model;
  int decode_tokens = 64;
  int prompt_tokens = 128;
  int repeats = 5;
};

int bench_forward(const ForwardFlags& flags) {
  OpenModel open = open_model(flags.model);
  LlamaModel& model = *open.target.model;
  const int decode_tokens = flags.decode_tokens;
  const int prompt_tokens = flags.prompt_tokens;
  const int repeats = flags.repeats;
  require(decode_tokens > 0 && prompt_tokens > 0 && repeats > 0, ErrorKind::invalid_argument,
          "--decode-tokens, --prompt-tokens and --repeats must be positive");

  // One untimed round warms caches, page tables and the BLAS thread pool.
  time_tokens(model, *open.target.cache, std::min(decode_tokens, 8), 1, 99);
  time_tokens(model, *open.target.cache, prompt_tokens, prompt_tokens, 99);
  // On CUDA, decoding also runs without step graphs, interleaved with the
  // runs with them, for their ratio measured side by side.
  Backend& backend = model.backend();
  const bool graphs = backend.kind() == BackendKind::cuda;
  std::vector<double> decode, prefill, decode_without_graphs;
  for (int r = 0; r < repeats; ++r) {
    decode.push_back(decode_tokens / time_tokens(model, *open.target.cache, decode_tokens, 1, r));
    prefill.push_back(prompt_tokens /
                      time_tokens(model, *open.target.cache, prompt_tokens, prompt_tokens, r));
    if (!graphs) continue;
    backend.set_step_graphs(false);
    decode_without_graphs.push_back(decode_tokens /
                                    time_tokens(model, *open.target.cache, decode_tokens, 1, r));
    backend.set_step_graphs(true);
  }

  const ModelConfig& c = model.config();
  const double bytes = static_cast<double>(model.weights().bytes_read_per_step());
  const double decode_tps = median(decode);
  std::printf("model: %lld parameters (hidden %d, intermediate %d, %d layers, %d heads of %d, "
              "%d KV heads, vocab %d), %s weights on %s\n",
              static_cast<long long>(c.parameter_count()), c.hidden_size, c.intermediate_size,
              c.num_layers, c.num_heads, c.head_dim, c.num_kv_heads, c.vocab_size,
              dtype_name(model.backend().weight_dtype()), model.backend().description().c_str());
  // max/min is the steadiness: how far apart the fastest and slowest rounds are.
  const double decode_min = *std::min_element(decode.begin(), decode.end());
  const double decode_max = *std::max_element(decode.begin(), decode.end());
  std::printf("decode  batch 1, %d tokens: %8.1f tokens/s (median of %d; min %.1f, max %.1f, "
              "max/min %.2f)\n",
              decode_tokens, decode_tps, repeats, decode_min, decode_max, decode_max / decode_min);
  std::printf("prefill %d-token prompt:   %8.1f tokens/s (median of %d)\n", prompt_tokens,
              median(prefill), repeats);
  if (graphs) {
    const Backend::StepGraphStats stats = backend.step_graph_stats();
    const double without = median(decode_without_graphs);
    std::printf("decode  batch 1 without step graphs: %8.1f tokens/s; with them %.2fx "
                "(steps: %lld captured, %lld replayed, %lld op by op)\n",
                without, decode_tps / without, static_cast<long long>(stats.captured),
                static_cast<long long>(stats.replayed), static_cast<long long>(stats.eager));
  }
  std::printf("weights read per decode step: %.1f MB; implied bandwidth at batch 1: %.1f GB/s\n",
              bytes / 1e6, bytes * decode_tps / 1e9);
  if (const double peak = model.backend().peak_memory_bandwidth(); peak > 0) {
    // The roofline: a decode step must stream every weight once, so it can
    // go no faster than bandwidth / bytes per step.
    std::printf("roofline at %.0f GB/s peak: %.1f tokens/s; measured decode reaches %.1f%% of it\n",
                peak / 1e9, peak / bytes, 100.0 * decode_tps * bytes / peak);
  }
  return 0;
}

}  // namespace

cli::Run define_forward(cli::Command& command) {
  auto flags = std::make_shared<ForwardFlags>();
  add_model_flags(command, flags->model);
  cli::add_value(command, "--decode-tokens", flags->decode_tokens,
                 "tokens decoded one per step (batch 1)");
  cli::add_value(command, "--prompt-tokens", flags->prompt_tokens,
                 "the prompt prefilled in one step");
  cli::add_value(command, "--repeats", flags->repeats, "timed rounds; the median is shown");
  return [flags] { return bench_forward(*flags); };
}

}  // namespace tandem::bench
