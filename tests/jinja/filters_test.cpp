// Filters, each against what Python's Jinja2 3.1 renders; tojson as
// transformers overrides it (json.dumps, ensure_ascii=False).
#include "tests/jinja/render_helpers.h"

namespace tandem::jinja::testing {
namespace {

TEST(JinjaFilters, Tojson) {
  check_cases({
      {"{{ [1, 2] | tojson }}|{{ 1.0 | tojson }}|{{ 1e-05 | tojson }}|{{ none | tojson }}|{{ true | tojson }}", "{}",
       "[1, 2]|1.0|1e-05|null|true"},
      {"{{ {'a': [1, {'b': none}], 'c': 'é\"\\n'} | tojson(indent=2) }}", "{}",
       "{\n  \"a\": [\n    1,\n    {\n      \"b\": null\n    }\n  ],\n  \"c\": \"é\\\"\\n\"\n}"},
      {"{{ {} | tojson(indent=2) }}{{ [] | tojson(indent=4) }}{{ [1] | tojson(indent=0) }}", "{}", "{}[][\n1\n]"},
      {"{{ t | tojson }}", R"({"t": {"name": "get_weather", "parameters": {"type": "object", "x": 0.5, "big": 12345678901}}})",
       R"({"name": "get_weather", "parameters": {"type": "object", "x": 0.5, "big": 12345678901}})"},
      {"{{ {'b': 1, 'a': []} | tojson(sort_keys=true) }}|{{ {'a': 1} | tojson(separators=(',', ':')) }}", "{}",
       R"({"a": [], "b": 1}|{"a":1})"},
      {"{{ 'é<>&\\u0001' | tojson }}|{{ 'é😀' | tojson(ensure_ascii=true) }}", "{}",
       "\"é<>&\\u0001\"|\"\\u00e9\\ud83d\\ude00\""},
      {"{{ (1, 'a') | tojson }}", "{}", "[1, \"a\"]"},
  });
}

TEST(JinjaFilters, Text) {
  check_cases({
      {"[{{ '  a b \\n' | trim }}]|{{ 'xxaxx' | trim('x') }}|{{ 'ab' | upper }}|{{ 'AB' | lower }}", "{}",
       "[a b]|a|AB|ab"},
      {"[{{ s | trim }}]{{ s.split() }}", R"({"s": "\u00a0\u3000\u2003x\u2009y\u200b\u0085"})",
       "[x\u2009y\u200b]['x', 'y\\u200b']"},
      {"{{ 'hello world' | capitalize }}|{{ \"they're here-now\" | title }}|{{ 'a-b' | replace('-', '+') }}", "{}",
       "Hello world|They're Here-Now|a+b"},
      {"{{ 'a\\nb\\n\\nc' | indent }}|{{ 'a\\nb\\n\\nc' | indent(2, true, true) }}|{{ 'a\\nb\\n' | indent(first=true) }}",
       "{}", "a\n    b\n\n    c|  a\n  b\n  \n  c|    a\n    b\n"},
      {"{{ 5 | center(3) }}{{ 5 | wordcount }}{{ 5 | trim }}{{ 5 | replace('5', '6') }}{{ 5 | upper }}", "{}", " 5 1565"},
      {"{{ '<a href=\"x\">&\\'' | e }}|{{ '<b>' | escape }}|{{ '<b>' | safe }}", "{}",
       "&lt;a href=&#34;x&#34;&gt;&amp;&#39;|&lt;b&gt;|<b>"},
      {"{{ 'ab' | center(6) }}|{{ 'hello world foo' | truncate(9) }}|{{ 'hello' | truncate(3) }}|"
       "{{ 'a b  c' | wordcount }}",
       "{}", "  ab  |hello...|hello|3"},
      {"{{ 12 | string | length }}|{{ [1, 'a'] | string }}|{{ 'héllo' | length }}|{{ x | string }}", "{}",
       "2|[1, 'a']|5|"},
  });
}

TEST(JinjaFilters, Numbers) {
  check_cases({
      {"{{ '3' | int + 1 }}|{{ '3.7' | int }}|{{ 3.7 | int }}|{{ 'x' | int }}|{{ 'x' | int(7) }}|{{ '0x1A' | int(base=16) }}"
       "|{{ ' 42 ' | int }}|{{ none | int }}",
       "{}", "4|3|3|0|7|26|42|0"},
      {"{{ '3.5' | float }}|{{ 'abc' | float }}|{{ 2 | float }}|{{ true | int }}|{{ -3 | abs }}|{{ -2.5 | abs }}", "{}",
       "3.5|0.0|2.0|1|3|2.5"},
      {"{{ 5 | round }}|{{ 2.567 | round(2) }}|{{ 2.5 | round }}|{{ 3.5 | round }}|{{ 2.675 | round(2) }}|"
       "{{ 2.5 | round(0, 'floor') }}|{{ 2.1 | round(0, 'ceil') }}",
       "{}", "5|2.57|2.0|4.0|2.67|2.0|3.0"},
  });
}

TEST(JinjaFilters, Sequences) {
  check_cases({
      {"{{ [1, 'a', none] | join(', ') }}|{{ [{'n': 'x'}, {'n': 'y'}] | join('-', attribute='n') }}|{{ 'abc' | join('.') }}",
       "{}", "1, a, None|x-y|a.b.c"},
      {"{{ [3, 1] | first }}|{{ [3, 1] | last }}|{{ [] | first }}|{{ 'abc' | first }}|{{ m | length }}|{{ m | count }}"
       "|{{ x | length }}|{{ {'a': 1} | length }}",
       R"({"m": [1, 2, 3]})", "3|1||a|3|3|0|1"},
      {"{{ '' | default('d') }}|{{ '' | default('d', true) }}|{{ none | default('d') }}|{{ x | d('e') }}|{{ x | default }}|",
       "{}", "|d|None|e||"},
      {"{{ [3, 1, 2] | sort }}{{ [3, 1, 2] | sort(reverse=true) }}{{ ['b', 'A', 'c'] | sort }}"
       "{{ [{'a': 2}, {'a': 1}] | sort(attribute='a') }}",
       "{}", "[1, 2, 3][3, 2, 1]['A', 'b', 'c'][{'a': 1}, {'a': 2}]"},
      {"{{ ['a', 'A', 'b'] | unique | list }}{{ [1, 2, 3] | sum }}{{ [1.5, 2] | sum(start=1) }}{{ [3, 1] | min }}"
       "{{ ['b', 'A'] | max }}{{ [{'v': 2}, {'v': 5}] | sum(attribute='v') }}",
       "{}", "['a', 'b']64.51b7"},
      {"{{ [1, 2, 3] | map('string') | list }}{{ [{'a': 1}, {'b': 2}] | map(attribute='a', default=0) | list }}"
       "{{ ['a', 'b'] | map('upper') | join }}",
       "{}", "['1', '2', '3'][1, 0]AB"},
      {"{{ [1, 2, 3, 4] | select('odd') | list }}{{ [1, 2, 3, 4] | reject('gt', 2) | list }}{{ [1, 0, 2] | select | list }}",
       "{}", "[1, 3][1, 2][1, 2]"},
      {"{{ ms | selectattr('role', 'equalto', 'user') | map(attribute='c') | list }}"
       "{{ ms | rejectattr('role', 'equalto', 'user') | list | length }}{{ ms | selectattr('tool') | list | length }}",
       R"({"ms": [{"role": "user", "c": 1}, {"role": "system", "c": 2, "tool": true}, {"role": "user", "c": 3}]})",
       "[1, 3]11"},
      {"{{ ms | reject('equalto', 'b') | list }}", R"({"ms": ["a", "b", "c"]})", "['a', 'c']"},
      {"{{ [1, 2] | reverse | list }}{{ 'abc' | reverse }}{{ 'ab' | list }}{{ {'a': 1, 'b': 2} | list }}", "{}",
       "[2, 1]cba['a', 'b']['a', 'b']"},
      {"{{ d | items | list }}{{ d | dictsort }}{{ d | dictsort(reverse=true) }}", R"({"d": {"b": 1, "a": 2}})",
       "[('b', 1), ('a', 2)][('a', 2), ('b', 1)][('b', 1), ('a', 2)]"},
      {"{{ [1, 2, 3, 4, 5] | batch(2) | list }}{{ [1, 2, 3] | batch(2, 0) | list }}", "{}",
       "[[1, 2], [3, 4], [5]][[1, 2], [3, 0]]"},
  });
}

}  // namespace
}  // namespace tandem::jinja::testing
