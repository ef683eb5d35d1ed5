// CpuBackend: the Backend interface over the CPU ops (host memory, OpenBLAS).
// Weight matrices are stored in f32, bf16 or f16 as the backend was made;
// norms, biases, activations and the KV cache are always f32.
#include <cstdlib>
#include <cstring>
#include <new>
#include <string>

#include "common/error.h"
#include "kernels/backend.h"
#include "kernels/cpu/ops.h"
#include "kernels/cpu/sampling.h"
#include "kernels/cpu/verify.h"

namespace tandem {
namespace {

void free_host(void* data) { std::free(data); }

// Zero-filled host memory, 64-byte aligned: whole cache lines for the vector
// loops and OpenBLAS.
void* allocate_host(size_t bytes) {
  const size_t rounded = (bytes + 63) / 64 * 64;
  void* data = std::aligned_alloc(64, rounded);
  if (!data)
    throw Error(ErrorKind::out_of_resources,
                "cannot allocate " + std::to_string(rounded) + " bytes of host memory");
  std::memset(data, 0, rounded);
  return data;
}

class CpuBackend final : public Backend {
 public:
  explicit CpuBackend(Dtype weight_dtype) : weight_dtype_(weight_dtype) {}
  BackendKind kind() const override { return BackendKind::cpu; }
  bool reads_host_memory() const override { return true; }

  Buffer allocate(size_t count) override {
    if (count == 0) return Buffer();
    return Buffer(allocate_host(count * sizeof(float)), count, Dtype::f32, free_host);
  }
  Dtype weight_dtype() const override { return weight_dtype_; }
  // Narrow weights are rounded to nearest even once, here; the ops widen them
  // exactly as they read them.
  Buffer upload_weights(std::span<const float> host) override {
    if (weight_dtype_ == Dtype::f32) return Backend::upload_weights(host);
    if (host.empty()) return Buffer();
    auto* narrow = static_cast<uint16_t*>(allocate_host(host.size() * sizeof(uint16_t)));
    if (weight_dtype_ == Dtype::bf16) {
      for (size_t i = 0; i < host.size(); ++i) narrow[i] = f32_to_bf16(host[i]);
    } else {
      for (size_t i = 0; i < host.size(); ++i) narrow[i] = f32_to_f16(host[i]);
    }
    return Buffer(narrow, host.size(), weight_dtype_, free_host);
  }
  void upload(std::span<const float> host, float* device) override {
    std::memcpy(device, host.data(), host.size_bytes());
  }
  void download(const float* device, std::span<float> host) override {
    std::memcpy(host.data(), device, host.size_bytes());
  }

  void embedding(std::span<const int32_t> token_ids, WeightView table, int C,
                 float* out) override {
    cpu::embedding(token_ids, table, C, out);
  }
  void rmsnorm(const float* x, const float* weight, int T, int C, float eps, float* out) override {
    cpu::rmsnorm(x, weight, T, C, eps, out);
  }
  void matmul(const float* x, WeightView w, const float* bias, int T, int Kin, int N,
              float* y) override {
    const MatmulOutput out{N, y};
    matmul_parts(x, w, bias, T, Kin, std::span(&out, 1));
  }
  void matmul_parts(const float* x, WeightView w, const float* bias, int T, int Kin,
                    std::span<const MatmulOutput> outputs) override {
    switch (w.dtype) {
      case Dtype::f32: return cpu::matmul(x, w.f32(), bias, T, Kin, outputs);
      case Dtype::bf16:
        return cpu::matmul_bf16(x, static_cast<const uint16_t*>(w.data), bias, T, Kin, outputs);
      case Dtype::f16:
        return cpu::matmul_f16(x, static_cast<const uint16_t*>(w.data), bias, T, Kin, outputs);
    }
  }
  void rope(float* x, std::span<const int32_t> positions, int heads, int D,
            const float* inv_freq) override {
    cpu::rope(x, positions, heads, D, inv_freq);
  }
  void kv_write(const float* k, const float* v, std::span<const int32_t> slots,
                const PagedKvView& cache) override {
    cpu::kv_write(k, v, slots, cache);
  }
  void attention(const float* q, std::span<const SequenceSlice> slices, int H,
                 const PagedKvView& cache, float scale, float* out) override {
    cpu::attention(q, slices, H, cache, scale, out);
  }
  void swiglu(const float* gate_up, int T, int I, float* out) override {
    cpu::swiglu(gate_up, T, I, out);
  }
  void add(float* x, const float* y, size_t n) override { cpu::add(x, y, n); }
  void add_rmsnorm(float* x, const float* y, const float* weight, int T, int C, float eps,
                   float* out) override {
    cpu::add_rmsnorm(x, y, weight, T, C, eps, out);
  }

  void moe_combine(const float* expert_rows, const MoePlan& plan, int C, float* out) override {
    cpu::moe_combine(expert_rows, plan, C, out);
  }

  void standardize(const float* logits, int rows, int V, std::span<const SamplingParams> params,
                   float* probs) override {
    cpu::standardize(logits, rows, V, params, probs);
  }
  void find_nonfinite_rows(const float* x, int rows, int V, uint8_t* out) override {
    cpu::find_nonfinite_rows(x, rows, V, out);
  }
  void argmax(const float* logits, int rows, int V, int32_t* out) override {
    cpu::argmax(logits, rows, V, out);
  }
  void sample(const float* probs, int rows, int V, std::span<const double> uniforms,
              int32_t* out) override {
    require(uniforms.size() == static_cast<size_t>(rows), ErrorKind::invalid_argument, [&] {
      return "sample: " + std::to_string(uniforms.size()) + " uniforms for " +
             std::to_string(rows) + " rows";
    });
    for (int r = 0; r < rows; ++r)
      out[r] = cpu::sample_row(probs + static_cast<size_t>(r) * V, V, uniforms[static_cast<size_t>(r)]);
  }
  void sample_gumbel(const float* probs, int rows, int V, std::span<const NoiseKey> keys,
                     int32_t* out) override {
    cpu::sample_gumbel(probs, rows, V, keys, out);
  }
  void verify(std::span<const VerifyBlock> blocks, int V, std::span<VerifyOutcome> out,
              std::span<float> beta) override {
    cpu::verify(blocks, V, out, beta);
  }
  void verify_greedy(std::span<const GreedyBlock> blocks, std::span<VerifyOutcome> out) override {
    cpu::verify_greedy(blocks, out);
  }

 private:
  Dtype weight_dtype_;
};

}  // namespace

std::unique_ptr<Backend> make_cpu_backend(Dtype weight_dtype) {
  return std::make_unique<CpuBackend>(weight_dtype);
}

}  // namespace tandem
