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

TEST(JinjaLimits, ScanningLargeValuesCosts) {
  // 100000 searches of a 1 MB string would be 10^11 byte compares: each
  // costs steps by the size it scans, so the steps limit stops it early.
  std::string big = R"({"big": ")" + std::string(1 << 20, 'a') + R"("})";
  std::string error = error_of("{% for i in range(100000) %}{% if 'x' in big %}{% endif %}{% endfor %}", big);
  EXPECT_TRUE(contains(error, "Limits::max_steps")) << error;
  error = error_of("{% for i in range(100000) %}{{ big | length }}{% endfor %}", big);
  EXPECT_TRUE(contains(error, "Limits::max_steps")) << error;
}

TEST(JinjaLimits, GrowingTextIsRefusedBeforeItIsBuilt) {
  std::string context = R"({"s": ")" + std::string(10000, 'a') + R"(", "n": ")" +
                        [] { std::string s; for (int i = 0; i < 100000; ++i) s += "\\n"; return s; }() + "\"}";
  for (const char* source : {"{{ s.replace('a', s) }}", "{{ s | replace('a', s) }}", "{{ n | indent(256) }}",
                             "{{ s | center(100000000) }}", "{{ range(100000) | list | tojson(indent=64) }}"}) {
    std::string error = error_of(source, context);
    EXPECT_TRUE(contains(error, "Limits::max_output_bytes")) << source << ": " << error;
  }
}

TEST(JinjaLimits, LongConversationsFitTheDefaultLimits) {
  // 20000 messages through the shape of Qwen3's template (a reverse scan
  // reading messages|length each turn, then the render): the limits are
  // for runaway templates, not for long chats.
  nlohmann::ordered_json context = {{"messages", nlohmann::ordered_json::array()}};
  std::string expected;
  for (int i = 0; i < 20000; ++i) {
    std::string role = i % 2 ? "assistant" : "user", content = "message " + std::to_string(i);
    context["messages"].push_back({{"role", role}, {"content", content}});
    expected += "<|im_start|>" + role + "\n" + content + "<|im_end|>\n";
  }
  expected += "19998";
  Template t = Template::parse(
      "{%- set ns = namespace(last=-1) %}\n"
      "{%- for message in messages[::-1] %}\n"
      "    {%- set index = (messages|length - 1) - loop.index0 %}\n"
      "    {%- if ns.last == -1 and message.role == 'user' %}{% set ns.last = index %}{% endif %}\n"
      "{%- endfor %}\n"
      "{%- for message in messages %}\n"
      "    {{- '<|im_start|>' + message.role + '\\n' + message.content | trim + '<|im_end|>\\n' }}\n"
      "{%- endfor %}{{ ns.last }}");
  EXPECT_EQ(t.render(context), expected);
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
