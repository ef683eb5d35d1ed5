// Tests of tools/soak/soak_verdict.h on hand-built results: a clean run
// passes, and each way a server can fail the soak fails it, with a reason
// that names what went wrong.
#include "tools/soak/soak_verdict.h"

#include <gtest/gtest.h>

namespace tandem::soak {
namespace {

KindTally& of(SoakResult& result, Kind kind) { return result.kinds[static_cast<size_t>(kind)]; }

// A clean 60 s run: answers as documented, /health fast, RSS flat after a
// warm-up rise, the server idle afterwards.
SoakResult clean_run() {
  SoakResult result;
  result.traffic_seconds = 60;
  for (Kind kind : kAllKinds) {
    KindTally& counts = of(result, kind);
    counts.sent = counts.expected = 10;
    const int status = is_bad_request(kind) ? 400 : 200;
    counts.statuses[status] = 10;
    counts.classes[status_class(status)] = 10;
  }
  of(result, Kind::timeout).timed_out = 3;
  of(result, Kind::burst).overloaded = 4;
  of(result, Kind::disconnect).disconnected = 6;
  for (int second = 0; second <= 61; ++second) result.health.push_back({double(second), 200, 0.002});
  ProcessSeries server{42, "tandem", {}};
  for (int second = 0; second <= 61; ++second)
    server.samples.push_back({double(second), second < 10 ? 100000 + 5000L * second : 150000});
  result.processes.push_back(server);
  result.drain.idle = true;
  return result;
}

bool mentions(const Verdict& verdict, const std::string& text) {
  for (const std::string& failure : verdict.failures)
    if (failure.find(text) != std::string::npos) return true;
  return false;
}

TEST(Judge, ACleanRunPasses) {
  const Verdict verdict = judge(clean_run(), {});
  EXPECT_TRUE(verdict.pass);
  EXPECT_TRUE(verdict.failures.empty());
  EXPECT_TRUE(verdict.warnings.empty());
  ASSERT_EQ(verdict.rss.size(), 1u);
  EXPECT_EQ(verdict.rss[0].start_kb, 100000);
  EXPECT_EQ(verdict.rss[0].warm_kb, 150000);  // the first sample at or after 15 s
  EXPECT_DOUBLE_EQ(verdict.rss[0].growth_percent, 0);
  EXPECT_EQ(verdict.health.count, 62u);
}

TEST(Judge, AnUnexpected5xxFails) {
  SoakResult result = clean_run();
  of(result, Kind::chat).unexpected = of(result, Kind::chat).unexpected_5xx = 1;
  result.unexpected_total = 1;
  result.unexpected.push_back({Kind::chat, 500, 12.5, "HTTP 500 for a valid request: engine step failed"});
  const Verdict verdict = judge(result, {});
  EXPECT_FALSE(verdict.pass);
  EXPECT_TRUE(mentions(verdict, "1 of them 5xx"));
  EXPECT_TRUE(mentions(verdict, "engine step failed"));
}

TEST(Judge, RssGrowthAtTheLimitFailsAndJustBelowPasses) {
  SoakResult result = clean_run();
  result.processes[0].samples.back().kb = 157500;  // +5.0% over 150000
  EXPECT_TRUE(mentions(judge(result, {}), "RSS grew 5.0%"));
  result.processes[0].samples.back().kb = 157400;  // +4.93%
  EXPECT_TRUE(judge(result, {}).pass);
}

TEST(Judge, AProcessThatWentAwayFails) {
  SoakResult result = clean_run();
  result.processes[0].samples.resize(30);  // last seen at 29 s
  EXPECT_TRUE(mentions(judge(result, {}), "went away"));
}

TEST(Judge, ASlowOrFailedHealthProbeFails) {
  SoakResult result = clean_run();
  result.health[20].seconds = 2.5;
  const Verdict slow = judge(result, {});
  EXPECT_FALSE(slow.pass);
  EXPECT_EQ(slow.health_failures, 1u);
  EXPECT_TRUE(mentions(slow, "2.500 s at 20.0 s"));
  result = clean_run();
  result.health[30].status = 0;
  EXPECT_TRUE(mentions(judge(result, {}), "1 of 62 /health probes"));
}

TEST(Judge, AServerNotIdleAfterTheTrafficFails) {
  SoakResult result = clean_run();
  result.drain.idle = false;
  result.drain.seconds = 20;
  result.drain.last["tandem_num_requests_running"] = 2;
  const Verdict verdict = judge(result, {});
  EXPECT_FALSE(verdict.pass);
  EXPECT_TRUE(mentions(verdict, "tandem_num_requests_running 2"));
}

TEST(Judge, AGoodKindThatNeverGotA200Fails) {
  SoakResult result = clean_run();
  KindTally& chat = of(result, Kind::chat_stream);
  chat.statuses = {{429, 10}};
  chat.overloaded = 10;
  EXPECT_TRUE(mentions(judge(result, {}), "no chat_stream request got a 200"));
}

TEST(Judge, WarnsOfWhatTheRunDidNotExercise) {
  SoakResult result = clean_run();
  of(result, Kind::timeout).timed_out = 0;
  of(result, Kind::burst).overloaded = 0;
  const Verdict verdict = judge(result, {});
  EXPECT_TRUE(verdict.pass);
  EXPECT_EQ(verdict.warnings.size(), 2u);
}

}  // namespace
}  // namespace tandem::soak
