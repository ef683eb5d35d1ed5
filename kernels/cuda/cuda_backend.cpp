// CudaBackend: the Backend interface on one GPU (see cuda_backend.h). This
// file is the glue: memory, staging of host metadata, cuBLAS, argument
// checks and host results; the kernels are the .cu files next to it.
#include "kernels/cuda/cuda_backend.h"

#include <cublas_v2.h>
#include <cuda_runtime.h>

#include <algorithm>
#include <bit>
#include <string>
#include <type_traits>
#include <vector>

#include "common/error.h"
#include "kernels/cpu/sampling.h"
#include "kernels/cpu/verify.h"
#include "kernels/cuda/attention.h"
#include "kernels/cuda/cuda_check.h"
#include "kernels/cuda/device_info.h"
#include "kernels/cuda/device_staging.h"
#include "kernels/cuda/ops.h"
#include "kernels/cuda/sampling.h"
#include "kernels/cuda/sampling_host.h"
#include "kernels/cuda/step_graphs.h"
#include "kernels/cuda/stream_event.h"

namespace tandem {
namespace {

void free_device(void* data) { cudaFree(data); }

// Weights are converted on the device, this many elements at a time, so an
// 8B model's matrices never need a second full-size copy anywhere.
constexpr size_t kConversionChunk = size_t{1} << 24;

cudaDataType_t cuda_type(Dtype dtype) {
  switch (dtype) {
    case Dtype::f32: return CUDA_R_32F;
    case Dtype::f16: return CUDA_R_16F;
    case Dtype::bf16: return CUDA_R_16BF;
  }
  return CUDA_R_32F;
}

class CudaBackend final : public Backend {
 public:
  CudaBackend(int device, Dtype weight_dtype) : device_(device), weight_dtype_(weight_dtype) {
    const int count = cuda::device_count();
    require(device >= 0 && device < count, ErrorKind::unavailable, [&] {
      return "CUDA device " + std::to_string(device) + " is not available: this process sees " +
             std::to_string(count) + " CUDA device(s)" +
             (count == 0 ? " (no GPU, or no driver)" : "");
    });
    TANDEM_CUDA_CHECK(cudaSetDevice(device_));
    TANDEM_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    TANDEM_CUDA_CHECK(cublasCreate(&cublas_));
    TANDEM_CUDA_CHECK(cublasSetStream(cublas_, stream_));
    // Plain f32 GEMMs stay f32 (no TF32): they are the reference-precision path.
    TANDEM_CUDA_CHECK(cublasSetMathMode(cublas_, CUBLAS_DEFAULT_MATH));
  }
  ~CudaBackend() override {
    cudaSetDevice(device_);
    cudaStreamSynchronize(stream_);
    cublasDestroy(cublas_);
    cudaStreamDestroy(stream_);
  }

  BackendKind kind() const override { return BackendKind::cuda; }
  std::string description() const override { return cuda::device_description(device_); }
  double peak_memory_bandwidth() const override { return cuda::peak_memory_bandwidth(device_); }
  Dtype weight_dtype() const override { return weight_dtype_; }

  // ---- memory ---------------------------------------------------------------
  Buffer allocate(size_t count) override { return allocate_typed(count, Dtype::f32); }

  void upload(std::span<const float> host, float* device) override {
    use_device();
    run_recorded_ops();
    if (host.empty()) return;
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(device, host.data(), host.size_bytes(),
                                      cudaMemcpyHostToDevice, stream_));
    synchronize();  // the host span may be gone when we return
  }
  void download_finished(const float* device, std::span<float> host) override {
    if (host.empty()) return;
    // Not on stream_ (the drafting thread may be recording on it): a plain
    // copy, which waits for itself. Nothing is pending on `device`.
    TANDEM_CUDA_CHECK(cudaSetDevice(device_));
    TANDEM_CUDA_CHECK(cudaMemcpy(host.data(), device, host.size_bytes(), cudaMemcpyDeviceToHost));
  }
  void download(const float* device, std::span<float> host) override {
    use_device();
    run_recorded_ops();
    if (host.empty()) return;
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(host.data(), device, host.size_bytes(),
                                      cudaMemcpyDeviceToHost, stream_));
    synchronize();
  }

