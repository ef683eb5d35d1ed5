// Undefined as Jinja2's default Undefined: prints as nothing, is falsy,
// iterates as empty, has length 0, compares equal only to Undefined, and
// fails (with Jinja2's UndefinedError wording) when its attribute or item
// is read, when it is called, or when arithmetic meets it.
#include "tests/jinja/render_helpers.h"

namespace tandem::jinja::testing {
namespace {

TEST(JinjaUndefined, RendersAndTestsLikeJinja2) {
  check_cases({
      {"[{{ x }}]{{ x | length }}{{ x | default('d') }}{{ x is defined }}{% for a in x %}A{% endfor %}", "{}",
       "[]0dFalse"},
      {"{{ x == y }}{{ x == none }}{{ 'a' in x }}{{ x ~ 'y' }}{{ x | string }}|{{ x | list }}{{ x | trim }}|", "{}",
       "TrueFalseFalsey|[]|"},
      {"{% if x %}t{% else %}f{% endif %}{{ not x }}{{ x or 'alt' }}{{ x and 'no' }}", "{}", "fTruealt"},
      {"{{ d.missing is defined }}{{ d.missing | default('m') }}{{ l[5] is undefined }}{{ none.x is defined }}",
       R"({"d": {}, "l": []})", "FalsemTrueFalse"},
      {"{{ e is defined and e is false }}|{{ f is defined and f is false }}", R"({"e": false})", "True|False"},
      {"{{ [x] }}{{ {'k': x} }}", "{}", "[Undefined]{'k': Undefined}"},
  });
}

TEST(JinjaUndefined, FailsWhereJinja2Fails) {
  EXPECT_EQ(error_of("a\n{{ foo.bar }}"), "chat template line 2: 'foo' is undefined");
  EXPECT_EQ(error_of("{{ d.a.b }}", R"({"d": {}})"), "chat template line 1: 'dict object' has no attribute 'a'");
  EXPECT_EQ(error_of("{{ l[3].x }}", R"({"l": [1]})"), "chat template line 1: list object has no element 3");
  EXPECT_EQ(error_of("{{ none.a.b }}"), "chat template line 1: 'None' has no attribute 'a'");
  EXPECT_EQ(error_of("{{ x + 1 }}"), "chat template line 1: 'x' is undefined");
  EXPECT_EQ(error_of("{{ x['k'] }}"), "chat template line 1: 'x' is undefined");
  EXPECT_EQ(error_of("{{ f() }}"), "chat template line 1: 'f' is undefined");
  EXPECT_EQ(error_of("{{ x < 1 }}"), "chat template line 1: 'x' is undefined");
  EXPECT_EQ(error_of("{{ x | tojson }}"), "chat template line 1: Object of type Undefined is not JSON serializable");
  EXPECT_EQ(error_of("{{ x.split(',') }}"), "chat template line 1: 'x' is undefined");
}

}  // namespace
}  // namespace tandem::jinja::testing
