// The Backend interface: every op the model runs, behind one virtual table.
//
// Implementations: kernels/cpu (OpenBLAS + C++, the reference) and
// kernels/cuda (CUDA kernels + cuBLAS, each op tested against its CPU twin).
// Pointers passed to an op live in the backend's own memory (host memory for
// the CPU backend, device memory for CUDA) unless the op says "host";
// metadata such as token ids, positions, slot maps, block tables and
// sampling parameters is always host memory, and so are the small results
// (token ids, verification outcomes) that the engine reads.
//
// Ops run in call order. A backend may queue them (CUDA runs them on its
// stream); every op that writes host memory (download, argmax, sample,
// verify) returns only once its results are there.
//
// Dimension glossary used in every shape comment below:
//   T  new tokens in the ragged batch (all sequences together)
//   B  sequences in the batch
//   C  hidden size          I  MLP intermediate size
//   H  query heads          K  key/value heads (H % K == 0, GQA)
//   D  head dimension       V  vocabulary size
// Matrices are row-major. Weights follow Hugging Face's [out, in] layout.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>

#include "kernels/dtype.h"
#include "kernels/moe_plan.h"
#include "kernels/philox.h"
#include "kernels/sampling_params.h"
#include "kernels/verify_types.h"

namespace tandem {

enum class BackendKind { cpu, cuda };

const char* backend_name(BackendKind kind);

// One layer's paged key/value storage as the attention op sees it.
// k, v: (num_blocks, block_size, K, D). A token's "slot" is
// block_index * block_size + offset_in_block.
struct PagedKvView {
  float* k = nullptr;
  float* v = nullptr;
  int num_blocks = 0;
  int block_size = 0;
  int kv_heads = 0;
  int head_dim = 0;
};

// One sequence's share of a ragged batch.
struct SequenceSlice {
  int token_offset = 0;    // first row of this sequence in the (T, ...) buffers
  int token_count = 0;     // its new tokens (1 for decode, γ+1 for verify, n for prefill)
  int context_length = 0;  // cached tokens *including* the new ones
  std::span<const int32_t> block_table;  // physical block of each logical block
};

// One output of a matmul over a stacked weight matrix: its next `rows`
// rows, into y (T, rows). Backend::matmul_parts.
struct MatmulOutput {
  int rows = 0;
  float* y = nullptr;
};

// Backend-owned memory: move-only, freed by the backend that made it. Holds
// f32 (activations, caches, norms) or, for weights, the backend's weight
// dtype; data() is meaningful only for f32 buffers, view() for any.
class Buffer {
 public:
  using Deleter = void (*)(void*);
  Buffer() = default;
  Buffer(void* data, size_t size, Dtype dtype, Deleter deleter)
      : data_(data), size_(size), dtype_(dtype), deleter_(deleter) {}
  Buffer(Buffer&& other) noexcept { *this = std::move(other); }
  Buffer& operator=(Buffer&& other) noexcept;
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;
  ~Buffer() { reset(); }

  float* data() { return static_cast<float*>(data_); }
  const float* data() const { return static_cast<const float*>(data_); }
  WeightView view() const { return {data_, dtype_}; }
  void* raw() { return data_; }  // any dtype
  size_t size() const { return size_; }  // elements
  Dtype dtype() const { return dtype_; }
  bool empty() const { return size_ == 0; }
  void reset();

 private:
  void* data_ = nullptr;
  size_t size_ = 0;
  Dtype dtype_ = Dtype::f32;
  Deleter deleter_ = nullptr;
};

class Backend {
 public:
  virtual ~Backend() = default;
  virtual BackendKind kind() const = 0;
  // What runs the ops, for logs and benchmark headers: "cpu", or the GPU's
  // name, compute capability and memory.
  virtual std::string description() const { return backend_name(kind()); }
  // Peak memory bandwidth in bytes/s, the roofline of a weight-bound decode
  // step; 0 when unknown (the CPU backend).
  virtual double peak_memory_bandwidth() const { return 0; }

