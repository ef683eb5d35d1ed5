// Bad templates and failing renders: every failure is a tandem::Error of
// kind invalid_argument whose message names the template line;
// raise_exception() passes the template's own words.
#include "tests/jinja/render_helpers.h"

namespace tandem::jinja::testing {
namespace {

TEST(JinjaErrors, SyntaxErrorsNameTheLine) {
  EXPECT_EQ(error_of("line1\n{{ x | nofilter }}"), "chat template line 2: no filter named 'nofilter'");
  EXPECT_EQ(error_of("{% for m in [] %}\n{{ x is nosuchtest }}{% endfor %}"),
            "chat template line 2: no test named 'nosuchtest'");
  // Inside an `if` or an if-expression Jinja2 waits until the filter runs.
  EXPECT_EQ(error_of("{% if false %}{{ x | nofilter }}{% endif %}{{ (x | nofilter) if false else 1 }}"),
            "no error: 1");
  EXPECT_EQ(error_of("{% if true %}{{ x | nofilter }}{% endif %}"), "chat template line 1: no filter named 'nofilter'");
  EXPECT_EQ(error_of("{% if false %}{% for a in b %}{{ x | nofilter }}{% endfor %}{% endif %}"),
            "chat template line 1: no filter named 'nofilter'");
  EXPECT_EQ(error_of("a\n{% if x %}\nb"),
            "chat template line 3: unexpected end of template: the 'if' block from line 2 is not closed "
            "(expected 'elif', 'else' or 'endif')");
  EXPECT_EQ(error_of("{% for x in y %}\n{% endif %}"),
            "chat template line 2: encountered unknown tag 'endif'; the 'for' block from line 1 is still open");
  EXPECT_EQ(error_of("{{ 1 + }}"), "chat template line 1: unexpected end of print statement");
  EXPECT_EQ(error_of("\n\n{{ 'abc"), "chat template line 3: unterminated string");
  EXPECT_EQ(error_of("{% foo %}"), "chat template line 1: encountered unknown tag 'foo'");
  EXPECT_EQ(error_of("{{ x"), "chat template line 1: unexpected end of template, expected '}}'");
  EXPECT_EQ(error_of("{# never closed"), "chat template line 1: missing end of comment tag");
  EXPECT_EQ(error_of("{% break %}"), "chat template line 1: 'break' outside of a loop");
  EXPECT_EQ(error_of("{{ a ? b }}"), "chat template line 1: unexpected char '?'");
  EXPECT_EQ(error_of("{% include 'x' %}"), "chat template line 1: the 'include' tag is not supported in chat templates");
  EXPECT_EQ(error_of("{{ ) }}"), "chat template line 1: unexpected ')'");
}

TEST(JinjaErrors, RenderErrorsNameTheLine) {
  EXPECT_EQ(error_of("{{ 'abc'() }}"), "chat template line 1: 'str' object is not callable");
  EXPECT_EQ(error_of("\n{{ 'a' + 1 }}"), "chat template line 2: can only concatenate str (not \"int\") to str");
  EXPECT_EQ(error_of("{{ 1 / 0 }}"), "chat template line 1: division by zero");
  EXPECT_EQ(error_of("{{ 5 | indent }}"), "chat template line 1: unsupported operand type(s) for +=: 'int' and 'str'");
  EXPECT_EQ(error_of("{{ x | indent }}"), "chat template line 1: 'x' is undefined");
  EXPECT_EQ(error_of("{{ n[1:3] }}", R"({"n": 5})"), "chat template line 1: 'int' object is not subscriptable");
  EXPECT_EQ(error_of("{{ 1 < 'a' }}"), "chat template line 1: '<' not supported between instances of 'int' and 'str'");
  EXPECT_EQ(error_of("{% set x = [1] %}{{ x.append(2) }}"),
            "chat template line 1: unsafe method 'append': chat templates may not change a list");
  EXPECT_EQ(error_of("{% for a, b in [[1, 2, 3]] %}{% endfor %}"),
            "chat template line 1: too many values to unpack (expected 2, got 3)");
  EXPECT_EQ(error_of("{% set x = 5 %}{% set x.y = 1 %}"),
            "chat template line 1: cannot assign attribute on non-namespace object");
  EXPECT_EQ(error_of("{% for x in 5 %}{% endfor %}"), "chat template line 1: 'int' object is not iterable");
  EXPECT_EQ(error_of("{% macro m(a) %}{% endmacro %}{{ m(1, 2) }}"),
            "chat template line 1: macro 'm' takes not more than 1 argument(s)");
  EXPECT_EQ(error_of("{{ range(10 ** 6) | length }}"),
            "chat template line 1: range too big: the sandbox allows at most 100000 items");
}

TEST(JinjaErrors, RaiseExceptionPassesTheTemplatesWords) {
  EXPECT_EQ(error_of("{% if messages | length == 0 %}{{ raise_exception('No messages given!') }}{% endif %}",
                     R"({"messages": []})"),
            "chat template: No messages given!");
  try {
    render("{{ raise_exception('x') }}");
    FAIL() << "rendered";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
  }
  try {
    Template::parse("{% if %}");
    FAIL() << "parsed";
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
  }
}

}  // namespace
}  // namespace tandem::jinja::testing
