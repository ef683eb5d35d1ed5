#include "coordinator/cli/model_options.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "workers/llama_weights.h"
#include "workers/model_config.h"

namespace tandem::cli {
namespace {

// A directory holding config.json, or any JSON file of that schema (so
// published shapes can live side by side in configs/shapes/).
ModelConfig read_config(const std::filesystem::path& path) {
  if (std::filesystem::is_directory(path)) return load_model_config(path);
  std::ifstream file(path);
  require(file.good(), ErrorKind::not_found, "cannot open model config " + path.string());
  std::stringstream text;
  text << file.rdbuf();
  return parse_model_config(text.str(), path.string());
}

LoadedModel load(const std::filesystem::path& path, bool dummy, const Args& args,
                 Backend& backend) {
  LoadedModel loaded;
  ModelConfig config = read_config(path);
  LlamaWeights weights =
      dummy ? make_dummy_weights(config, static_cast<uint64_t>(args.get_int("seed-weights", 1)),
                                 backend)
            : load_llama_weights(path, config, backend);
  if (!dummy) loaded.tokenizer = Tokenizer::load(path);

  const int block_size = static_cast<int>(args.get_int("block-size", 16));
  require(block_size > 0, ErrorKind::invalid_argument, "--block-size must be positive");
  const int per_context = (config.max_position_embeddings + block_size - 1) / block_size;
  const int blocks = static_cast<int>(args.get_int("kv-blocks", std::min(8 * per_context, 4096)));
  require(blocks > 0, ErrorKind::invalid_argument, "--kv-blocks must be positive");
  loaded.cache = std::make_unique<PagedKvCache>(config, blocks, block_size, backend);
  loaded.model = std::make_unique<LlamaModel>(std::move(config), std::move(weights), backend);
  return loaded;
}

}  // namespace

std::set<std::string> model_option_names() {
  return {"model", "dummy", "draft", "dummy-draft", "seed-weights", "kv-blocks", "block-size"};
}

OpenModel open_model(const Args& args) {
  require(args.has("model") != args.has("dummy"), ErrorKind::invalid_argument,
          "give exactly one of --model DIR (a Hugging Face checkpoint) or --dummy CONFIG_JSON "
          "(random weights of that shape)");
  require(!(args.has("draft") && args.has("dummy-draft")), ErrorKind::invalid_argument,
          "give at most one of --draft DIR and --dummy-draft CONFIG_JSON");
  OpenModel open;
  open.backend = make_cpu_backend();
  const bool dummy = args.has("dummy");
  open.target = load(args.get(dummy ? "dummy" : "model"), dummy, args, *open.backend);
  if (args.has("draft") || args.has("dummy-draft")) {
    const bool dummy_draft = args.has("dummy-draft");
    open.draft = load(args.get(dummy_draft ? "dummy-draft" : "draft"), dummy_draft, args,
                      *open.backend);
    require(open.draft->model->config().vocab_size == open.target.model->config().vocab_size,
            ErrorKind::invalid_argument,
            "the draft's vocabulary (" + std::to_string(open.draft->model->config().vocab_size) +
                ") differs from the target's (" +
                std::to_string(open.target.model->config().vocab_size) +
                "): a draft must share the target's tokenizer");
  }
  return open;
}

}  // namespace tandem::cli
