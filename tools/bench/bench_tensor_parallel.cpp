// `mpirun -np N tandem-bench tensor-parallel --model DIR|--dummy CONFIG`:
// the target's forward steps at TP 1 and at TP N, side by side in one job,
// with the time spent in collectives reported apart. A benchmark, not a
// test: it prints numbers and asserts nothing.
//
// Three layouts share the job's cores, each timed alone while the other
// ranks wait (sleeping, not spinning: they would steal the cores):
//   TP 1 x 1 thread     rank 0 alone, one core;
//   TP 1 x N threads    rank 0 alone with N kernel threads (the same cores
//                       as TP N, used by one process);
//   TP N x 1 thread     N ranks, one thread each.
// Workloads: decode steps of B sequences adding one token each, and one
// prefill of P tokens.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <numeric>
#include <optional>
#include <vector>

#include "common/error.h"
#include "coordinator/models/model_flags.h"
#include "tools/bench/bench_suites.h"
#include "transport/world_communicator.h"

namespace tandem::bench {
namespace {

using Clock = std::chrono::steady_clock;
constexpr int kReleaseTag = tag_value(Tag::bench_release);  // rank 0 → waiting ranks: the next layout may start

struct Workload {
  const char* name;
  int sequences;  // B
  int tokens;     // new tokens per sequence per step
  int steps;
};

struct Timing {
  double seconds = 0;         // per step, median
  double communication = 0;   // per step, in collectives (same step)
};

// Runs `w` on the model: `steps` forward passes after a warm-up one; the
// median step and its communication seconds. Decode steps extend the same
// sequences; each prefill step starts fresh ones.
Timing time_workload(LlamaModel& model, PagedKvCache& cache, const Workload& w) {
  const int V = model.config().vocab_size;
  const bool prefill = w.tokens > 1;
  std::vector<SequenceId> seqs;
  auto start_sequences = [&](int positions) {
    for (SequenceId seq : seqs) cache.release(seq);
    seqs.clear();
    for (int b = 0; b < w.sequences; ++b) {
      seqs.push_back(cache.create_sequence());
      require(cache.reserve(seqs.back(), positions), ErrorKind::out_of_resources,
              "KV cache too small for the bench: lower --steps or --batch, or raise --kv-blocks");
    }
  };
  require(w.tokens * (prefill ? 1 : w.steps + 1) <= model.config().max_position_embeddings,
          ErrorKind::invalid_argument,
          "the bench's sequences would outgrow the model's context: lower --steps or "
          "--prompt-tokens");
  if (!prefill) start_sequences(w.steps + 1);
  std::vector<std::vector<int32_t>> tokens(static_cast<size_t>(w.sequences));
  for (size_t b = 0; b < tokens.size(); ++b)
    for (int t = 0; t < w.tokens; ++t)
      tokens[b].push_back((17 + 31 * t + 7 * static_cast<int>(b)) % V);
  std::vector<std::pair<double, double>> times;
  for (int s = 0; s <= w.steps; ++s) {
    if (prefill) start_sequences(w.tokens);
    std::vector<SequenceStep> steps;
    for (size_t b = 0; b < seqs.size(); ++b) steps.push_back({seqs[b], tokens[b], 1});
    const auto start = Clock::now();
    model.forward(steps, cache);
    const double seconds = std::chrono::duration<double>(Clock::now() - start).count();
    if (s > 0) times.emplace_back(seconds, model.communication_seconds());  // s 0 warms up
  }
  for (SequenceId seq : seqs) cache.release(seq);
  std::sort(times.begin(), times.end());
  const auto [seconds, communication] = times[times.size() / 2];
  return {seconds, communication};
}

struct Layout {
  int tp;
  int threads;
};

// Times every workload in every layout; rank 0 returns [layout][workload].
std::vector<std::vector<Timing>> time_layouts(Communicator& world,
                                              const std::vector<Layout>& layouts,
                                              const std::vector<Workload>& workloads,
                                              const ModelFlags& flags) {
  std::vector<std::vector<Timing>> results;
  for (const Layout& layout : layouts) {
    std::vector<int> ranks(static_cast<size_t>(layout.tp));
    std::iota(ranks.begin(), ranks.end(), 0);
    std::unique_ptr<Communicator> group = world.split(ranks);
    if (group) {
      ModelFlags layout_flags = flags;  // the layout decides the threads, not --threads
      layout_flags.threads = layout.threads;
      const TensorShard shard{group->rank(), group->size(),
                              group->size() > 1 ? group.get() : nullptr};
      OpenModel open = open_model(layout_flags, shard);
      std::vector<Timing> timings;
      for (const Workload& w : workloads)
        timings.push_back(time_workload(*open.target.model, *open.target.cache, w));
      if (world.rank() == 0) results.push_back(timings);
    }
    // Ranks outside the group wait for rank 0 here, asleep between polls.
    if (world.rank() == 0) {
      for (int r = layout.tp; r < world.size(); ++r) world.send({}, r, kReleaseTag);
    } else if (!group) {
      world.receive(0, kReleaseTag, -1);
    }
  }
  return results;
}

struct TensorParallelFlags {
  ModelFlags model;
  int steps = 16;
  int prompt_tokens = 128;
  int batch = 16;
};

int bench_tensor_parallel(const TensorParallelFlags& flags) {
  const int steps = flags.steps;
  const int prompt = flags.prompt_tokens;
  const int batch = flags.batch;
  require(steps > 0 && prompt > 0 && batch > 0, ErrorKind::invalid_argument,
          "--steps, --prompt-tokens and --batch must be positive");

  std::optional<MpiRuntime> mpi;
  std::unique_ptr<Communicator> world = make_world_communicator(mpi);
  const int N = world->size();
  const std::vector<Workload> workloads = {
      {"decode B=1", 1, 1, steps},
      {"decode B=batch", batch, 1, steps},
      {"prefill", 1, prompt, std::max(3, steps / 4)},
  };
  std::vector<Layout> layouts = {{1, 1}};
  if (N > 1) layouts.insert(layouts.end(), {{1, N}, {N, 1}});

  std::vector<std::vector<Timing>> results;  // [layout][workload], on rank 0
  // A rank that fails must end the job: the others would wait for it forever.
  try {
    results = time_layouts(*world, layouts, workloads, flags.model);
  } catch (const std::exception& error) {
    if (N == 1) throw;
    std::fprintf(stderr, "tandem-bench: rank %d: %s; ending the job\n", world->rank(), error.what());
    world->abort_job(1);
  }
  if (world->rank() != 0) return 0;

  std::printf("tensor parallelism: %d ranks on this machine (%s)\n", N,
              (flags.model.model.empty() ? flags.model.dummy : flags.model.model).c_str());
  std::printf("%-14s %-16s %10s %12s %12s %10s\n", "workload", "layout", "ms/step",
              "tokens/s", "comm ms", "vs TP1x1");
  for (size_t w = 0; w < workloads.size(); ++w) {
    const Workload& work = workloads[w];
    const double tokens = static_cast<double>(work.sequences) * work.tokens;
    const std::string name = w == 1 ? "decode B=" + std::to_string(batch) : work.name;
    for (size_t l = 0; l < layouts.size(); ++l) {
      const Timing& t = results[l][w];
      const std::string layout =
          "TP " + std::to_string(layouts[l].tp) + " x " + std::to_string(layouts[l].threads) +
          (layouts[l].threads == 1 ? " thread" : " threads");
      std::printf("%-14s %-16s %10.3f %12.1f %12.3f %9.2fx\n", name.c_str(), layout.c_str(),
                  t.seconds * 1e3, tokens / t.seconds, t.communication * 1e3,
                  results[0][w].seconds / t.seconds);
    }
  }
  return 0;
}

}  // namespace

cli::Run define_tensor_parallel(cli::Command& command) {
  auto flags = std::make_shared<TensorParallelFlags>();
  add_model_flags(command, flags->model);
  cli::add_value(command, "--steps", flags->steps, "timed decode steps per layout");
  cli::add_value(command, "--prompt-tokens", flags->prompt_tokens, "the prefill workload's prompt");
  cli::add_value(command, "--batch", flags->batch, "sequences of the batched decode workload");
  return [flags] { return bench_tensor_parallel(*flags); };
}

}  // namespace tandem::bench
