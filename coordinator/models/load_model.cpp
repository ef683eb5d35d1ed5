#include "coordinator/models/load_model.h"

#include <algorithm>
#include <fstream>
#include <sstream>

#include "common/error.h"
#include "workers/llama_weights.h"
#include "workers/model_config.h"

namespace tandem {
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

}  // namespace

LoadedModel load_model(const ModelSpec& spec, Backend& backend) {
  LoadedModel loaded;
  ModelConfig config = read_config(spec.path);
  loaded.config = config;
  if (spec.tokenizer_dir) {
    loaded.tokenizer = Tokenizer::load(*spec.tokenizer_dir);
  } else if (!spec.dummy) {
    loaded.tokenizer = Tokenizer::load(spec.path);
  }

  require(spec.block_size > 0, ErrorKind::invalid_argument, "KV block size must be positive");
  const int per_context = (config.max_position_embeddings + spec.block_size - 1) / spec.block_size;
  const int blocks = spec.kv_blocks > 0 ? spec.kv_blocks : std::min(8 * per_context, 4096);
  loaded.cache = std::make_unique<PagedKvCache>(
      config, blocks, spec.block_size, backend, spec.shard,
      spec.weights ? PagedKvCache::Storage::allocate : PagedKvCache::Storage::none);
  if (!spec.weights) return loaded;
  LlamaWeights weights =
      spec.dummy ? make_dummy_weights(config, spec.dummy_seed, backend, spec.shard)
                 : load_llama_weights(spec.path, config, backend, spec.shard);
  loaded.bytes_read = weights.checkpoint_bytes_read;
  loaded.model =
      std::make_unique<LlamaModel>(std::move(config), std::move(weights), backend, spec.shard);
  return loaded;
}

std::unique_ptr<Backend> make_placement_backend(const PlacementConfig& placement, int device,
                                                std::span<const std::filesystem::path> checkpoints,
                                                WeightDtypeChoice* chosen) {
  const WeightDtypeChoice choice =
      choose_weight_dtype(placement.backend, placement.weight_dtype, checkpoints);
  if (chosen) *chosen = choice;
  std::unique_ptr<Backend> backend = make_backend(placement.backend, device, choice.dtype);
  backend->set_step_graphs(placement.cuda_graphs);
  backend->set_batch_invariant(placement.batch_invariant);
  return backend;
}

std::vector<std::filesystem::path> checkpoint_dirs(
    std::initializer_list<const ModelSource*> models) {
  std::vector<std::filesystem::path> dirs;
  for (const ModelSource* model : models)
    if (model && model->load_format != LoadFormat::dummy) dirs.push_back(model->path);
  return dirs;
}

ModelSpec model_spec(const ModelSource& source, int kv_blocks, int block_size) {
  ModelSpec spec;
  spec.dummy = source.load_format == LoadFormat::dummy;
  spec.path = spec.dummy ? source.shape : source.path;
  spec.dummy_seed = source.seed;
  if (!source.tokenizer.empty()) spec.tokenizer_dir = source.tokenizer;
  spec.kv_blocks = kv_blocks;
  spec.block_size = block_size;
  return spec;
}

void require_same_vocabulary(const ModelConfig& target, const ModelConfig& draft) {
  require(draft.vocab_size == target.vocab_size, ErrorKind::invalid_argument,
          "the draft's vocabulary (" + std::to_string(draft.vocab_size) +
              ") differs from the target's (" + std::to_string(target.vocab_size) +
              "): a draft must share the target's tokenizer");
}

}  // namespace tandem
