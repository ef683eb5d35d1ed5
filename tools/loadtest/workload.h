// The load generator's requests: what each one asks (WorkItem), where the
// items come from (a JSONL file of the user's, or synthetic prompts cut from
// held-out text the way vLLM's `bench serve` random dataset draws lengths),
// and the /v1/completions body each item becomes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace tandem::loadtest {

// One request to send.
struct WorkItem {
  std::string prompt;
  int max_tokens = 0;
  // Every other body field (temperature, top_p, seed, stop, speculation...),
  // merged into the body after prompt and max_tokens; an object or null.
  nlohmann::json extra = nlohmann::json::object();
};

// A length drawn uniformly from [mean - range, mean + range], both ends
// included; range 0 gives exactly mean. vLLM's random dataset spells the same
// thing as --input-len/--output-len with a range ratio.
struct LengthSpec {
  int mean = 0;
  int range = 0;
};

// Reads one JSON object per line: "prompt" (string) and "max_tokens"
// (integer >= 1) are required; every other field goes to WorkItem::extra.
// Blank lines are skipped. Errors name file:line and the field at fault.
std::vector<WorkItem> read_jsonl(const std::filesystem::path& path);

// Reads the "text" of each line of a JSONL corpus such as
// tools/loadtest/heldout.jsonl. Blank lines are skipped.
std::vector<std::string> read_corpus(const std::filesystem::path& jsonl);

// The same for the held-out corpus built into the binary (default_corpus.h),
// so synthetic prompts need no file wherever the tool is started from.
std::vector<std::string> read_default_corpus();

// `count` items whose prompts are runs of whole words cut at random places
// from the corpus texts (joined by newlines, in order) and whose max_tokens
// are drawn from output_tokens. Input lengths are counted in words, since the
// client has no tokenizer. The same seed gives the same items on every
// platform (the draws do not go through std:: distributions, whose results
// differ between standard libraries).
std::vector<WorkItem> synthetic_workload(const std::vector<std::string>& corpus_texts,
                                         std::size_t count, LengthSpec input_words,
                                         LengthSpec output_tokens, std::uint64_t seed);

// The /v1/completions JSON body: "model" (left out when empty), "prompt",
// "max_tokens", then the item's extra fields, then overrides; a later source
// wins over an earlier one, so overrides such as {"ignore_eos": true} apply to
// every item. overrides must be an object or null.
std::string request_body(const WorkItem& item, const std::string& model,
                         const nlohmann::json& overrides);

}  // namespace tandem::loadtest