  std::unique_ptr<Event> record_event() override {
    use_device();
    run_recorded_ops();  // an event marks ops queued, not ops recorded
    return std::make_unique<cuda::StreamEvent>(stream_);
  }

  void copy_from(Backend& source, const float* from, size_t n, float* to) override {
    if (source.kind() != BackendKind::cuda) return Backend::copy_from(source, from, n, to);
    use_device();
    run_recorded_ops();
    if (n == 0) return;
    // Unified addressing: the driver knows each pointer's GPU, and copies
    // peer to peer where the two can reach each other (else via the host).
    TANDEM_CUDA_CHECK(
        cudaMemcpyAsync(to, from, n * sizeof(float), cudaMemcpyDefault, stream_));
  }

  Buffer upload_weights(std::span<const float> host) override {
    Buffer weights = allocate_typed(host.size(), weight_dtype_);
    if (weight_dtype_ == Dtype::f32) {
      upload(host, weights.data());
      return weights;
    }
    run_recorded_ops();
    for (size_t at = 0; at < host.size(); at += kConversionChunk) {
      const size_t n = std::min(kConversionChunk, host.size() - at);
      auto* staged = static_cast<float*>(conversion_.get(n * sizeof(float), stream_));
      TANDEM_CUDA_CHECK(cudaMemcpyAsync(staged, host.data() + at, n * sizeof(float),
                                        cudaMemcpyHostToDevice, stream_));
      cuda::to_narrow(staged, n, weight_dtype_,
                      static_cast<char*>(weights.raw()) + at * dtype_size(weight_dtype_),
                      stream_);
    }
    synchronize();
    return weights;
  }

