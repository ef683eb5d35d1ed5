// run_load: drives an OpenAI-compatible /v1/completions endpoint (or
// /v1/chat/completions, given chat bodies: chat_request.h) with a load
// shape, as vLLM's `bench serve` does, and returns what each request saw.
//
// Two shapes:
//  - closed loop: exactly `concurrency` requests in flight; each one that
//    ends is replaced at once (users that wait for their answer);
//  - open loop: requests arrive on their own schedule, gaps drawn from a
//    gamma distribution with mean 1/request_rate (shape `burstiness`: 1 is a
//    Poisson process, lower is burstier), optionally with at most
//    `concurrency` in flight (vLLM's --max-concurrency): arrivals past the
//    cap wait, in order, for a slot.
// A run ends after max_requests requests have been sent and answered, or at
// max_seconds, when requests still in flight are cancelled and recorded as
// failed. Everything runs on the calling thread's own io_context.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "tools/loadtest/completion_client.h"
#include "tools/loadtest/request_record.h"

namespace tandem::loadtest {

struct LoadShape {
  enum Kind { closed_loop, open_loop } kind = closed_loop;
  int concurrency = 1;        // closed loop: in flight (>= 1); open loop: cap, 0 = none
  double request_rate = 0;    // open loop: requests per second; infinity = all at once
  double burstiness = 1.0;    // open loop: gamma shape of the gaps; 1 = Poisson
  size_t max_requests = 0;    // 0 = no bound on the count
  double max_seconds = 0;     // 0 = no bound on the time; at least one bound is required
  uint64_t seed = 0;          // of the open-loop gaps
  double request_timeout_seconds = 300;  // one request, connect to end of stream
};

// The error of requests still in flight when max_seconds ends a run.
inline constexpr const char* kCancelledAtEnd = "cancelled at the end of the run";

// Sends request_bodies (JSON /v1/completions bodies, used in order, cycling;
// each made a stream with usage, see streaming_body) with `shape`. Records
// come back in send order, start relative to the run's start. progress(done,
// total) is called as each request ends (total = max_requests, 0 when the
// run is bounded by time only). duration_seconds: from the run's start to
// the end of its last request. Error (invalid_argument) for a shape without
// a bound, a bad rate, concurrency or burstiness, or no bodies.
std::vector<RequestRecord> run_load(const Endpoint& endpoint,
                                    const std::vector<std::string>& request_bodies,
                                    const LoadShape& shape,
                                    std::function<void(size_t done, size_t total)> progress,
                                    double& duration_seconds);

}  // namespace tandem::loadtest
