// `tandem chat-template` on the tiny model: it prints exactly the text the
// server tokenizes (the renderer chat_completions_test.cpp checks against
// the server), and a failing template or request exits non-zero with the
// message.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>
#include <sys/wait.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>

#include "coordinator/chat/chat_template.h"
#include "tests/support/tiny_models.h"

namespace tandem {
namespace {

using nlohmann::json;
using test_support::kTinyTarget;

struct Outcome {
  int exit_code = -1;
  std::string out;  // stdout and stderr together
};

// Runs a shell command; its exit code and output (stdout and stderr together).
Outcome run(const std::string& command) {
  Outcome outcome;
  FILE* pipe = popen((command + " 2>&1").c_str(), "r");
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) outcome.out.append(buffer, n);
  const int status = pclose(pipe);
  outcome.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return outcome;
}

std::string chat_template_command(const std::string& model, const std::string& request_flag) {
  return std::string(TANDEM_BINARY_DIR) + "/tandem chat-template --model '" + model + "' --request " + request_flag;
}

// Runs `tandem chat-template --model MODEL --request @FILE` with the body in FILE.
Outcome run_chat_template(const std::string& model, const std::string& body) {
  const std::filesystem::path file = std::filesystem::temp_directory_path() /
                                     ("tandem_chat_request_" + std::to_string(getpid()) + ".json");
  std::ofstream(file) << body;
  const Outcome outcome = run(chat_template_command(model, "@" + file.string()));
  std::filesystem::remove(file);
  return outcome;
}

std::string server_rendering(const json& body) {
  api::RequestLimits limits;
  limits.max_tokens_limit = 1 << 20;
  return chat::ChatTemplate::load(kTinyTarget, "tiny").render(chat::parse_chat_request(body.dump(), limits));
}

TEST(ChatTemplateCommand, PrintsExactlyWhatTheServerRenders) {
  const json body = {{"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})}};
  const Outcome outcome = run_chat_template(kTinyTarget, body.dump());
  EXPECT_EQ(outcome.exit_code, 0) << outcome.out;
  EXPECT_EQ(outcome.out, "<|user|>\nHi<|end|>\n<|assistant|>\n");  // no newline added
  EXPECT_EQ(outcome.out, server_rendering(body));
}

TEST(ChatTemplateCommand, ContinueFinalMessageCutsAfterTheOpenMessage) {
  const json body = {{"messages", json::array({{{"role", "user"}, {"content", "Hi"}},
                                               {{"role", "assistant"}, {"content", "Once upon"}}})},
                     {"continue_final_message", true}};
  const Outcome outcome = run_chat_template(kTinyTarget, body.dump());
  EXPECT_EQ(outcome.exit_code, 0) << outcome.out;
  EXPECT_EQ(outcome.out, "<|user|>\nHi<|end|>\n<|assistant|>\nOnce upon");
  EXPECT_EQ(outcome.out, server_rendering(body));
}

TEST(ChatTemplateCommand, ARaisingTemplateExitsNonZeroWithItsMessage) {
  const json body = {{"messages", json::array({{{"role", "user"}, {"content", "Hi"}},
                                               {{"role", "system"}, {"content", "late"}}})}};
  const Outcome outcome = run_chat_template(kTinyTarget, body.dump());
  EXPECT_NE(outcome.exit_code, 0);
  EXPECT_NE(outcome.out.find("The system message must be the first message."), std::string::npos)
      << outcome.out;
}

TEST(ChatTemplateCommand, AnInvalidRequestExitsNonZeroNamingTheField) {
  const Outcome outcome = run_chat_template(kTinyTarget, R"({"messages": [{"role": "robot", "content": "x"}]})");
  EXPECT_NE(outcome.exit_code, 0);
  EXPECT_NE(outcome.out.find("messages[0].role"), std::string::npos) << outcome.out;
}

TEST(ChatTemplateCommand, TakesTheRequestInlineOrFromAFileThatMustExist) {
  const Outcome inline_request = run(chat_template_command(
      kTinyTarget, R"('{"messages": [{"role": "user", "content": "Hi"}], "add_generation_prompt": false}')"));
  EXPECT_EQ(inline_request.exit_code, 0) << inline_request.out;
  EXPECT_EQ(inline_request.out, "<|user|>\nHi<|end|>\n");
  const Outcome missing = run(chat_template_command(kTinyTarget, "@/nonexistent/request.json"));
  EXPECT_NE(missing.exit_code, 0);
  EXPECT_NE(missing.out.find("cannot read /nonexistent/request.json"), std::string::npos) << missing.out;
}

TEST(ChatTemplateCommand, AModelWithoutATemplateExitsNonZeroSayingSo) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("tandem_cli_no_template_" + std::to_string(getpid()));
  std::filesystem::create_directories(dir);
  std::ofstream(dir / "tokenizer_config.json") << R"({"eos_token": "</s>"})";
  const Outcome outcome =
      run_chat_template(dir.string(), R"({"messages": [{"role": "user", "content": "x"}]})");
  EXPECT_NE(outcome.exit_code, 0);
  EXPECT_NE(outcome.out.find("has no chat template"), std::string::npos) << outcome.out;
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace tandem
