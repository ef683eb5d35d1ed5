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
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "common/error.h"
#include "common/tokenizer/tokenizer.h"
#include "coordinator/cli/args.h"
#include "coordinator/cli/commands.h"

namespace tandem::cli {
namespace {

constexpr const char* kUsage =
    "usage: tandem tokenize --model DIR --text TEXT [--no-special]\n"
    "       tandem tokenize --model DIR --decode --text '[ID,ID,...]' [--no-special]\n";

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

}  // namespace

int tokenize_command(const Words& words) {
  const Args args(words, {"model", "text"}, {"decode", "no-special", "help"});
  if (args.has("help")) {
    std::fputs(kUsage, stdout);
    return 0;
  }
  require(
      args.positional().empty(), ErrorKind::invalid_argument,
      "tokenize takes no positional arguments; pass the text with --text\n" + std::string(kUsage));
  require(args.has("model"), ErrorKind::invalid_argument,
          "tokenize needs --model DIR (a directory with tokenizer.json)\n" + std::string(kUsage));
  require(args.has("text"), ErrorKind::invalid_argument,
          "tokenize needs --text\n" + std::string(kUsage));
  const Tokenizer tokenizer = Tokenizer::load(args.get("model"));
  const bool special = !args.has("no-special");

  std::string out;
  if (args.has("decode")) {
    out = tokenizer.decode(parse_ids(args.get("text")), /*skip_special=*/!special);
  } else {
    out = nlohmann::json(tokenizer.encode(args.get("text"), special)).dump();
  }
  out += '\n';
  std::fwrite(out.data(), 1, out.size(), stdout);
  return 0;
}

}  // namespace tandem::cli