  // ---- model ops --------------------------------------------------------------
  void embedding(std::span<const int32_t> token_ids, WeightView table, int C,
                 float* out) override {
    use_device();
    const int32_t* ids = stage(token_ids);
    launch(&cuda::embedding, ids, static_cast<int>(token_ids.size()), table, C, out);
  }
  void rmsnorm(const float* x, const float* weight, int T, int C, float eps, float* out) override {
    use_device();
    launch(&cuda::rmsnorm, x, weight, T, C, eps, out);
  }
  void matmul(const float* x, WeightView w, const float* bias, int T, int Kin, int N,
              float* y) override {
    use_device();
    if (T <= cuda::kMaxInvariantRows || batch_invariant_) {
      if (tiled_skinny_ && cuda::skinny_matmul_tiled_fits(x, w, Kin) &&
          cuda::skinny_matmul_tiled_pays(T, N)) {
        launch(&cuda::skinny_matmul_tiled, x, w, T, Kin, N, y);
      } else {
        launch(&cuda::skinny_matmul, x, w, T, Kin, N, y);
      }
    } else {
      run_recorded_ops();  // cuBLAS and its scratch are not recorded
      cublas_matmul(x, w, T, Kin, N, y);
    }
    if (bias) launch(&cuda::add_bias, y, bias, T, N);
  }
  void rope(float* x, std::span<const int32_t> positions, int heads, int D,
            const float* inv_freq) override {
    use_device();
    const int32_t* staged = stage(positions);
    launch(&cuda::rope, x, staged, static_cast<int>(positions.size()), heads, D, inv_freq);
  }
  void kv_write(const float* k, const float* v, std::span<const int32_t> slots,
                const PagedKvView& cache) override {
    use_device();
    const int32_t* staged = stage(slots);
    launch(&cuda::kv_write, k, v, staged, static_cast<int>(slots.size()),
           cache.kv_heads * cache.head_dim, cache.k, cache.v);
  }
  void attention(const float* q, std::span<const SequenceSlice> slices, int H,
                 const PagedKvView& cache, float scale, float* out) override {
    use_device();
    // Every layer passes the same slices: the host arrays are rebuilt into
    // reused vectors, and staging returns the device copy it already made.
    SliceArrays& a = slice_arrays_;
    a.clear();
    for (size_t b = 0; b < slices.size(); ++b) {
      const SequenceSlice& s = slices[b];
      a.token_slice.insert(a.token_slice.end(), static_cast<size_t>(s.token_count),
                           static_cast<int32_t>(b));
      a.offset.push_back(s.token_offset);
      a.count.push_back(s.token_count);
      a.context.push_back(s.context_length);
      a.table_start.push_back(static_cast<int32_t>(a.tables.size()));
      a.tables.insert(a.tables.end(), s.block_table.begin(), s.block_table.end());
    }
    // Padded to a power of two: the tables grow by a block now and then,
    // and a step graph is keyed by the sizes it copies (the kernel reads
    // only each slice's own entries).
    a.tables.resize(std::bit_ceil(std::max<size_t>(a.tables.size(), 16)), 0);
    cuda::AttentionBatch batch;
    batch.token_slice = stage<int32_t>(a.token_slice);
    batch.token_offset = stage<int32_t>(a.offset);
    batch.token_count = stage<int32_t>(a.count);
    batch.context_length = stage<int32_t>(a.context);
    batch.block_table_start = stage<int32_t>(a.table_start);
    batch.block_tables = stage<int32_t>(a.tables);
    batch.sequences = static_cast<int>(slices.size());
    batch.tokens = static_cast<int>(a.token_slice.size());
    launch(&cuda::attention, q, batch, H, cache.kv_heads, cache.head_dim,
           static_cast<const float*>(cache.k), static_cast<const float*>(cache.v),
           cache.block_size, scale, out);
  }
  void swiglu(const float* gate_up, int T, int I, float* out) override {
    use_device();
    launch(&cuda::swiglu, gate_up, T, I, out);
  }
  void moe_combine(const float* expert_rows, const MoePlan& plan, int C, float* out) override {
    use_device();
    launch(&cuda::moe_combine, expert_rows, stage(plan.row_of_choice), stage(plan.weights),
           plan.tokens, plan.top_k, C, out);
  }
  void add(float* x, const float* y, size_t n) override {
    use_device();
    launch(&cuda::add, x, y, n);
  }
  void add_rmsnorm(float* x, const float* y, const float* weight, int T, int C, float eps,
                   float* out) override {
    use_device();
    launch(&cuda::add_rmsnorm, x, y, weight, T, C, eps, out);
  }

