// Shared by the jinja tests: render a template with a JSON context given
// as text, and table rows of (template, context, what Jinja2 renders).
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "common/jinja/template.h"

namespace tandem::jinja::testing {

// strftime_now sees 2023-11-14 22:13:20 UTC, the time the expected strings
// were rendered with.
inline constexpr double kTestNow = 1700000000;

inline std::string render(const std::string& source, const std::string& context_json = "{}",
                          const Limits& limits = {}) {
  return Template::parse(source).render(nlohmann::ordered_json::parse(context_json), limits,
                                        Environment{kTestNow});
}

// The message of the tandem::Error that parsing or rendering throws, or
// "no error: <output>" when it renders.
inline std::string error_of(const std::string& source, const std::string& context_json = "{}",
                            const Limits& limits = {}) {
  try {
    return "no error: " + render(source, context_json, limits);
  } catch (const Error& e) {
    return e.what();
  }
}

struct Case {
  const char* source;
  const char* context;
  const char* expected;  // as Python Jinja2 3.1 renders it under transformers' settings
};

inline void check_cases(const std::vector<Case>& cases) {
  for (const Case& c : cases) {
    SCOPED_TRACE(c.source);
    try {
      EXPECT_EQ(render(c.source, c.context), c.expected);
    } catch (const Error& e) {
      ADD_FAILURE() << "threw: " << e.what();
    }
  }
}

}  // namespace tandem::jinja::testing
