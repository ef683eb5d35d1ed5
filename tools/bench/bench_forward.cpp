// `tandem-bench forward`: decode and prefill throughput of one model on this
// machine, with the weight bytes each step reads and the bandwidth that
// implies, beside references measured in the same run that travel between
// hosts: on cpu, the bandwidth of a plain streaming read (decode's roofline)
// and OpenBLAS's sgemm on the model's own prefill shapes. With
// --compare-weight-dtype, the same against another weight dtype (fp32
// against bf16 on the CPU) in the same run, with the ratios. A benchmark,
// not a test: it prints numbers and asserts nothing.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <vector>

#include "common/error.h"
#include "coordinator/models/model_flags.h"
#include "tools/bench/bench_suites.h"
#include "tools/bench/same_run_references.h"

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
  std::string compare_weight_dtype;  // "": one model only
  int decode_tokens = 64;
  int prompt_tokens = 128;
  int repeats = 5;
};

// The same-run references on cpu: decode against the streaming read, each
// prefill projection against OpenBLAS.
void print_cpu_references(const ModelConfig& c, size_t stream_bytes, double stream_gbs,
                          double bytes_per_token, double decode_tps, int T, int repeats) {
  const size_t cache = last_level_cache_bytes();
  std::printf("stream read, %.0f MiB over %.0f MiB of last-level cache: %.1f GB/s (median of %d); "
              "roofline %.1f tokens/s\n",
              static_cast<double>(stream_bytes) / (1 << 20), static_cast<double>(cache) / (1 << 20),
              stream_gbs, repeats, stream_gbs * 1e9 / bytes_per_token);
  std::printf("decode moves %.1f GB/s: %.2f of the streaming read%s\n",
              bytes_per_token * decode_tps / 1e9, bytes_per_token * decode_tps / (stream_gbs * 1e9),
              bytes_per_token < static_cast<double>(cache) ? " (weights fit in the cache: not a bandwidth bound)"
                                                           : "");
  std::printf("prefill matmuls at T=%d, ours against OpenBLAS sgemm on the same shapes (median of %d):\n",
              T, repeats);
  std::printf("  %-8s %-22s %10s %10s %9s\n", "matrix", "Kin x N", "ours ms", "sgemm ms", "speed-up");
  double ours_total = 0, blas_total = 0;
  for (const ProjectionShape& shape : prefill_projections(c)) {
    const MatmulPair pair = time_projection(shape, T, repeats);
    std::string dims;
    for (const auto& [Kin, N] : shape.calls)
      dims += (dims.empty() ? "" : "+") + std::to_string(Kin) + "x" + std::to_string(N);
    std::printf("  %-8s %-22s %10.3f %10.3f %8.2fx\n", shape.name.c_str(), dims.c_str(),
                pair.ours_seconds * 1e3, pair.blas_seconds * 1e3, pair.blas_seconds / pair.ours_seconds);
    if (shape.name == "lm_head") continue;  // a prefill step projects only its logit rows
    ours_total += c.num_layers * pair.ours_seconds;
    blas_total += c.num_layers * pair.blas_seconds;
  }
  std::printf("  the %d layers' matmuls of one step: ours %.3f ms, sgemm %.3f ms: %.2fx\n", c.num_layers,
              ours_total * 1e3, blas_total * 1e3, blas_total / ours_total);
}

// Tokens per second of each timed round (and, on cpu, the streaming read's
// GB/s, measured between the decode rounds so that both see the same machine).
struct Rates {
  std::vector<double> decode, prefill, decode_without_graphs, decode_other_skinny, stream_gbs;
};

void warm_up(LoadedModel& open, int decode_tokens, int prompt_tokens) {
  // One untimed round warms caches, page tables and the thread pool.
  time_tokens(*open.model, *open.cache, std::min(decode_tokens, 8), 1, 99);
  time_tokens(*open.model, *open.cache, prompt_tokens, prompt_tokens, 99);
}

