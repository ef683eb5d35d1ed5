// The coupling end to end (docs/serving.md, "Seeds and the coupling"): which
// one a request runs (the response's speculation.coupling) under the
// deployment's sampling.coupling and the request's speculation.coupling, the
// 400s, and the promise of the Gumbel coupling: a seeded sampled request
// gives the same text whatever γ and drafter, and the same as with
// speculation off, alone or beside other requests.
#include <gtest/gtest.h>

#include <future>
#include <string>
#include <vector>

#include "tests/server/test_server.h"

namespace tandem {
namespace {

using nlohmann::json;
using test_support::HttpClient;
using test_support::sse_payloads;
using test_support::TestServer;
using test_support::TinyDeployment;

json sampled(const std::string& prompt, std::optional<uint64_t> seed, json speculation = json::object()) {
  json body = {{"prompt", prompt}, {"max_tokens", 12}, {"temperature", 0.8}};
  if (seed) body["seed"] = *seed;
  if (!speculation.empty()) body["speculation"] = std::move(speculation);
  return body;
}

std::string coupling_of(const json& reply) { return reply.at("speculation").at("coupling"); }

TEST(Coupling, AutoIsGumbelForSeededRequestsAndRejectionOtherwise) {
  TestServer server;
  EXPECT_EQ(coupling_of(server.complete(sampled("The old man", 5))), "gumbel");
  EXPECT_EQ(coupling_of(server.complete(sampled("The old man", std::nullopt))), "rejection");
  // "auto" in the request is the same as leaving it out.
  EXPECT_EQ(coupling_of(server.complete(sampled("The old man", 5, {{"coupling", "auto"}}))), "gumbel");
  EXPECT_EQ(coupling_of(server.complete(sampled("The old man", std::nullopt, {{"coupling", "auto"}}))),
            "rejection");
  // Every choice of a seeded request is seeded (its own derived seed).
  json several = sampled("The old man", 9);
  several["n"] = 3;
  EXPECT_EQ(coupling_of(server.complete(several)), "gumbel");
  // Greedy requests report what the rule resolved; their text is the argmax either way.
  json greedy = sampled("The old man", 9);
  greedy["temperature"] = 0;
  EXPECT_EQ(coupling_of(server.complete(greedy)), "gumbel");
}

TEST(Coupling, AnExplicitRequestChoiceWins) {
  TestServer server;
  EXPECT_EQ(coupling_of(server.complete(sampled("She said that", 5, {{"coupling", "rejection"}}))),
            "rejection");
  EXPECT_EQ(coupling_of(server.complete(sampled("She said that", std::nullopt, {{"coupling", "gumbel"}}))),
            "gumbel");
  // With speculation off too: plain decoding samples by the coupling.
  EXPECT_EQ(coupling_of(server.complete(sampled("She said that", 5, {{"drafter", "none"}, {"coupling", "rejection"}}))),
            "rejection");
}

TEST(Coupling, TheDeploymentSettingAppliesToAutoRequests) {
  TinyDeployment deployment;
  deployment.sampling = "  coupling: rejection\n";
  TestServer server(deployment);
  EXPECT_EQ(coupling_of(server.complete(sampled("It was a long", 3))), "rejection");
  EXPECT_EQ(coupling_of(server.complete(sampled("It was a long", 3, {{"coupling", "gumbel"}}))), "gumbel");
}

TEST(Coupling, ChatAndTheStreamsLastChunkReportIt) {
  TestServer server;
  const json messages = json::array({{{"role", "user"}, {"content", "Tell me about the old city."}}});
  const json chat = server.chat({{"messages", messages}, {"max_tokens", 8}, {"temperature", 0.8}, {"seed", 4}});
  EXPECT_EQ(coupling_of(chat), "gumbel");
  const json unseeded = server.chat({{"messages", messages}, {"max_tokens", 8}, {"temperature", 0.8},
                                     {"speculation", {{"coupling", "gumbel"}}}});
  EXPECT_EQ(coupling_of(unseeded), "gumbel");

  for (const std::string route : {"/v1/completions", "/v1/chat/completions"}) {
    SCOPED_TRACE(route);
    json body = route == "/v1/completions" ? sampled("The old man", std::nullopt)
                                           : json{{"messages", messages}, {"max_tokens", 8}, {"temperature", 0.8}};
    body["stream"] = true;
    body["stream_options"] = {{"include_usage", true}};
    HttpClient http(server.port());
    const auto reply = http.post_json(route, body.dump());
    ASSERT_EQ(reply.status, 200) << reply.body;
    const std::vector<std::string> payloads = sse_payloads(reply.body);
    ASSERT_GE(payloads.size(), 2u);
    const json last = json::parse(payloads[payloads.size() - 2]);  // before [DONE]
    EXPECT_EQ(coupling_of(last), "rejection") << payloads[payloads.size() - 2];
  }
}

TEST(Coupling, BadValuesAndGumbelUnderLenienceAre400NamingTheField) {
  TinyDeployment lenient;
  lenient.speculation = "  lenience: 0.5\n";
  TestServer server(lenient);
  for (const std::string route : {"/v1/completions", "/v1/chat/completions"}) {
    SCOPED_TRACE(route);
    json body = route == "/v1/completions"
                    ? sampled("The old man", 5)
                    : json{{"messages", json::array({{{"role", "user"}, {"content", "Hi"}}})}, {"seed", 5}};
    for (const json& coupling : {json("gumbel"), json("fast"), json(2)}) {
      body["speculation"] = {{"coupling", coupling}};
      HttpClient http(server.port());
      const auto reply = http.post_json(route, body.dump());
      EXPECT_EQ(reply.status, 400) << coupling.dump();
      EXPECT_EQ(json::parse(reply.body)["error"]["param"], "speculation.coupling") << reply.body;
    }
  }
  // Under lenience a seeded auto request runs rejection, lossy and saying so.
  const json reply = server.complete(sampled("The old man", 5));
  EXPECT_EQ(coupling_of(reply), "rejection");
  EXPECT_EQ(reply["speculation"]["lossless"], false);
}

// The Gumbel coupling's promise: the output is a function of the seed, not
// of γ, the drafter or the batch. This holds only when the engine honours
// SamplingParams::coupling (workers/speculation/), drafting and verifying
// with the same noise as plain decoding.
TEST(Coupling, SeededTextIsTheSameWhateverGammaAndDrafter) {
  TestServer server;
  const std::vector<json> policies = {
      json(false),                                   // plain decoding
      json{{"gamma", "auto"}},
      json{{"gamma", 2}},
      json{{"gamma", 5}},
      json{{"gamma", 3}, {"drafter", "ngram"}},
      json{{"gamma", 4}, {"pipeline", false}},
  };
  const std::vector<std::string> prompts = {"The history of the city", "When the war ended",
                                            "Scientists have found"};
  for (const std::string& prompt : prompts) {
    for (const double temperature : {0.7, 1.0}) {
      SCOPED_TRACE(prompt + " T " + std::to_string(temperature));
      json body = {{"prompt", prompt}, {"max_tokens", 24}, {"temperature", temperature},
                   {"top_p", 0.9}, {"seed", 1234}, {"ignore_eos", true}};
      std::vector<json> bodies;
      for (const json& policy : policies) {
        body["speculation"] = policy;
        bodies.push_back(body);
      }
      const json plain = server.complete(bodies.front());
      const std::string want = plain["choices"][0]["text"];
      EXPECT_EQ(coupling_of(plain), "gumbel");
      for (size_t i = 1; i < bodies.size(); ++i) {
        const json reply = server.complete(bodies[i]);
        EXPECT_EQ(reply["choices"][0]["text"], want) << bodies[i]["speculation"].dump();
        EXPECT_EQ(coupling_of(reply), "gumbel");
      }
      // All at once: in one batch, each beside the others.
      std::vector<std::future<json>> together;
      for (const json& each : bodies)
        together.push_back(std::async(std::launch::async, [&server, each] { return server.complete(each); }));
      for (size_t i = 0; i < together.size(); ++i)
        EXPECT_EQ(together[i].get()["choices"][0]["text"], want) << bodies[i]["speculation"].dump();
    }
  }
}

}  // namespace
}  // namespace tandem
