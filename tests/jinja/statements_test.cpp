// Statements: if/elif/else, for (loop variables, unpacking, filters,
// else, break/continue), set and its scoping, namespace, macro and call,
// filter blocks, raw, generation, comments. Expected strings are what
// Python's Jinja2 3.1 renders with trim_blocks and lstrip_blocks on.
#include "tests/jinja/render_helpers.h"

namespace tandem::jinja::testing {
namespace {

TEST(JinjaStatements, IfElifElse) {
  check_cases({
      {"{% if x %}yes{% endif %}", R"({"x": true})", "yes"},
      {"{% if x %}yes{% else %}no{% endif %}", R"({"x": []})", "no"},
      {"{% if x == 1 %}a{% elif x == 2 %}b{% elif x == 3 %}c{% else %}d{% endif %}", R"({"x": 3})", "c"},
      {"{% if x %}a{% endif %}", "{}", ""},
      {"{% if not x %}none{% endif %}", "{}", "none"},
  });
}

TEST(JinjaStatements, ForLoopVariables) {
  check_cases({
      {"{% for x in [1, 2, 3] %}{{ loop.index }}{{ loop.index0 }}{{ loop.revindex }}{{ loop.revindex0 }}"
       "{{ loop.first }}{{ loop.last }}{{ loop.length }};{% endfor %}",
       "{}", "1032TrueFalse3;2121FalseFalse3;3210FalseTrue3;"},
      {"{% for a, b in [[1,2],[3,4]] %}{{ a }}{{ b }}{{ loop.previtem }}{{ loop.nextitem }}{{ loop.cycle('x','y') }}"
       "{% endfor %}",
       "{}", "12[3, 4]x34[1, 2]y"},
      {"{% for x in [1,2,3] if x > 1 %}{{ loop.index }}{{ loop.length }}{% else %}E{% endfor %}", "{}", "1222"},
      {"{% for x in [] %}x{% else %}E{% endfor %}", "{}", "E"},
      {"{% for x in missing %}x{% else %}E{% endfor %}", "{}", "E"},
      {"{% for k in {'b': 1, 'a': 2} %}{{ k }}{% endfor %}", "{}", "ba"},
      {"{% for k, v in d.items() %}{{ k }}={{ v }},{% endfor %}", R"({"d": {"z": 1, "y": [2]}})", "z=1,y=[2],"},
      {"{% for c in 'hé' %}[{{ c }}]{% endfor %}", "{}", "[h][é]"},
      {"{% for x in range(10) %}{% if x == 2 %}{% continue %}{% endif %}{% if x == 5 %}{% break %}{% endif %}"
       "{{ x }}{% endfor %}",
       "{}", "0134"},
      {"{% for i in range(2) %}{% for j in range(2) %}{{ loop.index }}{% endfor %}{{ loop.index }}|{% endfor %}",
       "{}", "121|122|"},
      // Jinja2 runs `else` unless some iteration finished its body.
      {"{% for x in [1, 2] %}{{ x }}{% break %}{% else %}E{% endfor %}", "{}", "1E"},
      {"{% for x in [1, 2] %}{{ x }}{% continue %}{% else %}E{% endfor %}", "{}", "12E"},
      {"{% for x in [1, 2] %}{% if x == 2 %}{% break %}{% endif %}{{ x }}{% else %}E{% endfor %}", "{}", "1"},
  });
}

TEST(JinjaStatements, SetAndScoping) {
  check_cases({
      {"{% set x = 1 %}{{ x }}", "{}", "1"},
      {"{% set a, b = [1, 2] %}{{ b }}{{ a }}", "{}", "21"},
      {"{% set t = 1, 2 %}{{ t }}", "{}", "(1, 2)"},
      {"{% set x = 1 %}{% for i in range(3) %}{{ x }}{% if i == 1 %}{% set x = 5 %}{% endif %}{{ x }},{% endfor %}"
       "{{ x }}",
       "{}", "11,15,11,1"},
      {"{% set x = 1 %}{% for i in range(3) %}{% set x = x + 1 %}{{ x }}{% endfor %}{{ x }}", "{}", "2221"},
      {"{% if true %}{% set y = 'leaks' %}{% endif %}{{ y }}", "{}", "leaks"},
      {"{% set ns = namespace(n=0, s='') %}{% for i in range(4) %}{% set ns.n = ns.n + i %}{% endfor %}{{ ns.n }}",
       "{}", "6"},
      {"{% set ns = namespace(a=1) %}{% set ns.b = 2 %}{{ ns }}", "{}", "<Namespace {'a': 1, 'b': 2}>"},
      {"{% set x %}a{{ 1 + 1 }}b{% endset %}[{{ x }}]", "{}", "[a2b]"},
      {"{% set x | upper %}abc{% endset %}{{ x }}", "{}", "ABC"},
      // Filter, set and call blocks keep their own sets; `if` does not.
      {"{% filter upper %}{% set a = 1 %}{% endfilter %}{% set b %}{% set c = 1 %}{% endset %}[{{ a }}{{ c }}]", "{}",
       "[]"},
      {"{% macro m() %}{{ caller() }}{% endmacro %}{% call m() %}{% set a = 1 %}{% endcall %}[{{ a }}]", "{}", "[]"},
  });
}

TEST(JinjaStatements, MacrosAndCall) {
  check_cases({
      {"{% macro m(a, b=2) %}{{ a }}{{ b }}{{ x }}{% endmacro %}{% set x = 'X' %}{{ m(1) }}"
       "{% for x in [7] %}{{ m(3, b=4) }}{% endfor %}",
       "{}", "12X34X"},
      {"{% macro m() %}[{{ caller() }}]{% endmacro %}{% call m() %}body{% endcall %}", "{}", "[body]"},
      {"{% macro m(items) %}{% for i in items %}{{ caller(i) }}{% endfor %}{% endmacro %}"
       "{% call(v) m([1, 2]) %}<{{ v }}>{% endcall %}",
       "{}", "<1><2>"},
      {"{% macro f(n) %}{% if n > 0 %}{{ n }}{{ f(n - 1) }}{% endif %}{% endmacro %}{{ f(3) }}", "{}", "321"},
      {"{% macro m(a) %}{{ a }}{% endmacro %}[{{ m() }}]", "{}", "[]"},
  });
}

TEST(JinjaStatements, FilterRawGenerationComments) {
  check_cases({
      {"{% filter upper %}abc{{ 'd' }}{% endfilter %}", "{}", "ABCD"},
      {"{% filter replace('a', 'b') | upper %}aa{% endfilter %}", "{}", "BB"},
      {"{% raw %}{{ not rendered }}{% endraw %}", "{}", "{{ not rendered }}"},
      {"a{# a comment #}b", "{}", "ab"},
      {"{% generation %}gen {{ 1 }}{% endgeneration %}", "{}", "gen 1"},
  });
}

}  // namespace
}  // namespace tandem::jinja::testing
