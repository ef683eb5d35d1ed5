// Bad tokenizer files and bad inputs: each gives a tandem::Error of the right
// kind whose message names the file and what is wrong.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <string>
#include <vector>

#include "common/error.h"
#include "tests/tokenizer/tiny_tokenizer.h"

namespace tandem {
namespace {

using testing::tiny_json;
using testing::tiny_tokenizer;

// Runs `action`, expecting an Error of `kind` whose message contains every
// string in `needles`.
void expect_error(const std::function<void()>& action, ErrorKind kind,
                  const std::vector<std::string>& needles) {
  try {
    action();
    ADD_FAILURE() << "no error was thrown";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), kind) << e.what();
    for (const auto& needle : needles) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos)
          << "message lacks '" << needle << "': " << e.what();
    }
  }
}

class TempDir {
 public:
  TempDir() {
    path_ =
        std::filesystem::temp_directory_path() /
        ("tandem-tokenizer-test-" + std::to_string(::getpid()) + "-" + std::to_string(counter_++));
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  const std::filesystem::path& path() const { return path_; }
  void write(const std::string& name, const std::string& content) const {
    std::ofstream(path_ / name, std::ios::binary) << content;
  }

 private:
  static inline int counter_ = 0;
  std::filesystem::path path_;
};

TEST(TokenizerErrors, MissingDirectoryOrFileIsNotFound) {
  expect_error([] { Tokenizer::load("/nonexistent/model-dir"); }, ErrorKind::not_found,
               {"/nonexistent/model-dir", "hint"});
  TempDir dir;
  expect_error([&] { Tokenizer::load(dir.path()); }, ErrorKind::not_found,
               {dir.path().string(), "tokenizer.json", "hint"});
}

TEST(TokenizerErrors, LoadReadsBothFilesFromTheDirectory) {
  TempDir dir;
  auto json = tiny_json({{"a", "b"}});
  json["added_tokens"] = {testing::added_token(300, "<s>", true)};
  dir.write("tokenizer.json", json.dump());
  dir.write("tokenizer_config.json", R"({"bos_token": "<s>", "add_bos_token": true})");
  const Tokenizer tok = Tokenizer::load(dir.path());
  EXPECT_EQ(tok.encode("ab"), (std::vector<int32_t>{300, 256}));
  EXPECT_EQ(tok.source_name(), (dir.path() / "tokenizer.json").string());
}

TEST(TokenizerErrors, MalformedJsonIsCorruptData) {
  TempDir dir;
  const std::string full = tiny_json({{"a", "b"}}).dump();
  dir.write("tokenizer.json", full.substr(0, full.size() / 2));  // truncated download
  expect_error([&] { Tokenizer::load(dir.path()); }, ErrorKind::corrupt_data,
               {(dir.path() / "tokenizer.json").string(), "not valid JSON", "hint"});
  dir.write("tokenizer.json", full);
  dir.write("tokenizer_config.json", "{not json");
  expect_error([&] { Tokenizer::load(dir.path()); }, ErrorKind::corrupt_data,
               {(dir.path() / "tokenizer_config.json").string(), "not valid JSON"});
  expect_error([] { Tokenizer::from_json("[1, 2]", "", "x/tokenizer.json"); },
               ErrorKind::corrupt_data, {"x/tokenizer.json", "object"});
}

TEST(TokenizerErrors, MergeNamingAnUnknownTokenIsCorruptData) {
  auto json = tiny_json({{"a", "b"}});
  json["model"]["merges"].push_back("a zz");
  expect_error([&] { tiny_tokenizer(json); }, ErrorKind::corrupt_data,
               {"tiny/tokenizer.json", "model.merges[1]", "'zz'", "not in model.vocab", "hint"});
  json["model"]["merges"][1] = "a b c";
  expect_error([&] { tiny_tokenizer(json); }, ErrorKind::corrupt_data,
               {"model.merges[1]", "two tokens"});
  json["model"]["merges"][1] = 7;
  expect_error([&] { tiny_tokenizer(json); }, ErrorKind::corrupt_data, {"model.merges[1]"});
}

TEST(TokenizerErrors, BadVocabularyIsCorruptData) {
  auto json = tiny_json({});
  json["model"]["vocab"]["x"] = -4;
  expect_error([&] { tiny_tokenizer(json); }, ErrorKind::corrupt_data,
               {"model.vocab[\"x\"]", "-4"});
  json["model"]["vocab"]["x"] = "twelve";
  expect_error([&] { tiny_tokenizer(json); }, ErrorKind::corrupt_data, {"model.vocab"});
  json["model"].erase("vocab");
  expect_error([&] { tiny_tokenizer(json); }, ErrorKind::corrupt_data, {"missing field \"vocab\""});
}

TEST(TokenizerErrors, UnsupportedKindsAreUnsupported) {
  auto model = tiny_json({});
  model["model"]["type"] = "WordPiece";
  expect_error([&] { tiny_tokenizer(model); }, ErrorKind::unsupported,
               {"tiny/tokenizer.json", "model type 'WordPiece'", "hint"});

  auto normalizer = tiny_json({});
  normalizer["normalizer"] = {{"type", "Lowercase"}};
  expect_error([&] { tiny_tokenizer(normalizer); }, ErrorKind::unsupported,
               {"normalizer", "Lowercase"});

  auto pre = tiny_json({});
  pre["pre_tokenizer"] = {{"type", "Metaspace"}, {"replacement", "_"}};
  expect_error([&] { tiny_tokenizer(pre); }, ErrorKind::unsupported,
               {"pre_tokenizer", "Metaspace"});

  auto decoder = tiny_json({});
  decoder["decoder"] = {{"type", "WordPiece"}};
  expect_error([&] { tiny_tokenizer(decoder); }, ErrorKind::unsupported, {"decoder", "WordPiece"});

  auto fallback = tiny_json({});
  fallback["model"]["byte_fallback"] = true;
  expect_error([&] { tiny_tokenizer(fallback); }, ErrorKind::unsupported, {"byte_fallback"});
}

TEST(TokenizerErrors, BadRegexIsCorruptData) {
  auto json = tiny_json({});
  json["pre_tokenizer"] = nlohmann::json::parse(R"({"type": "Sequence", "pretokenizers": [
    {"type": "Split", "pattern": {"Regex": "(unclosed"}, "behavior": "Isolated", "invert": false},
    {"type": "ByteLevel", "add_prefix_space": false, "use_regex": false}]})");
  expect_error([&] { tiny_tokenizer(json); }, ErrorKind::corrupt_data,
               {"pre_tokenizer.pretokenizers[0]", "does not compile"});
}

