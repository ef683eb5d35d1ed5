#include "coordinator/cli/model_options.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "workers/llama_weights.h"
#include "workers/model_config.h"

namespace tandem::cli {

std::set<std::string> model_option_names() {
  return {"model", "dummy", "seed-weights", "kv-blocks", "block-size"};
}

OpenModel open_model(const Args& args) {
  require(args.has("model") != args.has("dummy"), ErrorKind::invalid_argument,
          "give exactly one of --model DIR (a Hugging Face checkpoint) or --dummy CONFIG_JSON "
          "(random weights of that shape)");
  OpenModel open;
  open.backend = make_cpu_backend();

  ModelConfig config;
  LlamaWeights weights;
  if (args.has("model")) {
    const std::filesystem::path dir = args.get("model");
    config = load_model_config(dir);
    weights = load_llama_weights(dir, config, *open.backend);
    open.tokenizer = Tokenizer::load(dir);
  } else {
    // A directory holding config.json, or any JSON file of that schema (so
    // published shapes can live side by side in configs/shapes/).
    const std::filesystem::path path = args.get("dummy");
    if (std::filesystem::is_directory(path)) {
      config = load_model_config(path);
    } else {
      std::ifstream file(path);
      require(file.good(), ErrorKind::not_found, "cannot open --dummy config " + path.string());
      std::stringstream text;
      text << file.rdbuf();
      config = parse_model_config(text.str(), path.string());
    }
    weights = make_dummy_weights(config, static_cast<uint64_t>(args.get_int("seed-weights", 1)),
                                 *open.backend);
  }

  const int block_size = static_cast<int>(args.get_int("block-size", 16));
  require(block_size > 0, ErrorKind::invalid_argument, "--block-size must be positive");
  const int per_context = (config.max_position_embeddings + block_size - 1) / block_size;
  const int blocks = static_cast<int>(args.get_int("kv-blocks", std::min(8 * per_context, 4096)));
  require(blocks > 0, ErrorKind::invalid_argument, "--kv-blocks must be positive");
  open.cache = std::make_unique<PagedKvCache>(config, blocks, block_size, *open.backend);
  open.model = std::make_unique<LlamaModel>(std::move(config), std::move(weights), *open.backend);
  return open;
}

}  // namespace tandem::cli