  // ---- sampling -----------------------------------------------------------------
  void standardize(const float* logits, int rows, int V, std::span<const SamplingParams> params,
                   float* probs) override {
    use_device();
    run_recorded_ops();
    // The CPU twin's checks and messages, before anything is queued.
    require(V > 0, ErrorKind::invalid_argument, "standardize: V must be > 0");
    require(params.size() == static_cast<size_t>(rows) || params.size() == 1,
            ErrorKind::invalid_argument, [&] {
              return "standardize: " + std::to_string(params.size()) + " sampling params for " +
                     std::to_string(rows) + " rows (need one per row, or one for all)";
            });
    for (const SamplingParams& p : params) cpu::check_sampling_params(p);
    if (rows == 0) return;
    std::vector<SamplingParams> per_row(params.begin(), params.end());
    if (per_row.size() == 1) per_row.resize(static_cast<size_t>(rows), params[0]);
    const size_t bytes = cuda::standardize_workspace_bytes(rows, V);
    void* workspace = bytes ? standardize_workspace_.get(bytes, stream_) : nullptr;
    cuda::standardize(logits, rows, V, stage<SamplingParams>(per_row), probs, workspace, bytes,
                      stream_);
  }
  void find_nonfinite_rows(const float* x, int rows, int V, uint8_t* out) override {
    use_device();
    run_recorded_ops();
    require(V > 0, ErrorKind::invalid_argument, "find_nonfinite_rows: V must be > 0");
    if (rows <= 0) return;
    auto* flags = static_cast<uint8_t*>(ids_.get(static_cast<size_t>(rows), stream_));
    cuda::find_nonfinite_rows(x, rows, V, flags, stream_);
    copy_to_host(flags, out, static_cast<size_t>(rows));
  }
  void argmax(const float* logits, int rows, int V, int32_t* out) override {
    use_device();
    run_recorded_ops();
    if (rows == 0) return;
    auto* ids = static_cast<int32_t*>(ids_.get(sizeof(int32_t) * rows, stream_));
    cuda::argmax(logits, rows, V, ids, stream_);
    copy_to_host(ids, out, sizeof(int32_t) * rows);
  }
  void sample(const float* probs, int rows, int V, std::span<const double> uniforms,
              int32_t* out) override {
    use_device();
    run_recorded_ops();
    require(uniforms.size() == static_cast<size_t>(rows), ErrorKind::invalid_argument, [&] {
      return "sample: " + std::to_string(uniforms.size()) + " uniforms for " +
             std::to_string(rows) + " rows";
    });
    for (double u : uniforms)
      require(u >= 0.0 && u < 1.0, ErrorKind::invalid_argument, "sample: u must be in [0, 1)");
    if (rows == 0) return;
    auto* ids = static_cast<int32_t*>(ids_.get(sizeof(int32_t) * rows, stream_));
    cuda::sample(probs, rows, V, stage(uniforms), ids, stream_);
    copy_to_host(ids, out, sizeof(int32_t) * rows);
    for (int r = 0; r < rows; ++r)
      require(out[r] >= 0, ErrorKind::invalid_argument, [&] {
        return "sample: probability row " + std::to_string(r) + " has no positive finite mass";
      });
  }

  void sample_gumbel(const float* probs, int rows, int V, std::span<const NoiseKey> keys,
                     int32_t* out) override {
    use_device();
    run_recorded_ops();
    cuda::check_sample_gumbel(rows, V, keys);
    if (rows == 0) return;
    auto* ids = static_cast<int32_t*>(ids_.get(sizeof(int32_t) * rows, stream_));
    cuda::sample_gumbel(probs, rows, V, stage(keys), ids, stream_);
    std::vector<int32_t> drawn(static_cast<size_t>(rows));  // out untouched on an error
    copy_to_host(ids, drawn.data(), sizeof(int32_t) * rows);
    cuda::raise_gumbel_failures(drawn);
    std::copy(drawn.begin(), drawn.end(), out);
  }