void time_round(LoadedModel& open, const ForwardFlags& flags, int round, StreamRead* stream,
                Rates& rates) {
  LlamaModel& model = *open.model;
  PagedKvCache& cache = *open.cache;
  const auto seed = static_cast<uint32_t>(round);
  if (stream) rates.stream_gbs.push_back(stream->gigabytes_per_second(3));
  rates.decode.push_back(flags.decode_tokens / time_tokens(model, cache, flags.decode_tokens, 1, seed));
  rates.prefill.push_back(flags.prompt_tokens /
                          time_tokens(model, cache, flags.prompt_tokens, flags.prompt_tokens, seed));
  // On CUDA, decoding also runs without step graphs, interleaved with the
  // runs with them, for their ratio measured side by side.
  Backend& backend = model.backend();
  if (backend.kind() != BackendKind::cuda) return;
  backend.set_step_graphs(false);
  rates.decode_without_graphs.push_back(flags.decode_tokens /
                                        time_tokens(model, cache, flags.decode_tokens, 1, seed));
  backend.set_step_graphs(true);
  // And on the other of the two batch-invariant matmul kernels (the same
  // sums bit for bit), for their ratio side by side too.
  const bool tiled = !flags.model.untiled_skinny_matmul;
  backend.set_tiled_skinny_matmul(!tiled);
  rates.decode_other_skinny.push_back(flags.decode_tokens /
                                      time_tokens(model, cache, flags.decode_tokens, 1, seed));
  backend.set_tiled_skinny_matmul(tiled);
}

void report(LlamaModel& model, const ForwardFlags& flags, const Rates& rates, size_t stream_bytes) {
  const ModelConfig& c = model.config();
  const Backend& backend = model.backend();
  const double bytes = static_cast<double>(model.weights().bytes_read_per_step());
  const double decode_tps = median(rates.decode);
  std::printf("model: %lld parameters (hidden %d, intermediate %d, %d layers, %d heads of %d, "
              "%d KV heads, vocab %d), %s weights on %s\n",
              static_cast<long long>(c.parameter_count()), c.hidden_size, c.intermediate_size,
              c.num_layers, c.num_heads, c.head_dim, c.num_kv_heads, c.vocab_size,
              dtype_name(backend.weight_dtype()), backend.description().c_str());
  // max/min is the steadiness: how far apart the fastest and slowest rounds are.
  const double decode_min = *std::min_element(rates.decode.begin(), rates.decode.end());
  const double decode_max = *std::max_element(rates.decode.begin(), rates.decode.end());
  std::printf("decode  batch 1, %d tokens: %8.1f tokens/s (median of %d; min %.1f, max %.1f, "
              "max/min %.2f)\n",
              flags.decode_tokens, decode_tps, flags.repeats, decode_min, decode_max, decode_max / decode_min);
  std::printf("prefill %d-token prompt:   %8.1f tokens/s (median of %d)\n", flags.prompt_tokens,
              median(rates.prefill), flags.repeats);
  if (!rates.decode_without_graphs.empty()) {
    const Backend::StepGraphStats stats = backend.step_graph_stats();
    const double without = median(rates.decode_without_graphs);
    std::printf("decode  batch 1 without step graphs: %8.1f tokens/s; with them %.2fx "
                "(steps: %lld captured, %lld replayed, %lld op by op)\n",
                without, decode_tps / without, static_cast<long long>(stats.captured),
                static_cast<long long>(stats.replayed), static_cast<long long>(stats.eager));
    const double other = median(rates.decode_other_skinny);
    const double tiled = flags.model.untiled_skinny_matmul ? other : decode_tps;
    const double untiled = flags.model.untiled_skinny_matmul ? decode_tps : other;
    std::printf("decode  batch 1 on the batch-invariant matmuls: untiled %.1f tokens/s, tiled "
                "where it pays %.1f: %.2fx (the same sums bit for bit; --untiled-skinny-matmul)\n",
                untiled, tiled, tiled / untiled);
  }
  std::printf("weights read per decode step: %.1f MB; implied bandwidth at batch 1: %.1f GB/s\n",
              bytes / 1e6, bytes * decode_tps / 1e9);
  if (const double peak = backend.peak_memory_bandwidth(); peak > 0) {
    // The roofline: a decode step must stream every weight once, so it can
    // go no faster than bandwidth / bytes per step.
    std::printf("roofline at %.0f GB/s peak: %.1f tokens/s; measured decode reaches %.1f%% of it\n",
                peak / 1e9, peak / bytes, 100.0 * decode_tps * bytes / peak);
  }
  if (!rates.stream_gbs.empty())
    print_cpu_references(c, stream_bytes, median(rates.stream_gbs), bytes, decode_tps, flags.prompt_tokens,
                         flags.repeats);
}

