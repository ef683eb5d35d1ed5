#include "coordinator/chat/chat_template.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <unistd.h>

namespace tandem::chat {
namespace {

namespace fs = std::filesystem;

ChatRequest request_of(const std::string& body) {
  api::RequestLimits limits;
  limits.max_tokens_limit = 100;
  return parse_chat_request(body, limits);
}

const char* kHi = R"({"messages": [{"role": "user", "content": "Hi"}]})";

// A model directory of its own for one test, removed afterwards.
class ModelDir {
 public:
  ModelDir() : path_(fs::temp_directory_path() / ("tandem_chat_template_" + std::to_string(getpid()) + "_" +
                                                  std::to_string(counter_++))) {
    fs::create_directories(path_);
  }
  ~ModelDir() { fs::remove_all(path_); }
  void write(const std::string& name, const std::string& text) const { std::ofstream(path_ / name) << text; }
  const fs::path& path() const { return path_; }

 private:
  static inline int counter_ = 0;
  fs::path path_;
};

api::ApiError render_error(const ChatTemplate& chat_template, const std::string& body) {
  try {
    chat_template.render(request_of(body));
  } catch (const api::ApiError& error) {
    return error;
  }
  ADD_FAILURE() << "rendered: " << body;
  return api::internal("rendered");
}

TEST(ChatTemplate, ReadsTheConfigsTemplateWithBosAndEosInObjectForm) {
  ModelDir dir;
  dir.write("tokenizer_config.json", R"({"bos_token": {"content": "<s>", "lstrip": false}, "eos_token": "</s>",
      "chat_template": "{{ bos_token }}{% for m in messages %}[{{ m.role }}]{{ m.content }}{{ eos_token }}{% endfor %}"})");
  const ChatTemplate chat_template = ChatTemplate::load(dir.path(), "m");
  ASSERT_TRUE(chat_template.available()) << chat_template.unavailable_reason();
  EXPECT_EQ(chat_template.render(request_of(kHi)), "<s>[user]Hi</s>");
  EXPECT_EQ(chat_template.tool_call_format(), ToolCallFormat::none);
}

TEST(ChatTemplate, AListOfNamedTemplatesUsesDefault) {
  ModelDir dir;
  dir.write("tokenizer_config.json", R"({"chat_template": [{"name": 3, "template": "ODD"}, {"name": "tool_use", "template": "TOOLS"},
      {"name": "default", "template": "DEFAULT {{ messages | length }}"}]})");
  EXPECT_EQ(ChatTemplate::load(dir.path(), "m").render(request_of(kHi)), "DEFAULT 1");
  ModelDir no_default;
  no_default.write("tokenizer_config.json", R"({"chat_template": [{"name": "tool_use", "template": "T"}]})");
  const ChatTemplate broken = ChatTemplate::load(no_default.path(), "m");
  EXPECT_FALSE(broken.available());
  EXPECT_NE(broken.unavailable_reason().find("default"), std::string::npos) << broken.unavailable_reason();
}

TEST(ChatTemplate, AJinjaFileBesideTheConfigWins) {
  ModelDir dir;
  dir.write("tokenizer_config.json", R"({"chat_template": "CONFIG"})");
  dir.write("chat_template.jinja", "FILE <tool_call>{{ tools | length }}");
  const ChatTemplate chat_template = ChatTemplate::load(dir.path(), "m");
  EXPECT_EQ(chat_template.render(request_of(
                R"({"messages": [{"role": "user", "content": "x"}], "tools": [{"type": "function", "function": {"name": "f"}}]})")),
            "FILE <tool_call>1");
  EXPECT_EQ(chat_template.tool_call_format(), ToolCallFormat::hermes);
}

TEST(ChatTemplate, KwargsAndGenerationPromptReachTheTemplate) {
  const ChatTemplate chat_template = ChatTemplate::from_source(
      "{% if enable_thinking is defined and not enable_thinking %}no-think {% endif %}"
      "{% if add_generation_prompt %}GEN{% endif %}",
      {});
  EXPECT_EQ(chat_template.render(request_of(kHi)), "GEN");
  EXPECT_EQ(chat_template.render(request_of(
                R"({"messages": [{"role": "user", "content": "x"}], "chat_template_kwargs": {"enable_thinking": false},
                    "add_generation_prompt": false})")),
            "no-think ");
}

TEST(ChatTemplate, ContinueFinalMessageCutsTheRenderedText) {
  const ChatTemplate chat_template = ChatTemplate::from_source(
      "{% for m in messages %}<{{ m.role }}>{{ m.content }}</turn>\n{% endfor %}"
      "{% if add_generation_prompt %}<assistant>{% endif %}",
      {});
  EXPECT_EQ(chat_template.render(request_of(R"({"messages": [{"role": "user", "content": "Hi"},
      {"role": "assistant", "content": "Once"}], "continue_final_message": true})")),
            "<user>Hi</turn>\n<assistant>Once");
  // A final message of tool calls only has no content to continue: a 400, not a crash.
  const api::ApiError error = render_error(chat_template, R"({"messages": [{"role": "user", "content": "Hi"},
      {"role": "assistant", "tool_calls": [{"type": "function", "function": {"name": "f", "arguments": "{}"}}]}],
      "continue_final_message": true})");
  EXPECT_EQ(error.param, "continue_final_message");
}

TEST(ChatTemplate, RaiseExceptionAndRenderErrorsAre400sOnMessages) {
  const ChatTemplate raising = ChatTemplate::from_source(
      "{% if messages[0].role != 'system' %}{{ raise_exception('Conversations must start with a system message') }}{% endif %}",
      {});
  const api::ApiError error = render_error(raising, kHi);
  EXPECT_EQ(error.status, 400);
  EXPECT_EQ(error.param, "messages");
  EXPECT_NE(error.message.find("Conversations must start with a system message"), std::string::npos) << error.message;
  const ChatTemplate failing = ChatTemplate::from_source("{{ messages[0].content.nope() }}", {});
  EXPECT_EQ(render_error(failing, kHi).param, "messages");
}

TEST(ChatTemplate, MissingOrUnparsableTemplatesSayWhy) {
  ModelDir none;
  none.write("tokenizer_config.json", R"({"eos_token": "</s>"})");
  const ChatTemplate missing = ChatTemplate::load(none.path(), "tiny-model");
  EXPECT_FALSE(missing.available());
  const api::ApiError error = render_error(missing, kHi);
  EXPECT_EQ(error.status, 400);
  EXPECT_NE(error.message.find("tiny-model"), std::string::npos) << error.message;
  EXPECT_NE(error.message.find("has no chat template"), std::string::npos) << error.message;
  EXPECT_NE(error.message.find("chat_template.jinja"), std::string::npos) << error.message;

  ModelDir bad;
  bad.write("tokenizer_config.json", R"({"chat_template": "{% for m in messages %}unclosed"})");
  const ChatTemplate unparsable = ChatTemplate::load(bad.path(), "m");
  EXPECT_FALSE(unparsable.available());
  EXPECT_NE(unparsable.unavailable_reason().find("chat template line"), std::string::npos)
      << unparsable.unavailable_reason();
}

}  // namespace
}  // namespace tandem::chat