  void verify(std::span<const VerifyBlock> blocks, int V, std::span<VerifyOutcome> out,
              std::span<float> beta) override {
    use_device();
    run_recorded_ops();
    const size_t drafts = cuda::check_verify(blocks, V, out.size(), beta.size());
    if (blocks.empty()) return;

    // The drafted ids of every block, then the blocks pointing into them.
    std::vector<int32_t> drafted;
    drafted.reserve(drafts);
    for (const VerifyBlock& block : blocks)
      drafted.insert(drafted.end(), block.drafted, block.drafted + block.gamma);
    const std::vector<cuda::DeviceVerifyBlock> device_blocks =
        cuda::device_verify_blocks(blocks, stage<int32_t>(drafted));
    const size_t out_bytes = sizeof(VerifyOutcome) * blocks.size();
    const size_t beta_bytes = sizeof(float) * drafts;
    char* results = static_cast<char*>(verify_results_.get(out_bytes + beta_bytes + 256, stream_));
    auto* outcomes = reinterpret_cast<VerifyOutcome*>(results);
    float* betas = beta.empty() ? nullptr : reinterpret_cast<float*>(results + (out_bytes + 255) / 256 * 256);
    cuda::verify(stage<cuda::DeviceVerifyBlock>(device_blocks), static_cast<int>(blocks.size()),
                 V, outcomes, betas, stream_);

    // Results land in host staging first: a contract violation must leave
    // out and beta untouched, as the CPU twin does.
    std::vector<VerifyOutcome> host_out(blocks.size());
    std::vector<float> host_beta(beta.size());
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(host_out.data(), outcomes, out_bytes,
                                      cudaMemcpyDeviceToHost, stream_));
    if (betas)
      TANDEM_CUDA_CHECK(cudaMemcpyAsync(host_beta.data(), betas, beta_bytes,
                                        cudaMemcpyDeviceToHost, stream_));
    synchronize();
    cuda::raise_verify_failures(host_out);
    std::copy(host_out.begin(), host_out.end(), out.begin());
    std::copy(host_beta.begin(), host_beta.end(), beta.begin());
  }
  void synchronize() override {
    use_device();
    graphs_.finish(stream_);
    TANDEM_CUDA_CHECK(cudaStreamSynchronize(stream_));
    staging_.reset();
  }

  void begin_step_graph() override {
    use_device();
    // Staging starts at the ring's start, so that equal steps stage to
    // equal addresses (part of the key).
    TANDEM_CUDA_CHECK(cudaStreamSynchronize(stream_));
    staging_.reset();
    graphs_.begin();
  }
  void set_step_graphs(bool on) override { graphs_.set_enabled(on); }
  void set_batch_invariant(bool on) override { batch_invariant_ = on; }
  void set_tiled_skinny_matmul(bool on) override { tiled_skinny_ = on; }
  StepGraphStats step_graph_stats() const override { return graphs_.stats(); }

  void verify_greedy(std::span<const GreedyBlock> blocks, std::span<VerifyOutcome> out) override {
    // Only host ids are involved (argmax brought them over): the CPU twin is
    // the definition and costs microseconds.
    cpu::verify_greedy(blocks, out);
  }

 private:
  // The engine thread may drive backends on two devices (draft and target):
  // each op makes its own device current.
  void use_device() {
    int current = -1;
    TANDEM_CUDA_CHECK(cudaGetDevice(&current));
    if (current != device_) TANDEM_CUDA_CHECK(cudaSetDevice(device_));
  }
  // ---- step graphs (see step_graphs.h) --------------------------------------
  // One launch of a .cu launcher, whose last parameter is the stream: run
  // now, or recorded with every argument in the step's key. Deriving the
  // key and the call from one argument list leaves no argument out of it.
  template <typename... Params, typename... Args>
  void launch(void (*launcher)(Params...), Args... args) {
    if (!graphs_.recording()) {
      launcher(args..., stream_);
      return;
    }
    graphs_.key(&launcher, sizeof launcher);
    (key_of(args), ...);
    graphs_.add([=, this] { launcher(args..., stream_); });
  }
  template <typename T>
    requires std::is_scalar_v<T>
  void key_of(T value) {
    graphs_.key(&value, sizeof value);
  }
  void key_of(WeightView w) {
    key_of(w.data);
    key_of(w.dtype);
  }
  void key_of(const cuda::AttentionBatch& b) {
    for (const int32_t* array : {b.token_slice, b.token_offset, b.token_count, b.context_length,
                                 b.block_table_start, b.block_tables})
      key_of(array);
    key_of(b.sequences);
    key_of(b.tokens);
  }
  // What was recorded runs now, op by op: the op about to run cannot be
  // recorded (it reads or writes host memory, or uses cuBLAS or scratch).
  void run_recorded_ops() { graphs_.run_eagerly(); }

  // Host metadata to the device; while recording, its copy is recorded too.
  template <typename T>
  const T* stage(std::span<const T> host) {
    if (!graphs_.recording()) return staging_.stage(host, stream_);
    cuda::MetadataStaging::Copy copy;
    const T* staged = staging_.stage_deferred(host, &copy);
    if (copy.bytes > 0) record_copy(copy);
    return staged;
  }
  template <typename T>
  const T* stage(const std::vector<T>& host) {
    return stage(std::span<const T>(host));
  }
  void record_copy(const cuda::MetadataStaging::Copy& copy) {
    static constexpr char kCopyTag = 'c';
    graphs_.key(&kCopyTag, 1);
    key_of(copy.device);
    key_of(copy.host);
    key_of(copy.bytes);
    graphs_.add([copy, this] { cuda::MetadataStaging::queue(copy, stream_); });
  }
  void copy_to_host(const void* device, void* host, size_t bytes) {
    TANDEM_CUDA_CHECK(cudaMemcpyAsync(host, device, bytes, cudaMemcpyDeviceToHost, stream_));
    synchronize();
  }

  Buffer allocate_typed(size_t count, Dtype dtype) {
    use_device();
    run_recorded_ops();
    if (count == 0) return Buffer();
    void* data = nullptr;
    const size_t bytes = count * dtype_size(dtype);
    const cudaError_t status = cudaMalloc(&data, bytes);
    if (status != cudaSuccess) {
      cudaGetLastError();  // clear it: the device is still usable
      throw Error(ErrorKind::out_of_resources,
                  "cannot allocate " + std::to_string(bytes) + " bytes on CUDA device " +
                      std::to_string(device_) + ": " + cudaGetErrorString(status));
    }
    Buffer buffer(data, count, dtype, free_device);
    TANDEM_CUDA_CHECK(cudaMemsetAsync(data, 0, bytes, stream_));
    return buffer;
  }

  // y (T, N) = x (T, K) · wᵀ through cuBLAS: column-major, y is (N, T) =
  // w (K, N)ᵀ · x (K, T). Narrow weights take a narrow copy of x (cuBLAS
  // wants one input type) and accumulate in f32.
  void cublas_matmul(const float* x, WeightView w, int T, int K, int N, float* y) {
    const float one = 1.0f, zero = 0.0f;
    const void* input = x;
    if (w.dtype != Dtype::f32) {
      const size_t n = static_cast<size_t>(T) * K;
      void* narrow = narrow_input_.get(n * dtype_size(w.dtype), stream_);
      cuda::to_narrow(x, n, w.dtype, narrow, stream_);
      input = narrow;
    }
    TANDEM_CUDA_CHECK(cublasGemmEx(cublas_, CUBLAS_OP_T, CUBLAS_OP_N, N, T, K, &one, w.data,
                                   cuda_type(w.dtype), K, input, cuda_type(w.dtype), K, &zero, y,
                                   CUDA_R_32F, N, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
  }

  // The attention op's slices as device-ready arrays (AttentionBatch).
  struct SliceArrays {
    std::vector<int32_t> token_slice, offset, count, context, table_start, tables;
    void clear() {
      for (auto* v : {&token_slice, &offset, &count, &context, &table_start, &tables}) v->clear();
    }
  };

  int device_;
  Dtype weight_dtype_;
  bool batch_invariant_ = false;  // skinny_matmul at every row count, not cuBLAS above 64
  bool tiled_skinny_ = true;   // skinny_matmul_tiled where it fits and pays, else skinny_matmul
  SliceArrays slice_arrays_;
  cudaStream_t stream_ = nullptr;
  cublasHandle_t cublas_ = nullptr;
  cuda::MetadataStaging staging_;
  cuda::StepGraphs graphs_;
  cuda::DeviceScratch conversion_, narrow_input_, standardize_workspace_, ids_, verify_results_;
};

}  // namespace

std::unique_ptr<Backend> make_cuda_backend(int device, Dtype weight_dtype) {
  return std::make_unique<CudaBackend>(device, weight_dtype);
}

}  // namespace tandem
