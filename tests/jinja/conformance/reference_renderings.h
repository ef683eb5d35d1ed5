// The reference's renderings of the conformance cases, made at test time by
// the ctest fixture jinja_conformance_reference (tools/chat_templates/
// fetch_and_render.cmake) into <build>/chat-templates/expected.json. When
// that fixture could not install the reference (no npm, no network) it left
// the reason in expected.error, and the tests skip with it.
#pragma once

#include <filesystem>
#include <fstream>
#include <map>
#include <ostream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

namespace tandem::jinja_conformance {

// One (template, case) pair; the test's parameter.
struct Pair {
  std::string template_name;
  std::string case_name;
};

// gtest prints a failing test's parameter with this (not as raw bytes).
inline void PrintTo(const Pair& pair, std::ostream* out) {
  *out << pair.template_name << " / " << pair.case_name;
}

inline std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream buffer;
  buffer << in.rdbuf();
  return buffer.str();
}

inline std::filesystem::path cases_path() {
  return std::filesystem::path(TANDEM_SOURCE_DIR) / "tests/jinja/conformance/cases.json";
}

// Every template x every case of cases.json: known before the reference has
// run (test discovery happens at build time), so each pair is a test even
// when the reference is missing and it skips.
inline std::vector<Pair> all_pairs() {
  const auto spec = nlohmann::json::parse(read_file(cases_path()));
  std::vector<Pair> pairs;
  for (const auto& t : spec.at("templates")) {
    for (const auto& c : spec.at("cases")) {
      pairs.push_back({t.at("name").get<std::string>(), c.at("name").get<std::string>()});
    }
  }
  return pairs;
}

struct References {
  // ordered_json throughout: the contexts keep their key order, which
  // `tojson` and `items` show.
  nlohmann::ordered_json templates;  // name -> {package, version, chat_templates{variant: source}}
  std::map<std::pair<std::string, std::string>, nlohmann::ordered_json> results;
  std::string reference;    // "@huggingface/jinja@<version>"
  std::string skip_reason;  // set when there are no results
};

// expected.json, read once per process.
inline const References& references() {
  static const References loaded = [] {
    References refs;
    const auto dir = std::filesystem::path(TANDEM_BINARY_DIR) / "chat-templates";
    const auto expected = dir / "expected.json";
    if (!std::filesystem::exists(expected)) {
      if (std::filesystem::exists(dir / "expected.error")) {
        refs.skip_reason = "reference renderer not available: " + read_file(dir / "expected.error");
      } else {
        refs.skip_reason = "no reference renderings in " + expected.string() +
                           "; run the tests through ctest (fixture jinja_conformance_reference)";
      }
      return refs;
    }
    const auto file = nlohmann::ordered_json::parse(read_file(expected));
    refs.reference = file.at("reference").get<std::string>();
    refs.templates = file.at("templates");
    for (const auto& r : file.at("results")) {
      refs.results[{r.at("template").get<std::string>(), r.at("case").get<std::string>()}] = r;
    }
    return refs;
  }();
  return loaded;
}

}  // namespace tandem::jinja_conformance
