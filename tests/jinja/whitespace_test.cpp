// Whitespace control as Jinja2 applies it with trim_blocks and
// lstrip_blocks on (transformers' settings): `-` on either side of a tag,
// the newline after a block tag dropped, the indentation before a block
// tag (not before `{{`) dropped, `{%+` and `+%}` opting out, comments and
// raw blocks alike, \r\n read as \n and the final newline dropped.
#include "tests/jinja/render_helpers.h"

namespace tandem::jinja::testing {
namespace {

TEST(JinjaWhitespace, TrimAndLstripBlocks) {
  check_cases({
      {"{% if true %}\nyes\n{% endif %}\nafter", "{}", "yes\nafter"},
      {"  {% if true %}\n  x\n  {% endif %}\n", "{}", "  x\n"},
      {"a\n    {% for i in [1, 2] %}\n    {{ i }}\n    {% endfor %}\nb", "{}", "a\n    1\n    2\nb"},
      {"  {{ 'v' }}\n", "{}", "  v"},
      {"x  {% if true %}y{% endif %}", "{}", "x  y"},
      {"  {%+ if true %}y{% endif %}", "{}", "  y"},
      {"{% if true +%}\nkeep{% endif %}", "{}", "\nkeep"},
      {"  {# comment #}\nline", "{}", "line"},
      {"a {# c #} b", "{}", "a  b"},
      {"\t{% set x = 1 %}\n{{ x }}", "{}", "1"},
      {"{% if true %}a{% endif %}  {% if true %}b{% endif %}", "{}", "a  b"},
      {"line\n{% if true %}\n  {% endif %}x", "{}", "line\nx"},
  });
}

TEST(JinjaWhitespace, MinusStripsAllWhitespace) {
  check_cases({
      {"a  \n {{- 'b' -}} \n  c", "{}", "abc"},
      {"a\n\n{%- if true -%}\n\n b \n\n{%- endif -%}\n\nc", "{}", "abc"},
      {"{%- for i in [1, 2, 3] -%}\n  {{ i }},\n{%- endfor %}", "{}", "1,2,3,"},
      {"a  {#- c -#}  b", "{}", "ab"},
      {"{{ 'a' }} {{- ' ' -}} {{ 'b' }}", "{}", "a b"},
      {"{{ 5 -}}\n{{ -3 }}", "{}", "5-3"},
  });
}

TEST(JinjaWhitespace, RawAndNewlines) {
  check_cases({
      {"{% raw %}\n  {{ x }}\n{% endraw %}\nz", "{}", "\n  {{ x }}\nz"},
      {"{%- raw -%}  {% if %}  {%- endraw %}", "{}", "{% if %}"},
      {"a\r\nb\rc\n", "{}", "a\nb\nc"},
      {"a\n\n", "{}", "a\n"},
      {"{{ 'x' }}\n", "{}", "x"},
  });
}

TEST(JinjaWhitespace, ChatTemplateShape) {
  // The shape of a real chat template: loops and ifs on their own lines,
  // output lines with explicit newlines.
  check_cases({
      {"{% for message in messages %}\n"
       "    {% if message.role == 'user' %}\n"
       "        {{ '<|user|>\\n' + message.content + '<|end|>\\n' }}\n"
       "    {% else %}\n"
       "        {{ '<|assistant|>\\n' + message.content + '<|end|>\\n' }}\n"
       "    {% endif %}\n"
       "{% endfor %}\n"
       "{% if add_generation_prompt %}\n"
       "    {{ '<|assistant|>\\n' }}\n"
       "{% endif %}",
       R"({"messages": [{"role": "user", "content": "Hi"}, {"role": "assistant", "content": "Yo"}],
           "add_generation_prompt": true})",
       "        <|user|>\nHi<|end|>\n\n        <|assistant|>\nYo<|end|>\n\n    <|assistant|>\n\n"},
  });
}

}  // namespace
}  // namespace tandem::jinja::testing
