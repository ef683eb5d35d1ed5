// Chat templates rendered by tandem::jinja against the reference renderer
// (@huggingface/jinja, as transformers.js's apply_chat_template uses it),
// byte for byte: every case of cases.json with every real template of
// tools/chat_templates/. Where the reference raised, we must refuse too.
#include <gtest/gtest.h>

#include <exception>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "common/error.h"
#include "common/jinja/template.h"
#include "tests/jinja/conformance/first_difference.h"
#include "tests/jinja/conformance/reference_renderings.h"

namespace tandem::jinja_conformance {
namespace {

class ChatTemplateConformance : public ::testing::TestWithParam<Pair> {};

// Our rendering, or the error we raised (parse or render).
struct Outcome {
  std::optional<std::string> text;
  std::string error;
  bool tandem_error = false;  // error was a tandem::Error(invalid_argument), as template.h promises
};

Outcome render_ours(const std::string& source, const nlohmann::ordered_json& context) {
  Outcome outcome;
  try {
    // Options{}: trim_blocks and lstrip_blocks on, as the reference.
    const auto parsed = jinja::Template::parse(source);
    outcome.text = parsed.render(context);
  } catch (const Error& e) {
    outcome.error = e.what();
    outcome.tandem_error = e.kind() == ErrorKind::invalid_argument;
  } catch (const std::exception& e) {
    outcome.error = std::string("not a tandem::Error: ") + e.what();
  }
  return outcome;
}

TEST_P(ChatTemplateConformance, RendersAsTheReference) {
  const auto& refs = references();
  if (!refs.skip_reason.empty()) GTEST_SKIP() << refs.skip_reason;
  const auto& [template_name, case_name] = GetParam();
  const auto found = refs.results.find({template_name, case_name});
  ASSERT_NE(found, refs.results.end())
      << template_name << " / " << case_name << " is in cases.json but not in the reference's "
      << "renderings: they are stale; run the tests through ctest to regenerate them";
  const auto& result = found->second;
  if (result.contains("skipped")) GTEST_SKIP() << result.at("skipped").get<std::string>();

  const auto& tmpl = refs.templates.at(template_name);
  const auto source =
      tmpl.at("chat_templates").at(result.at("variant").get<std::string>()).get<std::string>();
  const std::string where = template_name + " (" + tmpl.at("package").get<std::string>() + "@" +
                            tmpl.at("version").get<std::string>() + "), case " + case_name +
                            ", reference " + refs.reference;
  const Outcome ours = render_ours(source, result.at("context"));

  if (result.contains("error")) {
    EXPECT_TRUE(ours.tandem_error)
        << where << ": the reference raised \"" << result.at("error").get<std::string>()
        << "\", so must we (tandem::Error, invalid_argument); we "
        << (ours.text ? "rendered " + nlohmann::json(*ours.text).dump() : "raised: " + ours.error);
    return;
  }
  const auto expected = result.at("expected").get<std::string>();
  ASSERT_TRUE(ours.text) << where << ": the reference rendered, we raised: " << ours.error;
  EXPECT_TRUE(*ours.text == expected)
      << where << ": " << describe_first_difference(expected, *ours.text);
}

std::string pair_name(const ::testing::TestParamInfo<Pair>& info) {
  return info.param.template_name + "__" + info.param.case_name;
}

INSTANTIATE_TEST_SUITE_P(Cases, ChatTemplateConformance, ::testing::ValuesIn(all_pairs()),
                         pair_name);

// The suite is not hollow: every template renders at least half the cases (a reference
// that raised or skipped everywhere would make the comparisons above vacuous).
TEST(ChatTemplateConformanceReference, RendersAtLeastHalfTheCasesOfEveryTemplate) {
  const auto& refs = references();
  if (!refs.skip_reason.empty()) GTEST_SKIP() << refs.skip_reason;
  const auto pairs = all_pairs();
  ASSERT_EQ(refs.results.size(), pairs.size()) << "stale renderings: run through ctest";
  std::map<std::string, int> rendered, total;
  for (const auto& [key, result] : refs.results) {
    ++total[key.first];
    if (result.contains("expected")) ++rendered[key.first];
  }
  ASSERT_EQ(total.size(), 4u);
  for (const auto& [name, n] : total) {
    EXPECT_GE(rendered[name] * 2, n) << name << ": only " << rendered[name] << " of " << n
                                         << " cases rendered by the reference";
  }
}

}  // namespace
}  // namespace tandem::jinja_conformance
