// A bounded plain HTTP exchange (a GET of /health or /metrics, or any small
// request whose whole answer fits in memory) for the tools that watch a
// server beside their load: tandem-loadtest's /metrics scrapes and
// tandem-soak's health probes, metrics polls and bad requests.
//
// Unlike CompletionCall (completion_client.h) it does not read an event
// stream: it reads one whole response, and it never waits longer than its
// timeout, connect to last byte, so a hung server shows as a timed-out
// exchange instead of a hung tool.
#pragma once

#include <utility>  // before Asio: its awaitable.hpp uses std::exchange without it

#include <boost/asio/awaitable.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <chrono>
#include <string>

#include "tools/loadtest/completion_client.h"

namespace tandem::loadtest {

struct PlainRequest {
  std::string method = "GET";  // any HTTP method Beast knows
  std::string path = "/health";
  std::string body;            // sent with Content-Type: application/json when not empty
};

struct PlainResponse {
  int status = 0;        // 0: no response (connect failed, closed, or timed out)
  std::string body;      // the response body (for a non-200, the server's error object)
  std::string error;     // why status is 0
  double seconds = 0;    // connect to last byte (or to the failure)
};

// One request on `executor`, with a Host header naming the endpoint and
// `Connection: close`. Never throws for network failures: they are in the
// result (status 0). The arguments are taken by value: the coroutine
// outlives the caller's temporaries.
asio::awaitable<PlainResponse> async_plain_request(asio::any_io_executor executor,
                                                   Endpoint endpoint, PlainRequest request,
                                                   Clock::duration timeout);

// The same on an io_context of its own, for code outside a coroutine.
PlainResponse plain_request(const Endpoint& endpoint, const PlainRequest& request,
                            Clock::duration timeout);

}  // namespace tandem::loadtest
