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

}  // namespace

std::set<std::string> model_option_names() {
  return {"model", "dummy", "draft", "dummy-draft", "seed-weights", "kv-blocks", "block-size"};
}

OpenModel open_model(const Args& args, const TensorShard& shard) {
  require(args.has("model") != args.has("dummy"), ErrorKind::invalid_argument,
          "give exactly one of --model DIR (a Hugging Face checkpoint) or --dummy CONFIG_JSON "
          "(random weights of that shape)");
  require(!(args.has("draft") && args.has("dummy-draft")), ErrorKind::invalid_argument,
          "give at most one of --draft DIR and --dummy-draft CONFIG_JSON");
  OpenModel open;
  open.backend = make_cpu_backend();
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
