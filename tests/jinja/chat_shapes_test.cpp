// The constructs of the chat templates Tandem serves (Qwen3, Llama 3.1,
// DeepSeek V3, Gemma 3), in templates written for this test: the last
// user turn found through messages[::-1] and a namespace, thinking text
// cut with split('</think>'), tools as JSON, dates from strftime_now,
// role alternation enforced with raise_exception. Expected strings are
// Python Jinja2's output under transformers' settings.
#include "tests/jinja/render_helpers.h"

namespace tandem::jinja::testing {
namespace {

const char* const kConversation = R"({
  "messages": [
    {"role": "system", "content": "Be brief."},
    {"role": "user", "content": "Hi, café ☕"},
    {"role": "assistant", "content": "<think>\nponder\n</think>\n\nHello!"},
    {"role": "user", "content": "  Weather in Paris?  "}
  ],
  "tools": [{"type": "function", "function": {"name": "get_weather", "description": "Get the weather",
             "parameters": {"type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]}}}],
  "add_generation_prompt": true, "enable_thinking": false, "bos_token": "<s>"})";

TEST(JinjaChatShapes, QwenStyle) {
  check_cases({{
      "{%- set ns = namespace(multi_step_tool=true, last_query_index=messages|length - 1) %}\n"
      "{%- for message in messages[::-1] %}\n"
      "    {%- set index = (messages|length - 1) - loop.index0 %}\n"
      "    {%- if ns.multi_step_tool and message.role == \"user\" and message.content is string %}\n"
      "        {%- set ns.multi_step_tool = false %}\n"
      "        {%- set ns.last_query_index = index %}\n"
      "    {%- endif %}\n"
      "{%- endfor %}\n"
      "{%- if tools %}\n"
      "    {{- '<|im_start|>system\\n' }}\n"
      "    {%- for tool in tools %}\n"
      "        {{- \"\\n\" }}\n"
      "        {{- tool | tojson }}\n"
      "    {%- endfor %}\n"
      "{%- endif %}\n"
      "{%- for message in messages %}\n"
      "    {%- if message.role == \"assistant\" %}\n"
      "        {%- set content = message.content %}\n"
      "        {%- if '</think>' in content %}\n"
      "            {%- set reasoning = content.split('</think>')[0].rstrip('\\n').split('<think>')[-1].lstrip('\\n') %}\n"
      "            {%- set content = content.split('</think>')[-1].lstrip('\\n') %}\n"
      "        {%- endif %}\n"
      "        {%- if loop.index0 > ns.last_query_index %}\n"
      "            {{- '<|im_start|>assistant\\n<think>\\n' + reasoning + '\\n</think>\\n\\n' + content }}\n"
      "        {%- else %}\n"
      "            {{- '<|im_start|>assistant\\n' + content }}\n"
      "        {%- endif %}\n"
      "        {{- '<|im_end|>\\n' }}\n"
      "    {%- else %}\n"
      "        {{- '<|im_start|>' + message.role + '\\n' + message.content + '<|im_end|>' + '\\n' }}\n"
      "    {%- endif %}\n"
      "{%- endfor %}\n"
      "{%- if add_generation_prompt %}\n"
      "    {{- '<|im_start|>assistant\\n' }}\n"
      "    {%- if enable_thinking is defined and enable_thinking is false %}\n"
      "        {{- '<think>\\n\\n</think>\\n\\n' }}\n"
      "    {%- endif %}\n"
      "{%- endif %}\n",
      kConversation,
      "<|im_start|>system\n\n{\"type\": \"function\", \"function\": {\"name\": \"get_weather\", \"description\": "
      "\"Get the weather\", \"parameters\": {\"type\": \"object\", \"properties\": {\"city\": {\"type\": \"string\"}}, "
      "\"required\": [\"city\"]}}}<|im_start|>system\nBe brief.<|im_end|>\n<|im_start|>user\nHi, café ☕<|im_end|>\n"
      "<|im_start|>assistant\nHello!<|im_end|>\n<|im_start|>user\n  Weather in Paris?  <|im_end|>\n"
      "<|im_start|>assistant\n<think>\n\n</think>\n\n",
  }});
}

TEST(JinjaChatShapes, LlamaStyle) {
  check_cases({{
      "{{- bos_token }}\n"
      "{%- if not date_string is defined %}\n"
      "    {%- set date_string = strftime_now(\"%d %b %Y\") %}\n"
      "{%- endif %}\n"
      "{%- if messages[0]['role'] == 'system' %}\n"
      "    {%- set system_message = messages[0]['content']|trim %}\n"
      "    {%- set messages = messages[1:] %}\n"
      "{%- else %}\n"
      "    {%- set system_message = \"\" %}\n"
      "{%- endif %}\n"
      "{{- \"<|start_header_id|>system<|end_header_id|>\\n\\n\" }}\n"
      "{{- \"Today Date: \" + date_string + \"\\n\\n\" }}\n"
      "{%- for t in tools %}\n"
      "    {{- t | tojson(indent=4) }}\n"
      "    {{- \"\\n\\n\" }}\n"
      "{%- endfor %}\n"
      "{{- system_message }}\n"
      "{{- \"<|eot_id|>\" }}\n"
      "{%- for message in messages | reject('equalto', none) %}\n"
      "    {%- if not (message.role == 'ipython' or message.role == 'tool' or 'tool_calls' in message) %}\n"
      "        {{- '<|start_header_id|>' + message['role'] + '<|end_header_id|>\\n\\n'+ message['content'] | trim + "
      "'<|eot_id|>' }}\n"
      "    {%- endif %}\n"
      "{%- endfor %}\n"
      "{%- if add_generation_prompt %}\n"
      "    {{- '<|start_header_id|>assistant<|end_header_id|>\\n\\n' }}\n"
      "{%- endif %}\n",
      kConversation,
      "<s><|start_header_id|>system<|end_header_id|>\n\nToday Date: 14 Nov 2023\n\n{\n    \"type\": \"function\",\n"
      "    \"function\": {\n        \"name\": \"get_weather\",\n        \"description\": \"Get the weather\",\n"
      "        \"parameters\": {\n            \"type\": \"object\",\n            \"properties\": {\n"
      "                \"city\": {\n                    \"type\": \"string\"\n                }\n            },\n"
      "            \"required\": [\n                \"city\"\n            ]\n        }\n    }\n}\n\nBe brief.<|eot_id|>"
      "<|start_header_id|>user<|end_header_id|>\n\nHi, café ☕<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n"
      "<think>\nponder\n</think>\n\nHello!<|eot_id|><|start_header_id|>user<|end_header_id|>\n\nWeather in Paris?"
      "<|eot_id|><|start_header_id|>assistant<|end_header_id|>\n\n",
  }});
}

TEST(JinjaChatShapes, DeepSeekStyle) {
  check_cases({{
      "{% if not add_generation_prompt is defined %}{% set add_generation_prompt = false %}{% endif %}"
      "{% set ns = namespace(is_first=false, is_tool=false, is_output_first=true, system_prompt='', "
      "is_first_sp=true) %}"
      "{%- for message in messages %}{%- if message['role'] == 'system' %}{%- if ns.is_first_sp %}"
      "{% set ns.system_prompt = ns.system_prompt + message['content'] %}{% set ns.is_first_sp = false %}"
      "{%- else %}{% set ns.system_prompt = ns.system_prompt + '\\n\\n' + message['content'] %}{%- endif %}"
      "{%- endif %}{%- endfor %}{{ bos_token }}{{ ns.system_prompt }}"
      "{%- for message in messages %}{%- if message['role'] == 'user' %}{%- set ns.is_tool = false -%}"
      "{{'<｜User｜>' + message['content']}}{%- endif %}"
      "{%- if message['role'] == 'assistant' and message['content'] is not none %}"
      "{%- set content = message['content'] %}{%- if '</think>' in content %}"
      "{%- set content = content.split('</think>')[-1] %}{%- endif %}"
      "{{'<｜Assistant｜>' + content + '<｜end▁of▁sentence｜>'}}{%- endif %}{%- endfor -%}"
      "{% if add_generation_prompt and not ns.is_tool %}{{'<｜Assistant｜>'}}{% endif %}",
      kConversation,
      "<s>Be brief.<｜User｜>Hi, café ☕<｜Assistant｜>\n\nHello!<｜end▁of▁sentence｜><｜User｜>  Weather in Paris?  "
      "<｜Assistant｜>",
  }});
}

TEST(JinjaChatShapes, GemmaStyle) {
  const char* gemma =
      "{{ bos_token }}\n"
      "{%- if messages[0]['role'] == 'system' -%}\n"
      "    {%- set first_user_prefix = messages[0]['content'] + '\\n\\n' -%}\n"
      "    {%- set loop_messages = messages[1:] -%}\n"
      "{%- else -%}\n"
      "    {%- set first_user_prefix = \"\" -%}\n"
      "    {%- set loop_messages = messages -%}\n"
      "{%- endif -%}\n"
      "{%- for message in loop_messages -%}\n"
      "    {%- if (message['role'] == 'user') != (loop.index0 % 2 == 0) -%}\n"
      "        {{ raise_exception(\"Conversation roles must alternate user/assistant/user/assistant/...\") }}\n"
      "    {%- endif -%}\n"
      "    {%- set role = \"model\" if message['role'] == 'assistant' else message['role'] -%}\n"
      "    {{ '<start_of_turn>' + role + '\\n' + (first_user_prefix if loop.first else \"\") }}\n"
      "    {{- message['content'] | trim }}\n"
      "    {{- '<end_of_turn>\\n' }}\n"
      "{%- endfor -%}\n"
      "{%- if add_generation_prompt -%}\n"
      "    {{'<start_of_turn>model\\n'}}\n"
      "{%- endif -%}\n";
  check_cases({{gemma, kConversation,
                 "<s><start_of_turn>user\nBe brief.\n\nHi, café ☕<end_of_turn>\n<start_of_turn>model\n<think>\nponder\n"
                 "</think>\n\nHello!<end_of_turn>\n<start_of_turn>user\nWeather in Paris?<end_of_turn>\n"
                 "<start_of_turn>model\n"}});
  EXPECT_EQ(error_of(gemma, R"({"messages": [{"role": "assistant", "content": "x"}]})"),
            "chat template: Conversation roles must alternate user/assistant/user/assistant/...");
}

}  // namespace
}  // namespace tandem::jinja::testing