  // ---- memory -------------------------------------------------------------
  virtual Buffer allocate(size_t count) = 0;  // zero-filled floats
  virtual void upload(std::span<const float> host, float* device) = 0;
  virtual void download(const float* device, std::span<float> host) = 0;
  // download() of memory whose writes have all finished (a drafter's rows
  // after propose() returned), safe while another thread runs this
  // backend's ops: it touches none of the backend's queued state.
  virtual void download_finished(const float* device, std::span<float> host) {
    download(device, host);
  }
  // Returns once every op queued so far has finished (a no-op where ops run
  // synchronously): what timing a step must wait for.
  virtual void synchronize() {}
  // Whether the ops read host memory as it is (the CPU backend), so host
  // data an op needs can be passed without an upload.
  virtual bool reads_host_memory() const { return false; }
  // A point in this backend's queue of ops, for work the backend does not
  // order (NCCL's stream, the host) that touches memory its ops use: a fresh
  // buffer's zero fill, or the last reads of a reused one, may still be
  // queued. wait() returns once every op called before record_event() has
  // finished; it does not stop other ops from being queued meanwhile. The
  // default: ops run as they are called, so all have finished already.
  class Event {
   public:
    virtual ~Event() = default;
    virtual void wait() {}
  };
  virtual std::unique_ptr<Event> record_event() { return std::make_unique<Event>(); }
  // to (n) = from (n), where `from` is memory of `source`: another backend
  // of this process (the draft's GPU) or this one. Queued like an op; what
  // `source` queued to write `from` must have finished. The default goes
  // through the host (a download and an upload); the CUDA backend copies
  // device to device (over NVLink or PCIe between two GPUs).
  virtual void copy_from(Backend& source, const float* from, size_t n, float* to);
  // The dtype weight matrices are stored in, and a buffer holding host's
  // values converted to it (round to nearest even): f32, bf16 or f16, as the
  // backend was made (make_cpu_backend: f32 by default; make_cuda_backend:
  // bf16 by default).
  virtual Dtype weight_dtype() const { return Dtype::f32; }
  virtual Buffer upload_weights(std::span<const float> host);

  // ---- step graphs ----------------------------------------------------------
  // The ops from begin_step_graph() to the next synchronize() form one step
  // that a backend may record and, when a later step makes exactly the same
  // calls (the same ops, sizes and buffers; metadata contents may differ),
  // replay as a whole: on CUDA one graph launch instead of hundreds of
  // kernel launches. Results are identical either way, and host metadata is
  // still taken when an op is called. Ops that read or write host memory end
  // the recording (what was recorded then runs op by op, and so does the
  // rest). A no-op where ops run as they are called.
  virtual void begin_step_graph() {}
  // Whether begin_step_graph() records (set_step_graphs(false): never).
  virtual void set_step_graphs(bool) {}
  // Whether every matmul sums in an order fixed by its inner size alone,
  // whatever the number of rows (true: a token's logits do not depend on
  // the batch around it, at any batch size). The CPU backend always does.
  // The CUDA backend does up to 64 rows (decode and verification) and by
  // default hands larger ones (prefill chunks, big batches) to cuBLAS,
  // whose summation order depends on the shape; set_batch_invariant(true)
  // keeps them on its own kernel, several times slower there.
  virtual void set_batch_invariant(bool) {}
  // CUDA: whether those matmuls of up to 64 rows run on the tiled variant of
  // the batch-invariant kernel (kernels/cuda/skinny_matmul_tiled.cu: the
  // same sums bit for bit, more weight bytes in flight) where it pays: on
  // by default (8B decode 1.98x on an H200). A no-op elsewhere.
  virtual void set_tiled_skinny_matmul(bool) {}
  struct StepGraphStats {
    int64_t captured = 0;  // steps recorded into a new graph
    int64_t replayed = 0;  // steps that launched a graph recorded before
    int64_t eager = 0;     // recorded steps run op by op (first sight, or not graphable)
  };
  virtual StepGraphStats step_graph_stats() const { return {}; }

