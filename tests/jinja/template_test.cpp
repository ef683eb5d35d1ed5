// Template as a server uses it: parsed once, rendered many times, from
// several threads at once, with the clock when Environment gives none.
#include <ctime>
#include <thread>

#include "tests/jinja/render_helpers.h"

namespace tandem::jinja::testing {
namespace {

TEST(JinjaTemplate, RendersConcurrentlyFromOneParse) {
  Template t = Template::parse(
      "{% set ns = namespace(n=0) %}{% macro m(x) %}<{{ x }}>{% endmacro %}"
      "{% for message in messages %}{% set ns.n = ns.n + 1 %}{{ m(message.content | upper) }}{% endfor %}{{ ns.n }}");
  nlohmann::ordered_json context = nlohmann::ordered_json::parse(
      R"({"messages": [{"content": "a"}, {"content": "b"}, {"content": "c"}]})");
  const std::string expected = "<A><B><C>3";  // Jinja2's rendering
  std::vector<std::thread> threads;
  std::vector<int> mismatches(4, 0);
  for (int k = 0; k < 4; ++k) {
    threads.emplace_back([&, k] {
      for (int i = 0; i < 500; ++i) mismatches[static_cast<size_t>(k)] += t.render(context) != expected;
    });
  }
  for (auto& thread : threads) thread.join();
  for (int m : mismatches) EXPECT_EQ(m, 0);
}

TEST(JinjaTemplate, StrftimeNowUsesTheClockWhenNoTimeIsGiven) {
  std::time_t before = std::time(nullptr);
  std::string rendered = Template::parse("{{ strftime_now('%Y-%m-%d %H') }}").render(nlohmann::ordered_json::object());
  std::time_t after = std::time(nullptr);
  auto format = [](std::time_t t) {
    std::tm parts{};
    gmtime_r(&t, &parts);
    char text[32];
    std::strftime(text, sizeof text, "%Y-%m-%d %H", &parts);
    return std::string(text);
  };
  EXPECT_TRUE(rendered == format(before) || rendered == format(after)) << rendered;
}

TEST(JinjaTemplate, MovedTemplateStillRenders) {
  Template a = Template::parse("{{ x }}!");
  Template b = std::move(a);
  EXPECT_EQ(b.render(nlohmann::ordered_json::parse(R"({"x": 1})")), "1!");
  EXPECT_EQ(b.render(nlohmann::ordered_json()), "!");  // a null context is an empty one
  EXPECT_THROW(b.render(nlohmann::ordered_json::parse("[1]")), Error);
}

}  // namespace
}  // namespace tandem::jinja::testing