TEST(TokenizerErrors, ConfigNamingAnUnknownTokenIsCorruptData) {
  expect_error([] { tiny_tokenizer(tiny_json({}), R"({"bos_token": "<nope>"})"); },
               ErrorKind::corrupt_data, {"tiny/tokenizer_config.json", "bos_token", "<nope>"});
  expect_error([] { tiny_tokenizer(tiny_json({}), R"({"add_bos_token": "yes"})"); },
               ErrorKind::corrupt_data, {"add_bos_token", "true or false"});
}

TEST(TokenizerErrors, BadInputsAreInvalidArgument) {
  const Tokenizer tok = tiny_tokenizer(tiny_json({{"a", "b"}}));
  expect_error([&] { tok.encode("ab\xFF\x63\x64"); }, ErrorKind::invalid_argument,
               {"UTF-8", "offset 2"});
  expect_error([&] { tok.encode("\xE2\x82"); }, ErrorKind::invalid_argument, {"UTF-8"});
  const std::vector<int32_t> negative = {97, -1};
  expect_error([&] { tok.decode(negative); }, ErrorKind::invalid_argument, {"-1", "out of range"});
  expect_error([&] { tok.decode(std::vector<int32_t>{257}); }, ErrorKind::invalid_argument,
               {"257"});
  expect_error([&] { tok.token_text(1000); }, ErrorKind::invalid_argument, {"1000"});
}

}  // namespace
}  // namespace tandem