  // ---- model ops ----------------------------------------------------------
  // out (T, C) = table[token_ids[t]]; table (V, C) in any dtype the backend
  // stores weights in, or f32 (the op doubles as a row gather). A negative id
  // gives a row of zeros: a vocabulary-parallel rank maps tokens it does not
  // own to -1, and the all-reduce of every rank's rows then yields the full
  // lookup.
  virtual void embedding(std::span<const int32_t> token_ids, WeightView table, int C,
                         float* out) = 0;

  // out (T, C) = x / sqrt(mean(x^2) + eps) * weight; may alias x.
  virtual void rmsnorm(const float* x, const float* weight, int T, int C, float eps,
                       float* out) = 0;

  // y (T, N) = x (T, Kin) · wᵀ + bias; w (N, Kin) in f32 or the weight
  // dtype; bias (N) f32 or nullptr. Accumulation is f32 at least.
  virtual void matmul(const float* x, WeightView w, const float* bias, int T, int Kin, int N,
                      float* y) = 0;
  // The same over consecutive row ranges of one w (and of bias), each into
  // its own output: the fused qkv projection's q, k and v. Each element is
  // what matmul gives for its range alone; a backend may run the ranges as
  // one op (the CPU: one parallel section instead of three). By default,
  // one matmul per range.
  virtual void matmul_parts(const float* x, WeightView w, const float* bias, int T, int Kin,
                            std::span<const MatmulOutput> outputs);

  // Rotary embedding, Hugging Face "rotate half" convention, in place.
  // x (T, heads, D), row t at absolute position positions[t]; inv_freq (D/2).
  virtual void rope(float* x, std::span<const int32_t> positions, int heads, int D,
                    const float* inv_freq) = 0;

  // Writes this step's keys and values into the paged cache.
  // k, v (T, K*D); slots (T): destination slot of each row.
  virtual void kv_write(const float* k, const float* v, std::span<const int32_t> slots,
                        const PagedKvView& cache) = 0;

  // Causal attention of each sequence's new tokens over its cached context.
  // q (T, H*D); out (T, H*D). New token j of a slice sits at absolute position
  // context_length - token_count + j and sees positions 0..itself.
  virtual void attention(const float* q, std::span<const SequenceSlice> slices, int H,
                         const PagedKvView& cache, float scale, float* out) = 0;

  // out (T, I) = silu(gate) * up, where gate_up (T, 2I) = [gate | up].
  virtual void swiglu(const float* gate_up, int T, int I, float* out) = 0;

  // x (n) += y (n): the residual connection.
  virtual void add(float* x, const float* y, size_t n) = 0;

  // x (T, C) += y (T, C), then out (T, C) = rmsnorm(x) with weight (C): a
  // residual connection and the norm after it in one pass over x. Equal, bit
  // for bit, to add() then rmsnorm(). out may alias y (not x).
  virtual void add_rmsnorm(float* x, const float* y, const float* weight, int T, int C, float eps,
                           float* out) = 0;

  // ---- sparse mixture of experts (kernels/moe.h) --------------------------
  // E experts per layer. The layer is moe_route, then moe_experts() (a free
  // function over the ops above: gather, per-expert matmuls, SwiGLU) and
  // moe_combine; kernels/README.md says how a model uses them.
  //
  // Routes each token of router_logits (T, E) to its top_k experts: softmax
  // over E in f32, the top_k probabilities (ties: lower expert index first),
  // renormalised to sum 1 when norm_topk_prob (Mixtral always; Qwen3-MoE as
  // its config says). plan (host) gets the choices and their grouping per
  // expert. The default downloads the logits and routes on the host
  // (cpu::moe_route): the expert matmuls need the per-expert counts on the
  // host to size them anyway, and T x E floats are small.
  virtual void moe_route(const float* router_logits, int T, int E, int top_k,
                         bool norm_topk_prob, MoePlan& plan);
  // out (T, C) = sum over k of plan.weights[t, k] * expert_rows (rows, C) at
  // grouped row plan.row_of_choice[t, k], summed in k order whatever the
  // batch (a token's result does not depend on the tokens around it).
  virtual void moe_combine(const float* expert_rows, const MoePlan& plan, int C, float* out) = 0;

