// ForwardingBackend: a Backend that passes every call on to another one it
// does not own; a test derives from it to change only the calls it is
// about (as ForwardingCommunicator does for communicators).
#pragma once

#include <memory>
#include <span>
#include <string>

#include "kernels/backend.h"

namespace tandem::test_support {

class ForwardingBackend : public Backend {
 public:
  explicit ForwardingBackend(Backend& inner) : inner_(inner) {}

  BackendKind kind() const override { return inner_.kind(); }
  std::string description() const override { return inner_.description(); }
  double peak_memory_bandwidth() const override { return inner_.peak_memory_bandwidth(); }
  Dtype weight_dtype() const override { return inner_.weight_dtype(); }
  Buffer upload_weights(std::span<const float> host) override {
    return inner_.upload_weights(host);
  }
  void copy_from(Backend& source, const float* from, size_t n, float* to) override {
    inner_.copy_from(source, from, n, to);
  }
  void begin_step_graph() override { inner_.begin_step_graph(); }
  void set_step_graphs(bool on) override { inner_.set_step_graphs(on); }
  void set_batch_invariant(bool on) override { inner_.set_batch_invariant(on); }
  StepGraphStats step_graph_stats() const override { return inner_.step_graph_stats(); }
  Buffer allocate(size_t count) override { return inner_.allocate(count); }
  void upload(std::span<const float> host, float* device) override { inner_.upload(host, device); }
  void download(const float* device, std::span<float> host) override {
    inner_.download(device, host);
  }
  void download_finished(const float* device, std::span<float> host) override {
    inner_.download_finished(device, host);
  }
  void synchronize() override { inner_.synchronize(); }
  bool reads_host_memory() const override { return inner_.reads_host_memory(); }
  std::unique_ptr<Event> record_event() override { return inner_.record_event(); }

  void embedding(std::span<const int32_t> token_ids, WeightView table, int C,
                 float* out) override {
    inner_.embedding(token_ids, table, C, out);
  }
  void rmsnorm(const float* x, const float* weight, int T, int C, float eps, float* out) override {
    inner_.rmsnorm(x, weight, T, C, eps, out);
  }
  void matmul(const float* x, WeightView w, const float* bias, int T, int Kin, int N,
              float* y) override {
    inner_.matmul(x, w, bias, T, Kin, N, y);
  }
  void rope(float* x, std::span<const int32_t> positions, int heads, int D,
            const float* inv_freq) override {
    inner_.rope(x, positions, heads, D, inv_freq);
  }
  void kv_write(const float* k, const float* v, std::span<const int32_t> slots,
                const PagedKvView& cache) override {
    inner_.kv_write(k, v, slots, cache);
  }
  void attention(const float* q, std::span<const SequenceSlice> slices, int H,
                 const PagedKvView& cache, float scale, float* out) override {
    inner_.attention(q, slices, H, cache, scale, out);
  }
  void swiglu(const float* gate_up, int T, int I, float* out) override {
    inner_.swiglu(gate_up, T, I, out);
  }
  void add(float* x, const float* y, size_t n) override { inner_.add(x, y, n); }
  void add_rmsnorm(float* x, const float* y, const float* weight, int T, int C, float eps,
                   float* out) override {
    inner_.add_rmsnorm(x, y, weight, T, C, eps, out);
  }
  void moe_route(const float* router_logits, int T, int E, int top_k, bool norm_topk_prob,
                 MoePlan& plan) override {
    inner_.moe_route(router_logits, T, E, top_k, norm_topk_prob, plan);
  }
  void moe_combine(const float* expert_rows, const MoePlan& plan, int C, float* out) override {
    inner_.moe_combine(expert_rows, plan, C, out);
  }
  void standardize(const float* logits, int rows, int V, std::span<const SamplingParams> params,
                   float* probs) override {
    inner_.standardize(logits, rows, V, params, probs);
  }
  void find_nonfinite_rows(const float* x, int rows, int V, uint8_t* out) override {
    inner_.find_nonfinite_rows(x, rows, V, out);
  }
  void argmax(const float* logits, int rows, int V, int32_t* out) override {
    inner_.argmax(logits, rows, V, out);
  }
  void sample(const float* probs, int rows, int V, std::span<const double> uniforms,
              int32_t* out) override {
    inner_.sample(probs, rows, V, uniforms, out);
  }
  void sample_gumbel(const float* probs, int rows, int V, std::span<const NoiseKey> keys,
                     int32_t* out) override {
    inner_.sample_gumbel(probs, rows, V, keys, out);
  }
  void verify(std::span<const VerifyBlock> blocks, int V, std::span<VerifyOutcome> out,
              std::span<float> beta) override {
    inner_.verify(blocks, V, out, beta);
  }
  void verify_greedy(std::span<const GreedyBlock> blocks, std::span<VerifyOutcome> out) override {
    inner_.verify_greedy(blocks, out);
  }

 protected:
  Backend& inner() { return inner_; }

 private:
  Backend& inner_;
};

}  // namespace tandem::test_support
