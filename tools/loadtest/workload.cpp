#include "tools/loadtest/workload.h"

#include <cctype>
#include <limits>
#include <random>
#include <sstream>

#include "common/error.h"
#include "tools/loadtest/default_corpus.h"
#include "tools/loadtest/jsonl_reader.h"

namespace tandem::loadtest {
namespace {

// A uniform draw from [low, high] by rejection, so the same seed gives the
// same numbers with every standard library (std::uniform_int_distribution's
// algorithm is left to the implementation).
std::int64_t draw_uniform(std::mt19937_64& rng, std::int64_t low, std::int64_t high) {
  const std::uint64_t span = static_cast<std::uint64_t>(high - low) + 1;
  // Raw draws below this would make small results more likely than others.
  const std::uint64_t reject_below = (0 - span) % span;
  std::uint64_t raw = rng();
  while (raw < reject_below) raw = rng();
  return low + static_cast<std::int64_t>(raw % span);
}

void check_length_spec(const LengthSpec& spec, const char* what) {
  require(spec.range >= 0 && spec.mean - spec.range >= 1, ErrorKind::invalid_argument, [&] {
    return std::string(what) + " length " + std::to_string(spec.mean) + " ± " + std::to_string(spec.range) +
           " must have a range >= 0 and mean - range >= 1";
  });
}

int draw_length(std::mt19937_64& rng, const LengthSpec& spec) {
  return static_cast<int>(draw_uniform(rng, spec.mean - spec.range, spec.mean + spec.range));
}

// The corpus as one text, with where each word starts and ends in it, so a
// prompt is a slice of the original text (its own spacing and punctuation).
struct WordIndex {
  std::string text;
  std::vector<std::size_t> word_begin;
  std::vector<std::size_t> word_end;  // one past the word's last character
};

WordIndex index_words(const std::vector<std::string>& corpus_texts) {
  WordIndex index;
  for (const std::string& document : corpus_texts) {
    if (!index.text.empty()) index.text += '\n';
    index.text += document;
  }
  const std::string& text = index.text;
  std::size_t i = 0;
  while (i < text.size()) {
    while (i < text.size() && std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    if (i == text.size()) break;
    index.word_begin.push_back(i);
    while (i < text.size() && !std::isspace(static_cast<unsigned char>(text[i]))) ++i;
    index.word_end.push_back(i);
  }
  return index;
}

}  // namespace

std::vector<WorkItem> read_jsonl(const std::filesystem::path& path) {
  std::vector<WorkItem> items;
  for_each_jsonl_object(path, [&](const nlohmann::json& object, const std::string& where) {
    const auto prompt = object.find("prompt");
    require(prompt != object.end() && prompt->is_string(), ErrorKind::invalid_argument,
            [&] { return where + ": \"prompt\" must be a string"; });
    const auto max_tokens = object.find("max_tokens");
    require(max_tokens != object.end() && max_tokens->is_number_integer() && *max_tokens >= 1,
            ErrorKind::invalid_argument, [&] { return where + ": \"max_tokens\" must be an integer >= 1"; });
    require(*max_tokens <= std::numeric_limits<int>::max(), ErrorKind::invalid_argument,
            [&] { return where + ": \"max_tokens\" is too large"; });
    WorkItem item;
    item.prompt = prompt->get<std::string>();
    item.max_tokens = max_tokens->get<int>();
    item.extra = object;
    item.extra.erase("prompt");
    item.extra.erase("max_tokens");
    items.push_back(std::move(item));
  });
  return items;
}

namespace {

// Collects each line's "text" into texts.
auto corpus_collector(std::vector<std::string>& texts) {
  return [&texts](const nlohmann::json& object, const std::string& where) {
    const auto text = object.find("text");
    require(text != object.end() && text->is_string(), ErrorKind::invalid_argument,
            [&] { return where + ": \"text\" must be a string"; });
    texts.push_back(text->get<std::string>());
  };
}

}  // namespace

std::vector<std::string> read_corpus(const std::filesystem::path& jsonl) {
  std::vector<std::string> texts;
  for_each_jsonl_object(jsonl, corpus_collector(texts));
  return texts;
}

std::vector<std::string> read_default_corpus() {
  std::vector<std::string> texts;
  std::istringstream in{std::string(default_corpus_jsonl())};
  for_each_jsonl_object(in, std::string(kDefaultCorpusName), corpus_collector(texts));
  return texts;
}

std::vector<WorkItem> synthetic_workload(const std::vector<std::string>& corpus_texts, std::size_t count,
                                         LengthSpec input_words, LengthSpec output_tokens,
                                         std::uint64_t seed) {
  check_length_spec(input_words, "input");
  check_length_spec(output_tokens, "output");
  const WordIndex index = index_words(corpus_texts);
  const std::size_t corpus_words = index.word_begin.size();
  const auto longest_prompt = static_cast<std::size_t>(input_words.mean + input_words.range);
  require(corpus_words >= longest_prompt, ErrorKind::invalid_argument, [&] {
    return "the corpus has " + std::to_string(corpus_words) + " words, fewer than the longest prompt (" +
           std::to_string(longest_prompt) + "): lower the input length or use a larger corpus";
  });

  std::mt19937_64 rng(seed);
  std::vector<WorkItem> items;
  items.reserve(count);
  for (std::size_t n = 0; n < count; ++n) {
    const auto words = static_cast<std::size_t>(draw_length(rng, input_words));
    const auto first = static_cast<std::size_t>(draw_uniform(rng, 0, static_cast<std::int64_t>(corpus_words - words)));
    const std::size_t begin = index.word_begin[first];
    const std::size_t end = index.word_end[first + words - 1];
    WorkItem item;
    item.prompt = index.text.substr(begin, end - begin);
    item.max_tokens = draw_length(rng, output_tokens);
    items.push_back(std::move(item));
  }
  return items;
}

std::string request_body(const WorkItem& item, const std::string& model, const nlohmann::json& overrides) {
  require(item.extra.is_object() || item.extra.is_null(), ErrorKind::invalid_argument,
          "a work item's extra fields must be a JSON object");
  require(overrides.is_object() || overrides.is_null(), ErrorKind::invalid_argument,
          "request overrides must be a JSON object, e.g. {\"ignore_eos\": true}");
  // ordered_json keeps the fields in the order written, so a logged body reads
  // model, prompt, max_tokens first.
  nlohmann::ordered_json body = nlohmann::ordered_json::object();
  if (!model.empty()) body["model"] = model;
  body["prompt"] = item.prompt;
  body["max_tokens"] = item.max_tokens;
  for (const nlohmann::json* source : {&item.extra, &overrides}) {
    if (source->is_null()) continue;
    for (const auto& [key, value] : source->items()) body[key] = value;
  }
  return body.dump();
}

}  // namespace tandem::loadtest