int bench_forward(const ForwardFlags& flags) {
  require(flags.decode_tokens > 0 && flags.prompt_tokens > 0 && flags.repeats > 0,
          ErrorKind::invalid_argument, "--decode-tokens, --prompt-tokens and --repeats must be positive");
  OpenModel open = open_model(flags.model);
  // --compare-weight-dtype: the same model (the same dummy seed or
  // checkpoint) again with its matrices in another dtype, timed round by
  // round between the first one's rounds, so that both see the same
  // machine and the ratio means something on a busy one.
  std::optional<OpenModel> other;
  if (!flags.compare_weight_dtype.empty()) {
    ModelFlags other_flags = flags.model;
    other_flags.weight_dtype = flags.compare_weight_dtype;
    other_flags.draft.clear();
    other_flags.dummy_draft.clear();
    other.emplace(open_model(other_flags));
  }
  warm_up(open.target, flags.decode_tokens, flags.prompt_tokens);
  if (other) warm_up(other->target, flags.decode_tokens, flags.prompt_tokens);
  // On cpu, the streaming read the decode rates are held against.
  const size_t stream_bytes =
      std::clamp<size_t>(8 * last_level_cache_bytes(), size_t{256} << 20, size_t{1} << 30);
  std::unique_ptr<StreamRead> stream;
  if (open.target.model->backend().kind() == BackendKind::cpu)
    stream = std::make_unique<StreamRead>(stream_bytes);
  Rates rates, other_rates;
  for (int r = 0; r < flags.repeats; ++r) {
    time_round(open.target, flags, r, stream.get(), rates);
    if (other) time_round(other->target, flags, r, stream.get(), other_rates);
  }
  report(*open.target.model, flags, rates, stream_bytes);
  if (!other) return 0;
  std::printf("\n");
  report(*other->target.model, flags, other_rates, stream_bytes);
  const char* base = dtype_name(open.target.model->backend().weight_dtype());
  const char* compared = dtype_name(other->target.model->backend().weight_dtype());
  std::printf("\n%s weights against %s, interleaved rounds: decode %.2fx, prefill %.2fx "
              "(ratios of the medians)\n",
              compared, base, median(other_rates.decode) / median(rates.decode),
              median(other_rates.prefill) / median(rates.prefill));
  return 0;
}

}  // namespace

cli::Run define_forward(cli::Command& command) {
  auto flags = std::make_shared<ForwardFlags>();
  add_model_flags(command, flags->model);
  cli::add_value(command, "--compare-weight-dtype", flags->compare_weight_dtype,
                 "also time the model with its weights in this dtype, rounds interleaved, "
                 "and print the ratios")
      .type_name("bf16|fp16|fp32");
  cli::add_value(command, "--decode-tokens", flags->decode_tokens,
                 "tokens decoded one per step (batch 1)");
  cli::add_value(command, "--prompt-tokens", flags->prompt_tokens,
                 "the prompt prefilled in one step");
  cli::add_value(command, "--repeats", flags->repeats, "timed rounds; the median is shown");
  return [flags] { return bench_forward(*flags); };
}

}  // namespace tandem::bench
