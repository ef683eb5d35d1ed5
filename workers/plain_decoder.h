// decode_plain: ordinary autoregressive decoding of one sequence, the
// baseline that speculative decoding must match exactly and beat.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <span>
#include <vector>

#include "kernels/sampling_params.h"
#include "workers/kv_cache.h"
#include "workers/llama_model.h"

namespace tandem {

struct DecodeRequest {
  std::vector<int32_t> prompt;     // token ids, BOS included if wanted
  int max_new_tokens = 64;
  SamplingParams sampling;
  std::vector<int32_t> stop_ids;  // e.g. the model's EOS ids; the stop token is emitted
};

struct DecodeStats {
  int prompt_tokens = 0;
  int new_tokens = 0;
  double prefill_seconds = 0;  // prompt forward + first token
  double decode_seconds = 0;   // every later token
};

// Calls on_token(id) for each new token as soon as it is chosen; returning
// false stops early. Uses (and releases) one sequence of the cache.
DecodeStats decode_plain(LlamaModel& model, PagedKvCache& cache, const DecodeRequest& request,
                         const std::function<bool(int32_t)>& on_token);

}  // namespace tandem
