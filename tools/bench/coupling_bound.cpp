#include "tools/bench/coupling_bound.h"

#include <algorithm>
#include <chrono>
#include <limits>
#include <numeric>

#include "common/error.h"
#include "kernels/cpu/sampling.h"

namespace tandem::bench {

double overlap(std::span<const float> p, std::span<const float> q) {
  double sum = 0;
  for (size_t v = 0; v < p.size(); ++v) sum += std::min(p[v], q[v]);
  return sum;
}

double gumbel_bound(double beta) { return beta / (2.0 - beta); }

// For a token v in both supports, u's max(p(u)/p(v), q(u)/q(v)) is the p
// ratio exactly when r(u) = q(u)/p(u) <= r(v) (tokens outside p's support
// have r = ∞). Sorted by r, the sum over u is then a prefix sum of p over
// p(v) plus a suffix sum of q over q(v); tokens tied with v give the same
// value on either side.
double gumbel_agreement(std::span<const float> p, std::span<const float> q) {
  const size_t V = p.size();
  std::vector<double> ratio(V);
  for (size_t v = 0; v < V; ++v)
    ratio[v] = p[v] > 0 ? double(q[v]) / double(p[v]) : std::numeric_limits<double>::infinity();
  std::vector<size_t> order(V);
  std::iota(order.begin(), order.end(), size_t{0});
  std::sort(order.begin(), order.end(), [&](size_t a, size_t b) { return ratio[a] < ratio[b]; });
  std::vector<double> q_after(V + 1, 0.0);  // q_after[i] = Σ q over order[i..]
  for (size_t i = V; i-- > 0;) q_after[i] = q_after[i + 1] + q[order[i]];
  double p_through = 0, agreement = 0;  // p_through: Σ p over order[0..i]
  for (size_t i = 0; i < V; ++i) {
    const size_t v = order[i];
    p_through += p[v];
    if (p[v] > 0 && q[v] > 0) agreement += 1.0 / (p_through / p[v] + q_after[i + 1] / q[v]);
  }
  return agreement;
}

namespace {

// Standardized rows (n, V) on the host: row k is the distribution of the
// token after sequence[0 .. first + k], for k < n, one forward pass.
std::vector<float> rows_of(LoadedModel& m, std::span<const int32_t> sequence, int n,
                           const SamplingParams& sampling) {
  const int V = m.model->config().vocab_size;
  const SequenceId seq = m.cache->create_sequence();
  require(m.cache->reserve(seq, static_cast<int>(sequence.size())), ErrorKind::out_of_resources,
          "KV cache too small for the plain outputs: raise --kv-blocks");
  const SequenceStep step{seq, sequence, n};
  const float* logits = m.model->forward(std::span(&step, 1), *m.cache);
  Backend& backend = m.model->backend();
  Buffer probs = backend.allocate(static_cast<size_t>(n) * V);
  const std::vector<SamplingParams> params(static_cast<size_t>(n), sampling);
  backend.standardize(logits, n, V, params, probs.data());
  std::vector<float> host(static_cast<size_t>(n) * V);
  backend.download(probs.data(), host);
  m.cache->release(seq);
  return host;
}

}  // namespace

PlainPathBound score_plain_path(OpenModel& open, std::span<const PlainOutput> outputs,
                                const SamplingParams& sampling) {
  require(open.draft.has_value(), ErrorKind::invalid_argument, "the bound needs a draft model");
  const int V = open.target.model->config().vocab_size;
  PlainPathBound bound;
  for (const PlainOutput& output : outputs) {
    const int n = static_cast<int>(output.tokens.size());
    if (n == 0) continue;
    // Every token but the last is context; the rows predict tokens[0..n-1].
    std::vector<int32_t> sequence = output.prompt;
    sequence.insert(sequence.end(), output.tokens.begin(), output.tokens.end() - 1);
    const std::vector<float> p = rows_of(open.target, sequence, n, sampling);
    const std::vector<float> q = rows_of(*open.draft, sequence, n, sampling);
    for (int k = 0; k < n; ++k) {
      const std::span<const float> p_row(p.data() + static_cast<size_t>(k) * V, V);
      const std::span<const float> q_row(q.data() + static_cast<size_t>(k) * V, V);
      const double beta = overlap(p_row, q_row);
      const double guaranteed = gumbel_bound(beta);
      const double agreement = gumbel_agreement(p_row, q_row);
      const int64_t position = static_cast<int64_t>(output.prompt.size()) + k;
      ++bound.positions;
      bound.beta_sum += beta;
      bound.bound_sum += guaranteed;
      bound.agreement_sum += agreement;
      // Rounding: the rows are floats summing to 1 within 1e-6.
      if (agreement < guaranteed - 1e-6) ++bound.below_bound;
      const auto start = std::chrono::steady_clock::now();
      const int32_t raced = cpu::gumbel_row(p_row.data(), V, output.seed, position);
      const auto raced_at = std::chrono::steady_clock::now();
      // (a call into the kernels library, built without LTO: not elided)
      static_cast<void>(cpu::sample_row(p_row.data(), V, 0.5));
      const auto drawn_at = std::chrono::steady_clock::now();
      bound.race_seconds += std::chrono::duration<double>(raced_at - start).count();
      bound.inverse_cdf_seconds += std::chrono::duration<double>(drawn_at - raced_at).count();
      if (raced == output.tokens[static_cast<size_t>(k)]) ++bound.reproduced;
    }
  }
  return bound;
}

}  // namespace tandem::bench
