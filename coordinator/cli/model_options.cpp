#include "coordinator/cli/model_options.h"

#include "common/error.h"

namespace tandem::cli {
namespace {

LoadedModel load(const std::filesystem::path& path, bool dummy, const Args& args,
                 Backend& backend, const TensorShard& shard = {}) {
  ModelSpec spec;
  spec.shard = shard;
  spec.path = path;
  spec.dummy = dummy;
  spec.dummy_seed = static_cast<uint64_t>(args.get_int("seed-weights", 1));
  spec.block_size = static_cast<int>(args.get_int("block-size", 16));
  spec.kv_blocks = static_cast<int>(args.get_int("kv-blocks", 0));
  require(spec.block_size > 0, ErrorKind::invalid_argument, "--block-size must be positive");
  require(spec.kv_blocks >= 0, ErrorKind::invalid_argument, "--kv-blocks must be >= 0 (0: automatic)");
  return load_model(spec, backend);
}

// --backend cpu|cuda (default cpu) --device N (default 0) --weight-dtype
// bf16|fp16|fp32 (default bf16 on cuda; the cpu backend has fp32 only).
std::unique_ptr<Backend> open_backend(const Args& args) {
  const std::string kind = args.get("backend", "cpu");
  require(kind == "cpu" || kind == "cuda", ErrorKind::invalid_argument,
          "--backend must be cpu or cuda, got " + kind);
  const bool gpu = kind == "cuda";
  const std::string dtype_name = args.get("weight-dtype", gpu ? "bf16" : "fp32");
  const std::optional<Dtype> dtype = parse_weight_dtype(dtype_name);
  require(dtype.has_value(), ErrorKind::invalid_argument,
          "--weight-dtype must be bf16, fp16 or fp32, got " + dtype_name);
  require(gpu || *dtype == Dtype::f32, ErrorKind::invalid_argument,
          "--weight-dtype " + dtype_name + " needs --backend cuda (the cpu backend has fp32 only)");
  const int device = static_cast<int>(args.get_int("device", 0));
  return make_backend(gpu ? BackendKind::cuda : BackendKind::cpu, device, *dtype);
}

}  // namespace

std::set<std::string> model_option_names() {
  return {"model",     "dummy",      "draft",      "dummy-draft", "seed-weights",
          "kv-blocks", "block-size", "backend",    "device",      "weight-dtype"};
}

OpenModel open_model(const Args& args, const TensorShard& shard) {
  require(args.has("model") != args.has("dummy"), ErrorKind::invalid_argument,
          "give exactly one of --model DIR (a Hugging Face checkpoint) or --dummy CONFIG_JSON "
          "(random weights of that shape)");
  require(!(args.has("draft") && args.has("dummy-draft")), ErrorKind::invalid_argument,
          "give at most one of --draft DIR and --dummy-draft CONFIG_JSON");
  OpenModel open;
  open.backend = open_backend(args);
  const bool dummy = args.has("dummy");
  open.target = load(args.get(dummy ? "dummy" : "model"), dummy, args, *open.backend, shard);
  if (args.has("draft") || args.has("dummy-draft")) {
    const bool dummy_draft = args.has("dummy-draft");
    open.draft = load(args.get(dummy_draft ? "dummy-draft" : "draft"), dummy_draft, args,
                      *open.backend);
    require_same_vocabulary(open.target.config, open.draft->config);
  }
  return open;
}

}  // namespace tandem::cli
