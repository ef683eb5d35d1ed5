// The model flags that `tandem generate` and every `tandem-bench` suite
// share: where the weights come from (a Hugging Face directory, or `--dummy
// CONFIG` for random weights of any published shape), an optional draft
// model, the KV cache size, and the backend. The backend and dtype rules are
// the deployment's own (coordinator/config/compute_choice.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/command_line.h"
#include "coordinator/models/load_model.h"
#include "kernels/backend.h"

namespace tandem {

struct ModelFlags {
  std::string model;        // --model DIR
  std::string dummy;        // --dummy CONFIG_JSON
  std::string draft;        // --draft DIR
  std::string dummy_draft;  // --dummy-draft CONFIG_JSON
  std::int64_t seed_weights = 1;
  int kv_blocks = 0;  // 0: enough for 8 full contexts, at most 4096 blocks
  int block_size = 16;
  std::string backend = "cpu";
  int device = 0;
  std::string weight_dtype;  // "" or "auto": coordinator/models/weight_dtype.h
  int threads = 0;           // the CPU kernels' threads; 0: the CPUs this process may run on
  bool untiled_skinny_matmul = false;  // --untiled-skinny-matmul (cuda): Backend::set_tiled_skinny_matmul(false)
};

// Registers the flags above on a command, writing into flags.
void add_model_flags(cli::Command& command, ModelFlags& flags);

struct OpenModel {
  std::unique_ptr<Backend> backend;
  LoadedModel target;
  std::optional<LoadedModel> draft;  // with --draft DIR or --dummy-draft CONFIG_JSON
};

// Exactly one of --model and --dummy; at most one of --draft and --dummy-draft.
// Also sets the CPU kernels' thread count (--threads) for the process.
// shard: this process's part of a tensor-parallel target (the draft is never split).
OpenModel open_model(const ModelFlags& flags, const TensorShard& shard = {});

}  // namespace tandem
