// Access to the real tokenizers (Llama 3, Qwen 3) and their fixtures for the
// tokenizer tests. The tokenizer files are fetched by the ctest fixture
// tokenizer_fetch_reference_files (tools/tokenizer_fixtures/fetch_tokenizers.cmake)
// into <build>/tokenizer-cache; when they are missing, tests skip with the
// reason the fetch recorded.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "common/tokenizer/tokenizer.h"

namespace tandem::testing {

struct FixtureCase {
  std::string text;
  std::vector<int32_t> ids;          // add_special_tokens = false
  std::vector<int32_t> ids_special;  // transformers' default, add_special_tokens = true
  std::string decoded;               // what `ids` decode to (text after normalization)
};

struct Reference {
  std::string name;  // "llama3", "qwen3"
  std::vector<FixtureCase> cases;
  std::filesystem::path model_dir;       // cache dir holding tokenizer.json
  std::unique_ptr<Tokenizer> tokenizer;  // null when the files are missing
  std::string skip_reason;               // why tokenizer is null
};

inline std::string read_text_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

// Loads fixture `name` (tests/tokenizer/fixtures/<name>.json) and its
// tokenizer, once per process; later calls return the same object.
inline const Reference& reference(const std::string& name) {
  static std::mutex mutex;
  static std::map<std::string, std::unique_ptr<Reference>> loaded;
  std::lock_guard<std::mutex> lock(mutex);
  auto& slot = loaded[name];
  if (slot) return *slot;
  slot = std::make_unique<Reference>();
  Reference& ref = *slot;
  ref.name = name;
  const auto fixture_path =
      std::filesystem::path(TANDEM_SOURCE_DIR) / "tests/tokenizer/fixtures" / (name + ".json");
  const auto fixture = nlohmann::json::parse(read_text_file(fixture_path));
  for (const auto& c : fixture.at("cases")) {
    ref.cases.push_back({c.at("text").get<std::string>(), c.at("ids").get<std::vector<int32_t>>(),
                         c.at("ids_special").get<std::vector<int32_t>>(),
                         c.at("decoded").get<std::string>()});
  }
  // Same directory naming as fetch_tokenizers.cmake.
  std::string dir = fixture.at("package").get<std::string>();
  if (!dir.empty() && dir[0] == '@') dir.erase(0, 1);
  for (char& ch : dir) ch = ch == '/' ? '-' : ch;
  dir += "-" + fixture.at("version").get<std::string>();
  const auto cache = std::filesystem::path(TANDEM_BINARY_DIR) / "tokenizer-cache";
  ref.model_dir = cache / dir;
  if (std::filesystem::exists(ref.model_dir / "tokenizer.json")) {
    ref.tokenizer = std::make_unique<Tokenizer>(Tokenizer::load(ref.model_dir));
  } else if (const auto error = cache / (dir + ".error"); std::filesystem::exists(error)) {
    ref.skip_reason = "reference tokenizer not available: " + read_text_file(error);
  } else {
    ref.skip_reason = "reference tokenizer not fetched into " + ref.model_dir.string() +
                      "; run the tests through ctest (fixture tokenizer_fetch_reference_files)";
  }
  return ref;
}

}  // namespace tandem::testing

// Skips the current test when the reference tokenizer is missing.
#define TANDEM_REQUIRE_REFERENCE(ref)                        \
  do {                                                       \
    if (!(ref).tokenizer) GTEST_SKIP() << (ref).skip_reason; \
  } while (0)
