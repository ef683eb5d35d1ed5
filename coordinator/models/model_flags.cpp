#include "coordinator/models/model_flags.h"

#include "common/error.h"
#include "coordinator/config/compute_choice.h"
#include "kernels/cpu/thread_pool.h"

namespace tandem {
namespace {

LoadedModel load(const std::string& path, bool dummy, const ModelFlags& flags,
                 Backend& backend, const TensorShard& shard = {}) {
  ModelSpec spec;
  spec.shard = shard;
  spec.path = path;
  spec.dummy = dummy;
  spec.dummy_seed = static_cast<uint64_t>(flags.seed_weights);
  spec.block_size = flags.block_size;
  spec.kv_blocks = flags.kv_blocks;
  require(spec.block_size > 0, ErrorKind::invalid_argument, "--block-size must be positive");
  require(spec.kv_blocks >= 0, ErrorKind::invalid_argument, "--kv-blocks must be >= 0 (0: automatic)");
  return load_model(spec, backend);
}

// --backend and --weight-dtype by the deployment's rules (choose_compute).
std::unique_ptr<Backend> open_backend(const ModelFlags& flags) {
  const ComputeResult compute = choose_compute(
      flags.backend,
      flags.weight_dtype.empty() ? std::nullopt : std::optional(flags.weight_dtype));
  if (compute.problem) {
    const bool backend = compute.problem->field == ComputeProblem::Field::backend;
    throw Error(ErrorKind::invalid_argument,
                std::string(backend ? "--backend " : "--weight-dtype ") + compute.problem->message);
  }
  // Auto: the dtype the checkpoints of both models store (dummy ones have none).
  std::vector<std::filesystem::path> checkpoints;
  for (const std::string* dir : {&flags.model, &flags.draft})
    if (!dir->empty()) checkpoints.emplace_back(*dir);
  const WeightDtypeChoice weights =
      choose_weight_dtype(compute.choice.backend, compute.choice.weight_dtype, checkpoints);
  return make_backend(compute.choice.backend, flags.device, weights.dtype);
}

}  // namespace

void add_model_flags(cli::Command& command, ModelFlags& flags) {
  using cli::add_value;
  add_value(command, "--model", flags.model, "a Hugging Face checkpoint directory")
      .type_name("DIR");
  add_value(command, "--dummy", flags.dummy,
            "random weights of the shape in this config.json instead of --model "
            "(configs/shapes/)")
      .type_name("CONFIG_JSON");
  add_value(command, "--draft", flags.draft, "a draft model's checkpoint directory")
      .type_name("DIR");
  add_value(command, "--dummy-draft", flags.dummy_draft,
            "a draft of random weights of this shape instead of --draft")
      .type_name("CONFIG_JSON");
  add_value(command, "--seed-weights", flags.seed_weights, "seed of the dummy weights");
  add_value(command, "--kv-blocks", flags.kv_blocks,
            "KV cache blocks per model; 0: enough for 8 full contexts, at most 4096");
  add_value(command, "--block-size", flags.block_size, "tokens per KV cache block");
  add_value(command, "--backend", flags.backend, "cpu, or cuda (a build with nvcc; docs/gpu.md)")
      .type_name("cpu|cuda");
  add_value(command, "--device", flags.device, "the CUDA device (with --backend cuda)");
  add_value(command, "--weight-dtype", flags.weight_dtype,
            "the weight matrices' dtype; auto (default): as the checkpoints store them when "
            "that is bf16 or fp16, else fp32 on cpu and bf16 on cuda")
      .type_name("auto|bf16|fp16|fp32");
  add_value(command, "--threads", flags.threads,
            "the CPU kernels' threads; 0: one per CPU this process may run on");
  cli::add_switch(command, "--untiled-skinny-matmul", flags.untiled_skinny_matmul,
                  "cuda: matmuls of up to 64 rows on the untiled batch-invariant kernel (the "
                  "same sums as the default tiled one bit for bit, slower), for comparison");
}

OpenModel open_model(const ModelFlags& flags, const TensorShard& shard) {
  const bool has_model = !flags.model.empty(), dummy = !flags.dummy.empty();
  require(has_model != dummy, ErrorKind::invalid_argument,
          "give exactly one of --model DIR (a Hugging Face checkpoint) or --dummy CONFIG_JSON "
          "(random weights of that shape)");
  require(flags.draft.empty() || flags.dummy_draft.empty(), ErrorKind::invalid_argument,
          "give at most one of --draft DIR and --dummy-draft CONFIG_JSON");
  require(flags.threads >= 0 && flags.threads <= 1024, ErrorKind::invalid_argument,
          "--threads must be in [0, 1024], got " + std::to_string(flags.threads));
  cpu::configure_threads(flags.threads, cpu::Pinning::none);
  OpenModel open;
  open.backend = open_backend(flags);
  require(!flags.untiled_skinny_matmul || open.backend->kind() == BackendKind::cuda,
          ErrorKind::invalid_argument, "--untiled-skinny-matmul needs --backend cuda");
  open.backend->set_tiled_skinny_matmul(!flags.untiled_skinny_matmul);
  open.target = load(dummy ? flags.dummy : flags.model, dummy, flags, *open.backend, shard);
  if (!flags.draft.empty() || !flags.dummy_draft.empty()) {
    const bool dummy_draft = !flags.dummy_draft.empty();
    open.draft = load(dummy_draft ? flags.dummy_draft : flags.draft, dummy_draft, flags,
                      *open.backend);
    require_same_vocabulary(open.target.config, open.draft->config);
  }
  return open;
}

}  // namespace tandem
