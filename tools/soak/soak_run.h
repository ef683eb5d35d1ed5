// One soak run: mixed traffic (traffic_mix.h) from a few simulated clients
// plus periodic bursts, for a fixed time, against a running server, while
// /health is probed every second and the server processes' RSS is sampled;
// then, with the traffic stopped, /metrics is polled until the server is
// idle again (no request running or waiting, no KV block in use).
//
// Everything runs on one thread's io_context (C++20 coroutines), every loop
// is bounded in time (the duration, the client timeout, the drain time) and
// in count (max_requests). The result holds what was seen; soak_verdict.h
// judges it.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "tools/loadtest/completion_client.h"
#include "tools/soak/traffic_mix.h"

namespace tandem::soak {

struct SoakOptions {
  loadtest::Endpoint endpoint;  // host, port and API key; each request sets its own path
  double duration_seconds = 60;  // of traffic
  double warmup_seconds = 15;    // RSS growth is measured from the first sample after this
  int clients = 4;               // simulated clients, each sending one request after another
  std::array<int, kAllKinds.size()> weights{};  // per Kind (burst's is ignored): how often each client picks it
  double burst_every_seconds = 10;  // a burst of burst_size requests this often; 0 = none
  int burst_size = 24;
  double client_timeout_seconds = 60;  // one request, connect to last byte
  double health_every_seconds = 1;
  double health_timeout_seconds = 10;  // a probe gives up after this (its limit is the verdict's)
  double rss_every_seconds = 1;
  double drain_seconds = 20;  // how long the server may take to become idle after the traffic
  std::vector<int> pids;      // the server's processes (find_server_processes)
  MixOptions mix;
  std::uint64_t seed = 0;
  std::size_t max_requests = 10'000'000;  // a bound on the count, beside the time
};

// The mix the soak uses unless told otherwise.
std::array<int, kAllKinds.size()> default_weights();

struct KindTally {
  std::size_t sent = 0, expected = 0, unexpected = 0;
  std::size_t unexpected_5xx = 0;  // of the unexpected: a 5xx other than the documented ones
  std::size_t timed_out = 0, overloaded = 0, disconnected = 0;
  std::map<int, std::size_t> statuses;           // HTTP status (0 = none) -> count
  std::map<std::string, std::size_t> classes;    // "2xx", "4xx", "5xx", "none" -> count
};

struct UnexpectedAnswer {
  Kind kind = Kind::completion;
  int status = 0;
  double at = 0;  // seconds since the start
  std::string why;
};

struct HealthProbe {
  double at = 0;       // seconds since the start
  int status = 0;      // 0: no answer within health_timeout_seconds
  double seconds = 0;  // how long the answer took
};

struct RssSample {
  double at = 0;  // seconds since the start
  long kb = 0;
};

struct ProcessSeries {
  int pid = 0;
  std::string name;
  std::vector<RssSample> samples;  // a process that exits stops adding samples
};

// The server once the traffic stopped.
struct DrainState {
  bool idle = false;       // running, waiting and KV blocks in use all reached 0
  double seconds = 0;      // from the end of the traffic to idle (or to giving up)
  std::string error;       // why /metrics could not be read, if it could not
  std::map<std::string, double> last;  // the last values read of the series below
};

// The /metrics series that must be back to 0 once the traffic stops.
inline constexpr std::array<const char*, 4> kIdleSeries = {
    "tandem_num_requests_running", "tandem_num_requests_waiting",
    "tandem_kv_cache_blocks_used{model=\"target\"}", "tandem_kv_cache_blocks_used{model=\"draft\"}"};

struct SoakResult {
  double traffic_seconds = 0;  // from the start to the last traffic answer
  std::array<KindTally, kAllKinds.size()> kinds{};  // indexed by Kind
  std::size_t unexpected_total = 0;
  std::vector<UnexpectedAnswer> unexpected;  // the first kMaxUnexpectedKept, in order
  std::vector<HealthProbe> health;
  std::vector<ProcessSeries> processes;
  DrainState drain;
};
inline constexpr std::size_t kMaxUnexpectedKept = 50;

// Runs the soak. progress receives a one-line status every ~10 s. Error
// (invalid_argument) for options that cannot run (no duration, no clients,
// all weights 0, no prompts).
SoakResult run_soak(const SoakOptions& options, const std::function<void(const std::string&)>& progress);

}  // namespace tandem::soak
