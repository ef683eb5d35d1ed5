// The logit-processing fields of both endpoints (coordinator/api/
// processing_fields.h): values in range are read into the request, neutral
// values are accepted and ask for nothing, and each bad value is a 400
// naming its field.
#include <gtest/gtest.h>

#include <string>

#include "coordinator/api/completion_request.h"
#include "coordinator/chat/chat_request.h"

namespace tandem::api {
namespace {

RequestLimits processing_limits() {
  RequestLimits l;
  l.max_tokens_limit = 512;
  l.served_model_name = "tandem-tiny";
  l.vocab_size = 1000;
  return l;
}

CompletionRequest completion(const std::string& fields) {
  return parse_completion_request(R"({"prompt": "Hi", )" + fields + "}", processing_limits());
}

CompletionRequest chat(const std::string& fields) {
  return chat::parse_chat_request(R"({"messages": [{"role": "user", "content": "Hi"}], )" + fields + "}",
                            processing_limits())
      .sampling;
}

TEST(ProcessingFields, ValuesInRangeAreReadOnBothEndpoints) {
  const std::string fields =
      R"("presence_penalty": -2, "frequency_penalty": 1.5, "repetition_penalty": 1.2,
         "logit_bias": {"0": -100, "999": 100, "17": 2.5}, "min_p": 0.1, "min_tokens": 3,
         "stop_token_ids": [5, 6])";
  for (const CompletionRequest& r : {completion(fields), chat(fields)}) {
    EXPECT_EQ(r.processing.presence_penalty, -2.0f);
    EXPECT_EQ(r.processing.frequency_penalty, 1.5f);
    EXPECT_EQ(r.processing.repetition_penalty, 1.2f);
    ASSERT_EQ(r.processing.bias_tokens.size(), 3u);
    // nlohmann's object keeps keys sorted: "0", "17", "999".
    EXPECT_EQ(r.processing.bias_tokens, (std::vector<int32_t>{0, 17, 999}));
    EXPECT_EQ(r.processing.bias_values, (std::vector<float>{-100.0f, 2.5f, 100.0f}));
    EXPECT_DOUBLE_EQ(r.min_p, static_cast<double>(0.1f));
    EXPECT_EQ(r.processing.min_tokens, 3);
    EXPECT_EQ(r.stop_token_ids, (std::vector<int32_t>{5, 6}));
    EXPECT_TRUE(r.processing.active());
  }
}

TEST(ProcessingFields, NeutralValuesAreAcceptedAndAskForNothing) {
  const std::string fields =
      R"("presence_penalty": 0, "frequency_penalty": 0.0, "repetition_penalty": 1,
         "logit_bias": {}, "min_p": 0, "min_tokens": 0, "stop_token_ids": [])";
  for (const CompletionRequest& r : {completion(fields), chat(fields)}) {
    EXPECT_FALSE(r.processing.active());
    EXPECT_EQ(r.min_p, 0.0);
    EXPECT_TRUE(r.stop_token_ids.empty());
  }
  EXPECT_FALSE(completion(R"("logit_bias": null, "min_p": null)").processing.active());
}

TEST(ProcessingFields, BadValuesAreA400NamingTheField) {
  const struct {
    std::string fields, param;
  } cases[] = {
      {R"("presence_penalty": 2.5)", "presence_penalty"},
      {R"("presence_penalty": "1")", "presence_penalty"},
      {R"("frequency_penalty": -2.01)", "frequency_penalty"},
      {R"("repetition_penalty": 0)", "repetition_penalty"},
      {R"("repetition_penalty": 2.5)", "repetition_penalty"},
      {R"("logit_bias": [])", "logit_bias"},
      {R"("logit_bias": {"abc": 1})", "logit_bias"},
      {R"("logit_bias": {"-1": 1})", "logit_bias"},
      {R"("logit_bias": {"1000": 1})", "logit_bias"},
      {R"("logit_bias": {"12345678901234": 1})", "logit_bias"},
      {R"("logit_bias": {"5": 101})", "logit_bias"},
      {R"("logit_bias": {"5": "up"})", "logit_bias"},
      {R"("min_p": -0.1)", "min_p"},
      {R"("min_p": 1.01)", "min_p"},
      {R"("min_tokens": -1)", "min_tokens"},
      {R"("min_tokens": 1.5)", "min_tokens"},
      {R"("stop_token_ids": 5)", "stop_token_ids"},
      {R"("stop_token_ids": [1000])", "stop_token_ids"},
      {R"("stop_token_ids": [-1])", "stop_token_ids"},
  };
  for (const auto& c : cases) {
    for (const bool is_chat : {false, true}) {
      SCOPED_TRACE(c.fields + (is_chat ? " (chat)" : " (completions)"));
      try {
        is_chat ? chat(c.fields) : completion(c.fields);
        ADD_FAILURE() << "accepted";
      } catch (const ApiError& error) {
        EXPECT_EQ(error.status, 400);
        EXPECT_EQ(error.param.value_or("<none>"), c.param) << error.message;
      }
    }
  }
}

TEST(ProcessingFields, LogitBiasTakesAtMost300Entries) {
  std::string bias;
  for (int i = 0; i < 301; ++i) bias += (i ? ", \"" : "\"") + std::to_string(i) + "\": 1";
  EXPECT_EQ(completion(R"("logit_bias": {)" + bias.substr(0, bias.rfind(',')) + "}")
                .processing.bias_tokens.size(),
            300u);
  try {
    completion(R"("logit_bias": {)" + bias + "}");
    ADD_FAILURE() << "301 entries accepted";
  } catch (const ApiError& error) {
    EXPECT_EQ(error.param.value_or(""), "logit_bias");
  }
}

}  // namespace
}  // namespace tandem::api
