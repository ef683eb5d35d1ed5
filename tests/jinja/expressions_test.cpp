// Expressions: literals, arithmetic as Python does it, comparisons, `in`,
// logic, the if-expression, subscripts and slices, attribute/item
// fallbacks, str() of values, string/dict/list methods and `is` tests.
// Expected strings are what Python's Jinja2 3.1 renders.
#include "tests/jinja/render_helpers.h"

namespace tandem::jinja::testing {
namespace {

TEST(JinjaExpressions, Literals) {
  check_cases({
      {"{{ 'it\\'s' }}|{{ \"a\\tb\" }}|{{ 'caf\\u00e9' }}|{{ '\\x41' }}|{{ 'a\\d' }}", "{}", "it's|a\tb|café|A|a\\d"},
      {"{{ true }}{{ True }}{{ false }}{{ none }}{{ None }}", "{}", "TrueTrueFalseNoneNone"},
      {"{{ 1_000 }}|{{ 1.5 }}|{{ 1e3 }}|{{ 2.5e-3 }}|{{ 1e-5 }}|{{ 1e16 }}|{{ 123456789.0 }}", "{}",
       "1000|1.5|1000.0|0.0025|1e-05|1e+16|123456789.0"},
      {"{{ [1, 'a', none, true, 1.5, {'a': \"it's\"}] }}|{{ (1,) }}|{{ () }}|{{ {} }}", "{}",
       "[1, 'a', None, True, 1.5, {'a': \"it's\"}]|(1,)|()|{}"},
      {"{{ ['a\\nb', \"'\", '\"'] }}", "{}", "['a\\nb', \"'\", '\"']"},
      {"{{ [s] }}", R"({"s": "\u00a0\u00e9\u200b\u2028\ue000\u00ad\u0001\u007f\ud83d\ude00"})",
       "['\\xa0é\\u200b\\u2028\\ue000\\xad\\x01\\x7f😀']"},
      {"{{ 'a' 'b' }}", "{}", "ab"},
      {"{{ 'ü→😀' }}", "{}", "ü→😀"},
  });
}

TEST(JinjaExpressions, ArithmeticAsPython) {
  check_cases({
      {"{{ 10 / 4 }}|{{ 10 / 5 }}|{{ -7 // 2 }}|{{ -7 % 3 }}|{{ 7 % -3 }}|{{ 5.5 // 2 }}|{{ -5.5 % 2 }}", "{}",
       "2.5|2.0|-4|2|-2|2.0|0.5"},
      {"{{ 2 ** 10 }}|{{ 2 ** -1 }}|{{ 2 ** 0.5 }}|{{ 1 + 2 * 3 }}|{{ (1 + 2) * 3 }}|{{ -2 ** 2 }}", "{}",
       "1024|0.5|1.4142135623730951|7|9|4"},
      {"{{ 0.1 + 0.2 }}|{{ 1 / 3 }}|{{ 3.0 }}|{{ 2 * 1.5 }}|{{ true + 1 }}", "{}",
       "0.30000000000000004|0.3333333333333333|3.0|3.0|2"},
      {"{{ 'a' + 'b' }}|{{ 'a' ~ 1 ~ none }}|{{ 'ab' * 3 }}|{{ 2 * 'x' }}|{{ [1] * 2 }}|{{ [1] + [2] }}", "{}",
       "ab|a1None|ababab|xx|[1, 1]|[1, 2]"},
      {"{{ x ~ 'y' }}|{{ (1 + 2) ~ 3 }}", "{}", "y|33"},
      {"{{ '%s and %d' % ('a', 2.7) }}|{{ '%05.1f|%-4s|%3d|%x|%%|%r' % (3.14159, 'ab', 7, 255, 'q') }}|{{ 'n=%s' % [1] }}",
       "{}", "a and 2|003.1|ab  |  7|ff|%|'q'|n=[1]"},
  });
}

TEST(JinjaExpressions, ComparisonsAndLogic) {
  check_cases({
      {"{{ 1 == 1.0 }}{{ true == 1 }}{{ 'a' != 'b' }}{{ [1, 2] < [1, 3] }}{{ 'b' > 'a' }}{{ 1 < 2 < 3 }}{{ 3 > 2 > 2 }}",
       "{}", "TrueTrueTrueTrueTrueTrueFalse"},
      {"{{ {'a': 1} == {'a': 1} }}{{ (1, 2) == [1, 2] }}{{ none == none }}{{ x == y }}", "{}",
       "TrueFalseTrueTrue"},
      {"{{ 'b' in 'abc' }}{{ 2 in [1, 2] }}{{ 'k' in {'k': 1} }}{{ 'z' not in 'abc' }}{{ 1 in x }}", "{}",
       "TrueTrueTrueTrueFalse"},
      {"{{ 1 and 'x' }}|{{ 0 and 'x' }}|{{ '' or 'y' }}|{{ 'a' or 'y' }}|{{ not 0 }}|{{ not 1 == 1 }}", "{}",
       "x|0|y|a|True|False"},
      {"{{ 'y' if x else 'n' }}|{{ 'y' if 0 }}|{{ 1 if false else 2 if true else 3 }}", R"({"x": 1})", "y||2"},
  });
}

TEST(JinjaExpressions, SubscriptsAndSlices) {
  check_cases({
      {"{{ m[::-1] }}|{{ m[1:] }}|{{ m[-1] }}|{{ m[:-1] }}|{{ m[::2] }}|{{ m[5:] }}|{{ m[-10:2] }}",
       R"({"m": [1, 2, 3, 4]})", "[4, 3, 2, 1]|[2, 3, 4]|4|[1, 2, 3]|[1, 3]|[]|[1, 2]"},
      {"{{ 'héllo'[1:3] }}|{{ 'abc'[::-1] }}|{{ 'abc'[1] }}|{{ 'abc'[-1] }}|{{ 'abcdef'[4:1:-1] }}", "{}",
       "él|cba|b|c|edc"},
      {"{{ d.a }}{{ d['a'] }}{{ d.b.c }}{{ d['b']['c'] }}{{ l.0 }}{{ d.missing }}|{{ l[9] }}|{{ none.x }}",
       R"({"d": {"a": 1, "b": {"c": 2}}, "l": [5]})", "11225||"},
      {"{{ (1, 2)[0] }}{{ [[1, 2]][0][1] }}", "{}", "12"},
      {"{{ n[0] }}|{{ n.x }}|{{ none[0] }}", R"({"n": 5})", "||"},
  });
}

TEST(JinjaExpressions, Methods) {
  check_cases({
      {"{{ s.startswith('he') }}{{ s.endswith(('x', 'lo')) }}{{ s.upper() }}{{ 'AB'.lower() }}", R"({"s": "hello"})",
       "TrueTrueHELLOab"},
      {"{{ '  x  '.strip() }}|{{ 'xxhixx'.strip('x') }}|{{ '  x'.lstrip() }}|{{ 'x\\n\\n'.rstrip('\\n') }}|", "{}",
       "x|hi|x|x|"},
      {"{{ 'a b  c'.split() }}{{ 'a,b,c'.split(',') }}{{ 'a,b,c'.split(',', 1) }}{{ 'a,b,c'.rsplit(',', 1) }}", "{}",
       "['a', 'b', 'c']['a', 'b', 'c']['a', 'b,c']['a,b', 'c']"},
      {"{{ '  a b c  '.split(none, 1) }}{{ '  a b c  '.rsplit(none, 1) }}{{ 'a  '.split(none, 1) }}{{ ' a b '.rsplit() }}"
       "{{ 'a\u3000b'.rsplit(none, 1) }}",
       "{}", "['a', 'b c  ']['  a b', 'c']['a']['a', 'b']['a', 'b']"},
      {"{{ c.split('</think>')[0].rstrip('\\n') }}|{{ c.split('</think>')[-1].lstrip('\\n') }}",
       R"({"c": "<think>\nhm\n</think>\n\nanswer"})", "<think>\nhm|answer"},
      {"{{ 'hello world'.title() }}|{{ 'hELLO'.capitalize() }}|{{ 'a-b-c'.replace('-', '+') }}|"
       "{{ 'aaa'.replace('a', 'b', 2) }}",
       "{}", "Hello World|Hello|a+b+c|bba"},
      {"{{ 'hello'.find('l') }}{{ 'hello'.find('z') }}{{ 'hello'.count('l') }}{{ '-'.join(['a', 'b']) }}"
       "{{ '12'.isdigit() }}{{ 'ab'.isalpha() }}{{ ' '.isspace() }}",
       "{}", "2-12a-bTrueTrueTrue"},
      {"{{ d.items() | list }}{{ d.keys() | list }}{{ d.values() | list }}{{ d.get('a') }}{{ d.get('z') }}"
       "{{ d.get('z', 5) }}",
       R"({"d": {"a": 1, "b": 2}})", "[('a', 1), ('b', 2)]['a', 'b'][1, 2]1None5"},
      {"{{ [1, 2, 2].index(2) }}{{ [1, 2, 2].count(2) }}", "{}", "12"},
  });
}

TEST(JinjaExpressions, Tests) {
  check_cases({
      {"{{ x is defined }}{{ y is defined }}{{ y is undefined }}{{ none is none }}{{ 'a' is string }}{{ 1 is number }}",
       R"({"x": 1})", "TrueFalseTrueTrueTrueTrue"},
      {"{{ 1 is integer }}{{ 1.0 is integer }}{{ 1.0 is float }}{{ true is boolean }}{{ true is true }}"
       "{{ 1 is true }}{{ false is false }}",
       "{}", "TrueFalseTrueTrueTrueFalseTrue"},
      {"{{ {} is mapping }}{{ [] is mapping }}{{ [] is iterable }}{{ 'a' is sequence }}{{ 3 is iterable }}"
       "{{ range is callable }}",
       "{}", "TrueFalseTrueTrueFalseTrue"},
      {"{{ 1 is eq 1 }}{{ 1 is equalto 2 }}{{ 2 is ne 1 }}{{ 1 is lt 2 }}{{ 2 is gt 1 }}{{ 2 is ge 2 }}{{ 2 is le 1 }}",
       "{}", "TrueFalseTrueTrueTrueTrueFalse"},
      {"{{ 1 is in [1] }}{{ 3 is odd }}{{ 3 is even }}{{ 9 is divisibleby 3 }}{{ 9 is divisibleby(2) }}"
       "{{ 'ab' is lower }}{{ 'Ab' is upper }}",
       "{}", "TrueTrueFalseTrueFalseTrueFalse"},
      {"{{ 0.1 is odd }}{{ 3.0 is odd }}{{ 4.0 is divisibleby 2 }}{{ -3 is odd }}", "{}", "FalseTrueTrueTrue"},
      {"{{ x is not none }}{{ not x is defined }}{{ e is defined and e is false }}", R"({"x": 1, "e": false})",
       "TrueFalseTrue"},
  });
}

TEST(JinjaExpressions, Globals) {
  check_cases({
      {"{{ range(3) | list }}{{ range(1, 7, 2) | list }}{{ range(3, 0, -1) | list }}{{ range(0) | list }}", "{}",
       "[0, 1, 2][1, 3, 5][3, 2, 1][]"},
      {"{{ dict(a=1, b='x') }}{{ namespace(a=1).a }}", "{}", "{'a': 1, 'b': 'x'}1"},
      {"{{ strftime_now('%Y-%m-%d %H:%M') }}|{{ strftime_now('%d %b %Y') }}", "{}", "2023-11-14 22:13|14 Nov 2023"},
  });
}

}  // namespace
}  // namespace tandem::jinja::testing