  // ---- sampling -----------------------------------------------------------
  // Standardizes logits (rows, V) into probability rows (paper §2.2):
  // temperature, then top-k, then top-p, each row with its own parameters.
  // Greedy rows (temperature 0) become one-hot rows at their argmax.
  virtual void standardize(const float* logits, int rows, int V,
                           std::span<const SamplingParams> params, float* probs) = 0;

  // argmax of each row of logits (rows, V); ties go to the lowest index.
  // out (rows): host memory.
  virtual void argmax(const float* logits, int rows, int V, int32_t* out) = 0;

  // out (rows, host) = 1 where the row of x (rows, V) holds a NaN or an
  // infinity, else 0: a session whose logits are not finite ends alone,
  // before its rows are sampled or verified (workers/speculation/).
  virtual void find_nonfinite_rows(const float* x, int rows, int V, uint8_t* out) = 0;

  // One token per probability row (rows, V) by inverse CDF with uniforms
  // (rows, host) in [0, 1): cpu::sample_row's definition. out (rows): host.
  virtual void sample(const float* probs, int rows, int V, std::span<const double> uniforms,
                      int32_t* out) = 0;

  // One token per probability row (rows, V) by the Gumbel-max race with the
  // noise of keys[r] (rows, host): cpu::gumbel_row's definition (the Gumbel
  // contract in kernels/philox.h). out (rows): host. By default the rows are
  // downloaded and drawn on the host (kernels/backend.cpp); the CPU and CUDA
  // backends draw in place (kernels/cuda/gumbel.cu).
  virtual void sample_gumbel(const float* probs, int rows, int V, std::span<const NoiseKey> keys,
                             int32_t* out);

  // ---- speculative verification (Algorithm 1; see kernels/cpu/verify.h) ---
  // out[b] = (accepted n, new token t) of blocks[b]; beta: empty or Σγ
  // entries, β_j = Σ_x min(p_j(x)/l, q_j(x)) per drafted position (a gumbel
  // block's: 1 if x_j is the target's own draw, else 0). The p and
  // q rows are backend memory, drafted ids host memory; out and beta host.
  virtual void verify(std::span<const VerifyBlock> blocks, int V, std::span<VerifyOutcome> out,
                      std::span<float> beta) = 0;
  // Temperature 0: accept while the target's argmax equals the draft (all
  // host memory: argmax already brought the ids over).
  virtual void verify_greedy(std::span<const GreedyBlock> blocks,
                             std::span<VerifyOutcome> out) = 0;
};

// A CPU backend storing weight matrices in weight_dtype (f32, bf16 or f16).
std::unique_ptr<Backend> make_cpu_backend(Dtype weight_dtype = Dtype::f32);
// CUDA devices this process can use; 0 without a driver, without a device, or
// in a build without the CUDA backend.
int cuda_device_count();
// Whether this build has the CUDA backend (nvcc was found when it was built).
bool cuda_backend_built();
// The backend a deployment asks for: cpu, or cuda on GPU `device`, with
// weights in weight_dtype. Error(invalid_argument) when this
// build has no CUDA backend, Error(unavailable) when the GPU cannot be used.
std::unique_ptr<Backend> make_backend(BackendKind kind, int device = 0,
                                      Dtype weight_dtype = Dtype::bf16);

}  // namespace tandem
