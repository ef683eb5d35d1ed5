#include "coordinator/api/completion_request.h"

#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>

#include "coordinator/api/api_error.h"
#include "coordinator/api/json_depth.h"

namespace tandem::api {
namespace {

using nlohmann::json;

RequestLimits test_limits() {
  RequestLimits limits;
  limits.default_max_tokens = 16;
  limits.default_temperature = 0.8;
  limits.default_top_p = 0.95;
  limits.default_top_k = 7;
  limits.max_tokens_limit = 512;
  limits.max_stop_sequences = 4;
  limits.served_model_name = "tandem-tiny";
  limits.vocab_size = 1000;
  return limits;
}

CompletionRequest parse(const std::string& body) {
  return parse_completion_request(body, test_limits());
}

// The ApiError a body is refused with; fails the test if it is accepted.
ApiError rejection(const std::string& body) {
  try {
    parse(body);
  } catch (const ApiError& error) {
    return error;
  }
  ADD_FAILURE() << "accepted a body that must be refused: " << body;
  return internal("not refused");
}

// error_json parsed back: exactly OpenAI's shape and the error's values.
void expect_openai_shape(const ApiError& error) {
  const json body = json::parse(error_json(error));
  ASSERT_TRUE(body.is_object());
  ASSERT_EQ(body.size(), 1u);
  const json& inner = body.at("error");
  ASSERT_EQ(inner.size(), 4u) << inner.dump();
  // Messages may quote the client's bytes; invalid UTF-8 among them arrives
  // as U+FFFD, exactly as nlohmann's own replacement writes it.
  const json message_as_sent = json::parse(
      json(error.message).dump(-1, ' ', false, json::error_handler_t::replace));
  EXPECT_EQ(inner.at("message"), message_as_sent);
  EXPECT_EQ(inner.at("type"), error.type);
  if (error.param) {
    EXPECT_EQ(inner.at("param"), *error.param);
  } else {
    EXPECT_TRUE(inner.at("param").is_null());
  }
  if (error.code) {
    EXPECT_EQ(inner.at("code"), *error.code);
  } else {
    EXPECT_TRUE(inner.at("code").is_null());
  }
}

std::string with_prompt(const std::string& fields) {
  return R"({"prompt": "Hi")" + (fields.empty() ? std::string() : ", " + fields) + "}";
}

TEST(CompletionRequest, AbsentFieldsTakeTheServersDefaults) {
  const CompletionRequest request = parse(R"({"prompt": "Once upon"})");
  EXPECT_EQ(request.model, "tandem-tiny");
  EXPECT_EQ(std::get<std::string>(request.prompts.at(0)), "Once upon");
  EXPECT_EQ(request.max_tokens, 16);
  EXPECT_DOUBLE_EQ(request.temperature, 0.8);
  EXPECT_DOUBLE_EQ(request.top_p, 0.95);
  EXPECT_EQ(request.top_k, 7);
  EXPECT_FALSE(request.seed.has_value());
  EXPECT_TRUE(request.stop.empty());
  EXPECT_FALSE(request.stream);
  EXPECT_FALSE(request.include_usage);
  EXPECT_FALSE(request.speculation.gamma.has_value());
  EXPECT_FALSE(request.speculation.drafter.has_value());
}

TEST(CompletionRequest, NullFieldsAreTheSameAsAbsentOnes) {
  const CompletionRequest request = parse(with_prompt(
      R"("model": null, "max_tokens": null, "temperature": null, "top_p": null, "top_k": null,
         "seed": null, "stop": null, "stream": null, "stream_options": null, "n": null,
         "best_of": null, "echo": null, "logprobs": null, "presence_penalty": null,
         "frequency_penalty": null, "logit_bias": null, "suffix": null, "user": null,
         "speculation": null)"));
  EXPECT_EQ(request.model, "tandem-tiny");
  EXPECT_EQ(request.max_tokens, 16);
  EXPECT_DOUBLE_EQ(request.temperature, 0.8);
  EXPECT_EQ(request.top_k, 7);
  EXPECT_FALSE(request.seed.has_value());
  EXPECT_FALSE(request.speculation.drafter.has_value());
}

struct AcceptCase {
  std::string body;
  std::function<void(const CompletionRequest&)> check;
};

using Ids = std::vector<int32_t>;

TEST(CompletionRequest, AcceptsEveryFieldInItsValidForms) {
  const uint64_t max_u64 = std::numeric_limits<uint64_t>::max();
  const std::vector<AcceptCase> cases = {
      {R"({"prompt": "Hi", "model": "tandem-tiny"})", [](auto& r) { EXPECT_EQ(r.model, "tandem-tiny"); }},
      {R"({"prompt": "h\u00e9llo \ud83d\ude00"})",
       [](auto& r) { EXPECT_EQ(std::get<std::string>(r.prompts.at(0)), "h\xc3\xa9llo \xf0\x9f\x98\x80"); }},
      {R"({"prompt": [1, 2, 999]})", [](auto& r) { EXPECT_EQ(std::get<Ids>(r.prompts.at(0)), (Ids{1, 2, 999})); }},
      {R"({"prompt": [0]})", [](auto& r) { EXPECT_EQ(std::get<Ids>(r.prompts.at(0)), (Ids{0})); }},
      {R"({"prompt": [3.0]})", [](auto& r) { EXPECT_EQ(std::get<Ids>(r.prompts.at(0)), (Ids{3})); }},
      {R"({"prompt": ["Only one"]})", [](auto& r) { EXPECT_EQ(std::get<std::string>(r.prompts.at(0)), "Only one"); }},
      {R"({"prompt": [[5, 6]]})", [](auto& r) { EXPECT_EQ(std::get<Ids>(r.prompts.at(0)), (Ids{5, 6})); }},
      {with_prompt(R"("max_tokens": 1)"), [](auto& r) { EXPECT_EQ(r.max_tokens, 1); }},
      {with_prompt(R"("max_tokens": 0, "echo": true)"),
       [](auto& r) { EXPECT_EQ(r.max_tokens, 0); EXPECT_TRUE(r.echo); }},
      {with_prompt(R"("echo": true, "logprobs": 0)"),
       [](auto& r) { EXPECT_TRUE(r.echo); EXPECT_EQ(r.logprobs, 0); }},
      {with_prompt(R"("logprobs": 20)"), [](auto& r) { EXPECT_EQ(r.logprobs, 20); EXPECT_FALSE(r.echo); }},
      {with_prompt(R"("logprobs": null, "echo": null)"),
       [](auto& r) { EXPECT_EQ(r.logprobs, -1); EXPECT_FALSE(r.echo); }},
      {with_prompt(R"("max_tokens": 512)"), [](auto& r) { EXPECT_EQ(r.max_tokens, 512); }},
      {with_prompt(R"("max_tokens": 64.0)"), [](auto& r) { EXPECT_EQ(r.max_tokens, 64); }},
      {with_prompt(R"("max_tokens": 1.2e2)"), [](auto& r) { EXPECT_EQ(r.max_tokens, 120); }},
      {with_prompt(R"("temperature": 0)"), [](auto& r) { EXPECT_EQ(r.temperature, 0.0); }},
      {with_prompt(R"("temperature": 2)"), [](auto& r) { EXPECT_EQ(r.temperature, 2.0); }},
      {with_prompt(R"("temperature": 0.7)"), [](auto& r) { EXPECT_DOUBLE_EQ(r.temperature, 0.7); }},
      {with_prompt(R"("top_p": 1)"), [](auto& r) { EXPECT_EQ(r.top_p, 1.0); }},
      {with_prompt(R"("top_p": 0.01)"), [](auto& r) { EXPECT_DOUBLE_EQ(r.top_p, 0.01); }},
      {with_prompt(R"("top_k": -1)"), [](auto& r) { EXPECT_EQ(r.top_k, 0); }},
      {with_prompt(R"("top_k": 0)"), [](auto& r) { EXPECT_EQ(r.top_k, 0); }},
      {with_prompt(R"("top_k": 40)"), [](auto& r) { EXPECT_EQ(r.top_k, 40); }},
      {with_prompt(R"("seed": 0)"), [](auto& r) { EXPECT_EQ(r.seed, 0u); }},
      {with_prompt(R"("seed": 42)"), [](auto& r) { EXPECT_EQ(r.seed, 42u); }},
      {with_prompt(R"("seed": -1)"), [=](auto& r) { EXPECT_EQ(r.seed, max_u64); }},
      {with_prompt(R"("seed": 18446744073709551615)"), [=](auto& r) { EXPECT_EQ(r.seed, max_u64); }},
      {with_prompt(R"("seed": -9223372036854775808)"), [](auto& r) { EXPECT_EQ(r.seed, uint64_t{1} << 63); }},
      {with_prompt(R"("seed": 7.0)"), [](auto& r) { EXPECT_EQ(r.seed, 7u); }},
      {with_prompt(R"("seed": -2e3)"), [](auto& r) { EXPECT_EQ(r.seed, static_cast<uint64_t>(-2000)); }},
      {with_prompt(R"("stop": "\n")"), [](auto& r) { EXPECT_EQ(r.stop, std::vector<std::string>{"\n"}); }},
      {with_prompt(R"("stop": ["a", "b", "c", "d"])"),
       [](auto& r) { EXPECT_EQ(r.stop, (std::vector<std::string>{"a", "b", "c", "d"})); }},
      {with_prompt(R"("stop": [])"), [](auto& r) { EXPECT_TRUE(r.stop.empty()); }},
      {with_prompt(R"("stream": true)"), [](auto& r) { EXPECT_TRUE(r.stream); EXPECT_FALSE(r.include_usage); }},
      {with_prompt(R"("stream": false)"), [](auto& r) { EXPECT_FALSE(r.stream); }},
      {with_prompt(R"("stream": true, "stream_options": {"include_usage": true})"),
       [](auto& r) { EXPECT_TRUE(r.include_usage); }},
      {with_prompt(R"("stream": true, "stream_options": {"include_usage": false})"),
       [](auto& r) { EXPECT_FALSE(r.include_usage); }},
      {with_prompt(R"("stream": true, "stream_options": {})"), [](auto& r) { EXPECT_FALSE(r.include_usage); }},
      {with_prompt(R"("n": 1, "best_of": 1, "echo": false, "presence_penalty": 0,
                      "frequency_penalty": 0.0, "logit_bias": {}, "user": "u-1")"),
       [](auto& r) { EXPECT_EQ(std::get<std::string>(r.prompts.at(0)), "Hi"); }},
      {with_prompt(R"("speculation": {"gamma": 4, "drafter": "ngram"})"),
       [](auto& r) {
         EXPECT_EQ(r.speculation.gamma, (GammaChoice{.automatic = false, .gamma = 4}));
         EXPECT_EQ(r.speculation.drafter, DrafterChoice::ngram);
       }},
      {with_prompt(R"("speculation": {"gamma": "auto", "drafter": "model"})"),
       [](auto& r) {
         EXPECT_TRUE(r.speculation.gamma->automatic);
         EXPECT_EQ(r.speculation.drafter, DrafterChoice::model);
       }},
      {with_prompt(R"("speculation": {"gamma": 0})"),
       [](auto& r) {
         EXPECT_EQ(r.speculation.gamma, (GammaChoice{.automatic = false, .gamma = 0}));
         EXPECT_FALSE(r.speculation.drafter.has_value());
       }},
      {with_prompt(R"("speculation": {"gamma": 64})"), [](auto& r) { EXPECT_EQ(r.speculation.gamma->gamma, 64); }},
      {with_prompt(R"("speculation": {"pipeline": false})"),
       [](auto& r) { EXPECT_FALSE(r.speculation.pipeline); }},
      {with_prompt(R"("speculation": {"gamma": 2})"), [](auto& r) { EXPECT_TRUE(r.speculation.pipeline); }},
      {with_prompt(R"("speculation": {"drafter": "none"})"),
       [](auto& r) {
         EXPECT_EQ(r.speculation.drafter, DrafterChoice::none);
         EXPECT_EQ(r.speculation.gamma, (GammaChoice{.automatic = false, .gamma = 0}));
       }},
      {with_prompt(R"("speculation": false)"),
       [](auto& r) {
         EXPECT_EQ(r.speculation.drafter, DrafterChoice::none);
         EXPECT_EQ(r.speculation.gamma, (GammaChoice{.automatic = false, .gamma = 0}));
       }},
      {with_prompt(R"("speculation": true)"),
       [](auto& r) {
         EXPECT_FALSE(r.speculation.drafter.has_value());
         EXPECT_FALSE(r.speculation.gamma.has_value());
       }},
      {with_prompt(R"("speculation": {})"), [](auto& r) { EXPECT_FALSE(r.speculation.gamma.has_value()); }},
      {with_prompt(R"("speculation": {})"),
       [](auto& r) { EXPECT_EQ(r.speculation.coupling, CouplingSetting::automatic); }},
      {with_prompt(R"("speculation": {"coupling": "gumbel"})"),
       [](auto& r) { EXPECT_EQ(r.speculation.coupling, CouplingSetting::gumbel); }},
      {with_prompt(R"("speculation": {"coupling": "rejection", "gamma": 3})"),
       [](auto& r) {
         EXPECT_EQ(r.speculation.coupling, CouplingSetting::rejection);
         EXPECT_EQ(r.speculation.gamma, (GammaChoice{.automatic = false, .gamma = 3}));
       }},
      {with_prompt(R"("speculation": {"coupling": "auto"})"),
       [](auto& r) { EXPECT_EQ(r.speculation.coupling, CouplingSetting::automatic); }},
      {with_prompt(R"("speculation": {"coupling": null})"),
       [](auto& r) { EXPECT_EQ(r.speculation.coupling, CouplingSetting::automatic); }},
      // Plain decoding samples by the coupling too (a seed's text is the same with speculation off).
      {with_prompt(R"("speculation": {"drafter": "none", "coupling": "gumbel"})"),
       [](auto& r) { EXPECT_EQ(r.speculation.coupling, CouplingSetting::gumbel); }},
  };
  for (const AcceptCase& c : cases) {
    SCOPED_TRACE(c.body);
    try {
      c.check(parse(c.body));
    } catch (const ApiError& error) {
      ADD_FAILURE() << "refused: " << error.message;
    }
  }
}

struct RejectCase {
  std::string body;
  int status;
  std::optional<std::string> param;
  std::string message_part;  // a fragment the message must contain
};

void check_rejections(const std::vector<RejectCase>& cases) {
  for (const RejectCase& c : cases) {
    SCOPED_TRACE(c.body);
    const ApiError error = rejection(c.body);
    EXPECT_EQ(error.status, c.status);
    EXPECT_EQ(error.param, c.param);
    EXPECT_NE(error.message.find(c.message_part), std::string::npos) << error.message;
    expect_openai_shape(error);
  }
}

TEST(CompletionRequest, RefusesBadPromptsNamingThePrompt) {
  check_rejections({
      {R"({})", 400, "prompt", "Missing required parameter: 'prompt'"},
      {R"({"prompt": null})", 400, "prompt", "Missing required parameter"},
      {R"({"prompt": ""})", 400, "prompt", "empty"},
      {R"({"prompt": []})", 400, "prompt", "empty"},
      {R"({"prompt": [[]]})", 400, "prompt", "empty"},
      {R"({"prompt": [""]})", 400, "prompt", "empty"},
      {R"({"prompt": ["a", ""]})", 400, "prompt", "Invalid 'prompt[1]': the prompt is empty"},
      {R"({"prompt": [[1], []]})", 400, "prompt", "Invalid 'prompt[1]': the prompt is empty"},
      {R"({"prompt": ["a", 5]})", 400, "prompt", "'prompt[1]': expected a string or an array of token ids, but got an integer"},
      {R"({"prompt": [[1], [2, "x"]]})", 400, "prompt", "'prompt[1][1]': expected an integer token id"},
      {R"({"prompt": ["a", null]})", 400, "prompt", "'prompt[1]'"},
      {R"({"prompt": [1, "a"]})", 400, "prompt", "expected an integer token id, but got a string"},
      {R"({"prompt": [1.5]})", 400, "prompt", "but got a decimal"},
      {R"({"prompt": [-1]})", 400, "prompt", "outside this model's vocabulary [0, 1000)"},
      {R"({"prompt": [1000]})", 400, "prompt", "token id 1000"},
      {R"({"prompt": [[3, 4000]]})", 400, "prompt", "prompt[0][1]"},
      {R"({"prompt": [99999999999999999999]})", 400, "prompt", "vocabulary"},
      {R"({"prompt": [true]})", 400, "prompt", "'prompt[0]': expected a string or an array of token ids"},
      {R"({"prompt": {"text": "hi"}})", 400, "prompt", "but got an object"},
      {R"({"prompt": 5})", 400, "prompt", "but got an integer"},
  });
}

TEST(CompletionRequest, RefusesBadSamplingFieldsNamingEach) {
  check_rejections({
      {with_prompt(R"("max_tokens": 0)"), 400, "max_tokens", "only with echo"},
      {with_prompt(R"("max_tokens": 0, "echo": false)"), 400, "max_tokens", "only with echo"},
      {with_prompt(R"("max_tokens": -3)"), 400, "max_tokens", "got -3"},
      {with_prompt(R"("max_tokens": 513)"), 400, "max_tokens", "[1, 512]"},
      {with_prompt(R"("max_tokens": 1e20)"), 400, "max_tokens", "[1, 512]"},
      {with_prompt(R"("max_tokens": 2.5)"), 400, "max_tokens", "expected an integer, but got a decimal"},
      {with_prompt(R"("max_tokens": "16")"), 400, "max_tokens", "expected an integer, but got a string"},
      {with_prompt(R"("max_tokens": true)"), 400, "max_tokens", "but got a boolean"},
      {with_prompt(R"("temperature": -0.1)"), 400, "temperature", "[0, 2]"},
      {with_prompt(R"("temperature": 2.01)"), 400, "temperature", "[0, 2]"},
      {with_prompt(R"("temperature": "1")"), 400, "temperature", "expected a number, but got a string"},
      {with_prompt(R"("top_p": 0)"), 400, "top_p", "(0, 1]"},
      {with_prompt(R"("top_p": 1.1)"), 400, "top_p", "(0, 1]"},
      {with_prompt(R"("top_p": [1])"), 400, "top_p", "but got an array"},
      {with_prompt(R"("top_k": -2)"), 400, "top_k", "[-1, "},
      {with_prompt(R"("top_k": 1.5)"), 400, "top_k", "expected an integer"},
      {with_prompt(R"("top_k": "5")"), 400, "top_k", "expected an integer"},
      {with_prompt(R"("seed": 1.5)"), 400, "seed", "expected an integer, but got a decimal"},
      {with_prompt(R"("seed": "1")"), 400, "seed", "expected an integer"},
      {with_prompt(R"("seed": 18446744073709551616)"), 400, "seed", "2^64 - 1"},
      {with_prompt(R"("seed": -9223372036854775809)"), 400, "seed", "-2^63"},
      {with_prompt(R"("seed": 1e300)"), 400, "seed", "2^64 - 1"},
  });
}

TEST(CompletionRequest, SamplingFieldsAreCheckedAsTheEnginesFloats) {
  // In range as doubles, but 0 as the engine's 32-bit floats: a top_p the
  // engine refuses, or a temperature that would silently become greedy.
  check_rejections({
      {with_prompt(R"("top_p": 1e-300)"), 400, "top_p", "1e-300 is 0 as the 32-bit float"},
      {with_prompt(R"("temperature": 1e-300)"), 400, "temperature", "32-bit float"},
      {with_prompt(R"("top_p": 1e-46)"), 400, "top_p", "32-bit float"},
  });
  // Small values a float still holds are taken (a denormal top_p keeps the
  // most likely token alone).
  EXPECT_EQ(static_cast<float>(parse(with_prompt(R"("top_p": 1e-40)")).top_p), 1e-40f);
  EXPECT_EQ(parse(with_prompt(R"("temperature": 1e-30)")).temperature, 1e-30);
}

TEST(CompletionRequest, RefusesBadStopAndStreamFields) {
  check_rejections({
      {with_prompt(R"("stop": "")"), 400, "stop", "must not be empty"},
      {with_prompt(R"("stop": ["a", ""])"), 400, "stop", "must not be empty"},
      {with_prompt(R"("stop": ["a", "b", "c", "d", "e"])"), 400, "stop", "at most 4"},
      {with_prompt(R"("stop": [1])"), 400, "stop", "expected a string"},
      {with_prompt(R"("stop": 5)"), 400, "stop", "a string or an array of strings"},
      {with_prompt(R"("stream": "true")"), 400, "stream", "expected a boolean"},
      {with_prompt(R"("stream": 1)"), 400, "stream", "expected a boolean"},
      {with_prompt(R"("stream_options": {"include_usage": true})"), 400, "stream_options",
       "only allowed when 'stream' is enabled"},
      {with_prompt(R"("stream": false, "stream_options": {})"), 400, "stream_options", "'stream'"},
      {with_prompt(R"("stream": true, "stream_options": {"chunks": 1})"), 400, "stream_options.chunks",
       "Unrecognized request argument supplied: stream_options.chunks"},
      {with_prompt(R"("stream": true, "stream_options": {"include_usage": "yes"})"), 400,
       "stream_options.include_usage", "expected a boolean"},
      {with_prompt(R"("stream": true, "stream_options": 1)"), 400, "stream_options", "expected an object"},
  });
}

TEST(CompletionRequest, RefusesFeaturesItDoesNotImplementRatherThanIgnoringThem) {
  check_rejections({
      {with_prompt(R"("echo": "no")"), 400, "echo", "expected a boolean"},
      {with_prompt(R"("logprobs": 21)"), 400, "logprobs", "[0, 20]"},
      {with_prompt(R"("logprobs": -1)"), 400, "logprobs", "[0, 20]"},
      {with_prompt(R"("logprobs": 2.5)"), 400, "logprobs", "integer"},
      {with_prompt(R"("logprobs": false)"), 400, "logprobs", "integer"},
      {with_prompt(R"("suffix": "end")"), 400, "suffix", "not supported"},
      {with_prompt(R"("suffix": "")"), 400, "suffix", "not supported"},
      {with_prompt(R"("user": 5)"), 400, "user", "expected a string"},
  });
}

TEST(CompletionRequest, CacheSaltIsAStringAndNothingElse) {
  EXPECT_EQ(parse(with_prompt(R"("cache_salt": "tenant-a")")).cache_salt, "tenant-a");
  EXPECT_EQ(parse(with_prompt(R"("cache_salt": "")")).cache_salt, "");  // none
  EXPECT_EQ(parse(with_prompt(R"("cache_salt": null)")).cache_salt, "");
  EXPECT_EQ(parse(with_prompt("")).cache_salt, "");
  check_rejections({
      {with_prompt(R"("cache_salt": 5)"), 400, "cache_salt", "expected a string, but got an integer"},
      {with_prompt(R"("cache_salt": ["a"])"), 400, "cache_salt", "expected a string"},
      {with_prompt(R"("cache_salt": {"k": "a"})"), 400, "cache_salt", "expected a string"},
      {with_prompt(R"("cache_salt": true)"), 400, "cache_salt", "expected a string"},
  });
}

TEST(CompletionRequest, RefusesBadSpeculationNamingTheInnerField) {
  check_rejections({
      {with_prompt(R"("speculation": {"gamma": 65})"), 400, "speculation.gamma", "[0, 64]"},
      {with_prompt(R"("speculation": {"gamma": -1})"), 400, "speculation.gamma", "[0, 64]"},
      {with_prompt(R"("speculation": {"gamma": "fast"})"), 400, "speculation.gamma", "\"auto\""},
      {with_prompt(R"("speculation": {"gamma": 2.5})"), 400, "speculation.gamma", "expected an integer"},
      {with_prompt(R"("speculation": {"gamma": true})"), 400, "speculation.gamma", "an integer or \"auto\""},
      {with_prompt(R"("speculation": {"drafter": "eagle"})"), 400, "speculation.drafter", "\"ngram\""},
      {with_prompt(R"("speculation": {"drafter": 1})"), 400, "speculation.drafter", "expected a string"},
      {with_prompt(R"("speculation": {"pipeline": "on"})"), 400, "speculation.pipeline", "a boolean"},
      {with_prompt(R"("speculation": {"drafter": "none", "gamma": 4})"), 400, "speculation.gamma",
       "drafter \"none\""},
      {with_prompt(R"("speculation": {"drafter": "none", "gamma": "auto"})"), 400, "speculation.gamma",
       "nothing is drafted"},
      {with_prompt(R"("speculation": {"lenience": 0.5})"), 400, "speculation.lenience",
       "Unrecognized request argument supplied: speculation.lenience"},
      {with_prompt(R"("speculation": "auto")"), 400, "speculation", "an object or a boolean"},
      {with_prompt(R"("speculation": {"coupling": "maximal"})"), 400, "speculation.coupling",
       "Expected one of \"rejection\", \"gumbel\", \"auto\", but got \"maximal\""},
      {with_prompt(R"("speculation": {"coupling": "Gumbel"})"), 400, "speculation.coupling", "\"gumbel\""},
      {with_prompt(R"("speculation": {"coupling": 1})"), 400, "speculation.coupling", "expected a string"},
      {with_prompt(R"("speculation": {"coupling": true})"), 400, "speculation.coupling", "expected a string"},
      {with_prompt(R"("speculation": 4)"), 400, "speculation", "an object or a boolean"},
  });
}

TEST(CompletionRequest, RefusesUnknownFieldsInOpenAIsWords) {
  check_rejections({
      {with_prompt(R"("max_new_tokens": 5)"), 400, "max_new_tokens",
       "Unrecognized request argument supplied: max_new_tokens"},
      {with_prompt(R"("messages": [])"), 400, "messages", "Unrecognized request argument supplied: messages"},
      {R"({"Prompt": "Hi"})", 400, "Prompt", "Unrecognized request argument supplied: Prompt"},
  });
}

TEST(CompletionRequest, AnotherModelIsNotFoundWithOpenAIsCode) {
  const ApiError error = rejection(with_prompt(R"("model": "gpt-4")"));
  EXPECT_EQ(error.status, 404);
  EXPECT_EQ(error.type, "invalid_request_error");
  EXPECT_EQ(error.param, "model");
  EXPECT_EQ(error.code, "model_not_found");
  EXPECT_NE(error.message.find("gpt-4"), std::string::npos);
  EXPECT_NE(error.message.find("tandem-tiny"), std::string::npos);
  expect_openai_shape(error);
  check_rejections({{with_prompt(R"("model": 5)"), 400, "model", "expected a string"}});
}

TEST(CompletionRequest, RefusesBodiesThatAreNotOneJsonObjectWithoutNamingAField) {
  check_rejections({
      {"", 400, std::nullopt, "We could not parse the JSON body"},
      {"{", 400, std::nullopt, "line 1, column 2"},
      {"prompt=hi", 400, std::nullopt, "line 1, column 1"},
      {R"({"prompt": "hi",})", 400, std::nullopt, "column 17"},
      {R"({"prompt": "hi"} {})", 400, std::nullopt, "after its JSON value, at byte 17"},
      {"{\"prompt\": \"caf\xff\"}", 400, std::nullopt, "UTF-8"},
      {"{\"prompt\": \"\xc3\"}", 400, std::nullopt, "UTF-8"},
      {R"({"prompt": "\ud800"})", 400, std::nullopt, "surrogate"},
      {R"({"prompt": "Hi", "max_tokens": 1e400})", 400, std::nullopt, "1e400"},
      {"[1]", 400, std::nullopt, "must be a JSON object, but got an array"},
      {"\"Hi\"", 400, std::nullopt, "but got a string"},
      {"null", 400, std::nullopt, "but got null"},
  });
}

TEST(CompletionRequest, RefusesDeepNestingBeforeParsing) {
  auto nested = [](int depth) {
    return R"({"prompt": )" + std::string(depth - 1, '[') + "1" + std::string(depth - 1, ']') + "}";
  };
  // 32 levels reach the parser (and fail on the prompt's shape); 33 do not.
  EXPECT_EQ(rejection(nested(32)).param, "prompt");
  const ApiError too_deep = rejection(nested(33));
  EXPECT_EQ(too_deep.param, std::nullopt);
  EXPECT_NE(too_deep.message.find("deeper than 32 levels (at byte 42)"), std::string::npos)
      << too_deep.message;
}

TEST(CompletionRequest, ADepthBombIsRefusedQuicklyWithoutCrashing) {
  const auto start = std::chrono::steady_clock::now();
  for (const char opener : {'[', '{'}) {
    const ApiError error = rejection(std::string(1 << 20, opener));
    EXPECT_EQ(error.status, 400);
    EXPECT_NE(error.message.find("deeper than"), std::string::npos);
  }
  std::string objects;
  for (int i = 0; i < 100000; ++i) objects += R"({"a":)";
  EXPECT_NE(rejection(objects).message.find("deeper than"), std::string::npos);
  const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_LT(seconds, 1.0);
}

TEST(CompletionRequest, BracketsInsideStringsAreText) {
  const std::string brackets(1 << 20, '[');
  const CompletionRequest request = parse(R"({"prompt": ")" + brackets + R"("})");
  EXPECT_EQ(std::get<std::string>(request.prompts.at(0)), brackets);
}

TEST(JsonDepth, CountsBracketsOutsideStringsOnly) {
  EXPECT_EQ(find_nesting_beyond("[[1]]", 2), std::nullopt);
  EXPECT_EQ(find_nesting_beyond("[[1]]", 1), 1u);
  EXPECT_EQ(find_nesting_beyond(R"({"a": [{"b": 1}]})", 2), 7u);
  EXPECT_EQ(find_nesting_beyond(R"(["[[[[", "{{{"])", 1), std::nullopt);
  // An escaped quote does not end the string, so the brackets after it are text.
  EXPECT_EQ(find_nesting_beyond(R"(["\"[[[["])", 1), std::nullopt);
  // An escaped backslash does end it: the '[' after the string counts.
  EXPECT_EQ(find_nesting_beyond(R"(["\\", [[]]])", 2), 8u);
  // Siblings do not add up, and stray closers cannot hide later depth.
  EXPECT_EQ(find_nesting_beyond("[[],[],[]]", 2), std::nullopt);
  EXPECT_EQ(find_nesting_beyond("]]]][[", 1), 5u);
}

struct FactoryCase {
  ApiError error;
  int status;
  std::string type;
  std::optional<std::string> code;
};

TEST(ApiError, FactoriesGiveOpenAIsStatusTypeAndCode) {
  const std::vector<FactoryCase> cases = {
      {invalid_request("top_p", "bad"), 400, "invalid_request_error", std::nullopt},
      {not_found("no route"), 404, "invalid_request_error", std::nullopt},
      {method_not_allowed("GET only"), 405, "invalid_request_error", std::nullopt},
      {payload_too_large("too big"), 413, "invalid_request_error", std::nullopt},
      {unauthorized("bad key"), 401, "authentication_error", "invalid_api_key"},
      {rate_limited("slow down"), 429, "rate_limit_error", "rate_limit_exceeded"},
      {unavailable("loading"), 503, "service_unavailable", std::nullopt},
      {timeout("too slow"), 504, "timeout_error", std::nullopt},
      {internal("bug"), 500, "server_error", std::nullopt},
  };
  std::set<int> statuses;
  for (const FactoryCase& c : cases) {
    SCOPED_TRACE(c.error.message);
    EXPECT_EQ(c.error.status, c.status);
    EXPECT_EQ(c.error.type, c.type);
    EXPECT_EQ(c.error.code, c.code);
    EXPECT_STREQ(c.error.what(), c.error.message.c_str());
    expect_openai_shape(c.error);
    statuses.insert(c.error.status);
  }
  EXPECT_EQ(statuses.size(), cases.size());
  EXPECT_EQ(invalid_request("top_p", "bad").param, "top_p");
  EXPECT_EQ(invalid_request(std::nullopt, "bad").param, std::nullopt);
}

TEST(ApiError, JsonKeepsOpenAIsKeyOrderAndSurvivesBadUtf8) {
  const std::string text = error_json(invalid_request("stop", "say \"hi\"\n"));
  EXPECT_EQ(text, R"({"error":{"message":"say \"hi\"\n","type":"invalid_request_error",)"
                  R"("param":"stop","code":null}})");
  const json replaced = json::parse(error_json(internal("bad \xff byte")));
  EXPECT_EQ(replaced["error"]["message"], "bad \xef\xbf\xbd byte");
}

TEST(ApiError, IsThrownAndCaughtAsAStdException) {
  try {
    parse("{");
    FAIL() << "must throw";
  } catch (const std::exception& error) {
    EXPECT_NE(std::string(error.what()).find("parse"), std::string::npos);
  }
}

TEST(ApiError, TandemErrorsMapToStatuses) {
  EXPECT_EQ(api_error_from(Error(ErrorKind::invalid_argument, "x")).status, 400);
  EXPECT_EQ(api_error_from(Error(ErrorKind::unsupported, "x")).status, 400);
  EXPECT_EQ(api_error_from(Error(ErrorKind::not_found, "x")).status, 404);
  EXPECT_EQ(api_error_from(Error(ErrorKind::out_of_resources, "x")).status, 503);
  EXPECT_EQ(api_error_from(Error(ErrorKind::corrupt_data, "x")).status, 500);
  const ApiError bug = api_error_from(Error(ErrorKind::internal, "kv table broken"));
  EXPECT_EQ(bug.status, 500);
  EXPECT_EQ(bug.message, "kv table broken");
}

}  // namespace
}  // namespace tandem::api
