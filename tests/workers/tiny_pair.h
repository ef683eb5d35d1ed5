// The shipped tiny target/draft pair (models/tiny), each with its own paged
// KV cache, for the engine tests that need a draft and a target that really
// disagree. A missing model is a loud failure, never a silent skip.
#pragma once

#include <gtest/gtest.h>

#include <filesystem>
#include <memory>

#include "common/tokenizer/tokenizer.h"
#include "kernels/backend.h"
#include "tests/support/tiny_models.h"
#include "workers/kv_cache.h"
#include "workers/llama_model.h"
#include "workers/llama_weights.h"

namespace tandem::test_support {

struct TinyModel {
  TinyModel(const std::filesystem::path& dir, Backend& backend, int blocks)
      : config(load_model_config(dir)),
        cache(config, blocks, 16, backend),
        model(config, load_llama_weights(dir, config, backend), backend) {}
  ModelConfig config;
  PagedKvCache cache;
  LlamaModel model;
};

struct TinyPair {
  explicit TinyPair(int blocks = 640)
      : target(kTinyTarget, *backend, blocks),
        draft(kTinyDraft, *backend, blocks),
        tokenizer(Tokenizer::load(kTinyTarget)) {}
  static bool present() {
    return std::filesystem::exists(kTinyTarget / "model.safetensors") &&
           std::filesystem::exists(kTinyDraft / "model.safetensors");
  }
  std::unique_ptr<Backend> backend = make_cpu_backend();
  TinyModel target, draft;
  Tokenizer tokenizer;
};

}  // namespace tandem::test_support
