// Limits: a template or context cannot make rendering run long, eat
// memory or overflow the stack; passing a limit is a clear error.
#include "tests/jinja/render_helpers.h"

namespace tandem::jinja::testing {
namespace {

bool contains(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

TEST(JinjaLimits, OutputBytes) {
  Limits limits;
  limits.max_output_bytes = 1000;
  EXPECT_EQ(render("{% for i in range(10) %}0123456789{% endfor %}", "{}", limits).size(), 100u);
  std::string error = error_of("{% for i in range(200) %}0123456789{% endfor %}", "{}", limits);
  EXPECT_TRUE(contains(error, "chat template line 1: ") && contains(error, "Limits::max_output_bytes")) << error;
  // Building a long string counts too, not only what is printed.
  error = error_of("{% set s = 'a' * 5000 %}x", "{}", limits);
  EXPECT_TRUE(contains(error, "Limits::max_output_bytes")) << error;
  error = error_of("{{ 'a' * 10 ** 9 }}");
  EXPECT_TRUE(contains(error, "Limits::max_output_bytes")) << error;
}

TEST(JinjaLimits, Steps) {
  Limits limits;
  limits.max_steps = 10000;
  std::string error =
      error_of("{% for i in range(1000) %}{% for j in range(1000) %}{{ j }}{% endfor %}{% endfor %}", "{}", limits);
  EXPECT_TRUE(contains(error, "Limits::max_steps")) << error;
  // A list that doubles each step is caught by the steps its copies cost.
  error = error_of("{% set ns = namespace(l=[1]) %}{% for i in range(100) %}{% set ns.l = ns.l + ns.l %}{% endfor %}",
                   "{}", limits);
  EXPECT_TRUE(contains(error, "Limits::max")) << error;
  EXPECT_EQ(render("{% for i in range(100) %}{{ i % 10 }}{% endfor %}", "{}", limits).size(), 100u);
}

TEST(JinjaLimits, MacroRecursion) {
  Limits limits;
  limits.max_call_depth = 8;
  std::string error = error_of("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}", "{}", limits);
  EXPECT_TRUE(contains(error, "Limits::max_call_depth")) << error;
  EXPECT_EQ(render("{% macro f(n) %}{% if n < 7 %}{{ f(n + 1) }}{% endif %}{{ n }}{% endmacro %}{{ f(0) }}", "{}",
                   limits),
            "76543210");
}

TEST(JinjaLimits, DeepNestingIsRefusedNotACrash) {
  std::string deep = "{{ " + std::string(100000, '(') + "1" + std::string(100000, ')') + " }}";
  EXPECT_TRUE(contains(error_of(deep), "nested too deeply"));
  std::string ifs;
  for (int i = 0; i < 5000; ++i) ifs += "{% if true %}";
  EXPECT_TRUE(contains(error_of(ifs), "nested too deeply"));
  std::string nots = "{{ " + [] { std::string s; for (int i = 0; i < 100000; ++i) s += "not "; return s; }() + "1 }}";
  EXPECT_TRUE(contains(error_of(nots), "nested too deeply"));
  std::string context = std::string(100000, '[') + std::string(100000, ']');
  try {
    render("{{ x }}", "{\"x\": " + context + "}");
    FAIL() << "rendered";
  } catch (const Error& e) {
    EXPECT_TRUE(contains(e.what(), "nested more than")) << e.what();
  } catch (const std::exception& e) {
    // nlohmann's parser may refuse the depth itself: also not a crash.
    SUCCEED() << e.what();
  }
}

TEST(JinjaLimits, SelfContainingNamespaceDoesNotRecurseForever) {
  std::string error = error_of("{% set ns = namespace() %}{% set ns.me = ns %}{{ ns }}");
  EXPECT_TRUE(contains(error, "nested more than")) << error;
}

}  // namespace
}  // namespace tandem::jinja::testing
