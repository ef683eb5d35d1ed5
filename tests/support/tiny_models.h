// The shipped tiny model pair (models/tiny: a trained target and draft
// sharing one tokenizer, and held-out text in eval_reference.json), for the
// tests that load it.
#pragma once

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <stdexcept>
#include <vector>

namespace tandem::test_support {

inline const std::filesystem::path kTinyPair =
    std::filesystem::path(TANDEM_SOURCE_DIR) / "models" / "tiny";
inline const std::filesystem::path kTinyTarget = kTinyPair / "target";
inline const std::filesystem::path kTinyDraft = kTinyPair / "draft";

// The positions per KV block of the caches the tiny-pair tests build.
inline constexpr int kTinyBlockSize = 16;

// The token windows of eval_reference.json: text the pair never trained on.
inline std::vector<std::vector<int32_t>> held_out_windows() {
  std::ifstream file(kTinyPair / "eval_reference.json");
  if (!file)
    throw std::runtime_error("models/tiny/eval_reference.json is missing (tools/train/eval.py)");
  return nlohmann::json::parse(file).at("windows").get<std::vector<std::vector<int32_t>>>();
}

}  // namespace tandem::test_support
