// `tandem tokenize`: the tokenizer on its own, for checking prompts and ids
// against other tools. Needs only the tokenizer files in --model DIR.
//
//   tandem tokenize --model DIR --text 'Hello'            -> [128000,9906]
//   tandem tokenize --model DIR --text 'Hello' --no-special -> [9906]
//   tandem tokenize --model DIR --decode --text '[9906,1917]' -> Hello world
//
// --no-special: when encoding, add no BOS/EOS from the tokenizer's template;
// when decoding, drop special tokens from the text.
#include <cstdint>
#include <cstdio>
#include <limits>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/tokenizer/tokenizer.h"
#include "coordinator/cli/commands.h"

namespace tandem::cli {
namespace {

struct TokenizeFlags {
  std::string model;
  std::string text;
  bool decode = false;
  bool no_special = false;
};

// --text for --decode: a JSON array of token ids.
std::vector<int32_t> parse_ids(const std::string& text) {
  const std::string hint = " (hint: with --decode, --text is a JSON array of ids, e.g. '[1,2,3]')";
  nlohmann::json json;
  try {
    json = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error&) {
    throw Error(ErrorKind::invalid_argument, "--text is not valid JSON" + hint);
  }
  require(json.is_array(), ErrorKind::invalid_argument, "--text is not a JSON array" + hint);
  std::vector<int32_t> ids;
  ids.reserve(json.size());
  for (const auto& item : json) {
    require(item.is_number_integer() && item.get<int64_t>() >= 0 &&
                item.get<int64_t>() <= std::numeric_limits<int32_t>::max(),
            ErrorKind::invalid_argument, "--text: " + item.dump() + " is not a token id" + hint);
    ids.push_back(static_cast<int32_t>(item.get<int64_t>()));
  }
  return ids;
}

int tokenize(const TokenizeFlags& flags) {
  const Tokenizer tokenizer = Tokenizer::load(flags.model);
  const bool special = !flags.no_special;

  std::string out;
  if (flags.decode) {
    out = tokenizer.decode(parse_ids(flags.text), /*skip_special=*/!special);
  } else {
    out = nlohmann::json(tokenizer.encode(flags.text, special)).dump();
  }
  out += '\n';
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace

Run define_tokenize(Command& command) {
  auto flags = std::make_shared<TokenizeFlags>();
  add_value(command, "--model", flags->model, "a directory with tokenizer.json")
      .type_name("DIR")
      .required();
  add_value(command, "--text", flags->text,
            "the text to encode; with --decode a JSON array of ids, e.g. '[9906,1917]'")
      .required();
  add_switch(command, "--decode", flags->decode, "ids to text instead of text to ids");
  add_switch(command, "--no-special", flags->no_special,
             "encoding: add no BOS/EOS from the tokenizer's template; decoding: drop special "
             "tokens from the text");
  return [flags] { return tokenize(*flags); };
}

}  // namespace tandem::cli
