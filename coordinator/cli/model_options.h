// The model options that `generate` and `bench` share: where the weights come
// from (a Hugging Face directory, or `--dummy CONFIG` for random weights of
// any published shape), an optional draft model, and the KV cache size.
#pragma once

#include <filesystem>
#include <memory>
#include <optional>
#include <set>
#include <string>

#include "common/tokenizer/tokenizer.h"
#include "coordinator/cli/args.h"
#include "coordinator/models/load_model.h"
#include "kernels/backend.h"
#include "workers/kv_cache.h"
#include "workers/llama_model.h"

namespace tandem::cli {

// Option names (without "--") that open_model() reads.
std::set<std::string> model_option_names();


struct OpenModel {
  std::unique_ptr<Backend> backend;
  LoadedModel target;
  std::optional<LoadedModel> draft;  // with --draft DIR or --dummy-draft CONFIG
};

// --model DIR | --dummy CONFIG_JSON [--seed-weights N]
// [--draft DIR | --dummy-draft CONFIG_JSON]
// --kv-blocks N (default: enough for 8 full contexts, at most 4096 blocks) --block-size N
// shard: this process's part of a tensor-parallel target (the draft is never split).
OpenModel open_model(const Args& args, const TensorShard& shard = {});

}  // namespace tandem::cli
