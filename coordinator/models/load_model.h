// Opening one model for serving: weights (a Hugging Face checkpoint or dummy
// weights of a published shape), its tokenizer and its own paged KV cache.
// Shared by the CLI commands and the server.
#pragma once

#include <cstdint>
#include <filesystem>
#include <memory>
#include <initializer_list>
#include <optional>
#include <span>
#include <vector>

#include "common/tokenizer/tokenizer.h"
#include "coordinator/config/deployment_config.h"
#include "coordinator/models/weight_dtype.h"
#include "kernels/backend.h"
#include "workers/kv_cache.h"
#include "workers/llama_model.h"
#include "workers/tensor_parallel.h"

namespace tandem {

struct ModelSpec {
  // A checkpoint directory, or with dummy weights a config.json (or a
  // directory holding one) giving the shape.
  std::filesystem::path path;
  bool dummy = false;
  uint64_t dummy_seed = 1;
  std::optional<std::filesystem::path> tokenizer_dir;  // default: path (none for dummy)
  int kv_blocks = 0;    // 0: enough for 8 full contexts, at most 4096 blocks
  int block_size = 16;  // tokens per KV block
  // False: the config, tokenizer and a KV cache without storage (block
  // accounting only: the coordinator of a job whose target runs on other
  // ranks); model stays null.
  bool weights = true;
  // This process's share of a tensor-parallel model (default: all of it).
  TensorShard shard;
};

struct LoadedModel {
  ModelConfig config;
  std::unique_ptr<LlamaModel> model;
  std::unique_ptr<PagedKvCache> cache;
  std::optional<Tokenizer> tokenizer;  // absent for dummy weights without tokenizer_dir
  int64_t bytes_read = 0;              // checkpoint bytes read (this shard's slices only)
};

LoadedModel load_model(const ModelSpec& spec, Backend& backend);

// The spec of a deployment's model (models.target or models.draft).
ModelSpec model_spec(const ModelSource& source, int kv_blocks, int block_size);

// The backend a deployment's placement asks for, on GPU `device` (cuda),
// for the models whose checkpoint directories are `checkpoints` (what
// weight_dtype auto looks at: coordinator/models/weight_dtype.h), with the
// placement's step graph and batch invariance settings. `chosen`, when
// given, receives the weight dtype and why it was chosen, for the log.
std::unique_ptr<Backend> make_placement_backend(const PlacementConfig& placement, int device,
                                                std::span<const std::filesystem::path> checkpoints,
                                                WeightDtypeChoice* chosen = nullptr);
// The checkpoint directories of these models (null or dummy ones: none).
std::vector<std::filesystem::path> checkpoint_dirs(
    std::initializer_list<const ModelSource*> models);

// Throws unless the draft can propose tokens the target understands.
void require_same_vocabulary(const ModelConfig& target, const ModelConfig& draft);

}  // namespace tandem
