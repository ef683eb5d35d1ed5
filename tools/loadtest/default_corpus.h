// The default corpus of synthetic prompts, tools/loadtest/heldout.jsonl,
// built into the library (CMakeLists.txt writes it into a generated source
// at configure time), so `tandem-loadtest` finds it wherever it is started
// from and wherever the binary is copied; --corpus FILE still reads a file.
#pragma once

#include <string_view>

namespace tandem::loadtest {

// How errors name the built-in corpus ("built-in heldout.jsonl:LINE: ...").
inline constexpr std::string_view kDefaultCorpusName = "built-in heldout.jsonl";

// The JSONL text of tools/loadtest/heldout.jsonl as it was at build time.
std::string_view default_corpus_jsonl();

}  // namespace tandem::loadtest
