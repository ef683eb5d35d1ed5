// The flags of `tandem-soak` (main.cpp parses them; soak_command.cpp runs
// the soak they describe).
#pragma once

#include <cstdint>
#include <string>

#include "common/command_line.h"

namespace tandem::soak {

struct SoakFlags {
  std::string url = "http://127.0.0.1:8080";
  double duration = 60;   // seconds of traffic
  double minutes = 0;     // the same in minutes, when given
  double warmup = 0;      // seconds; 0 = a quarter of the duration, at most 60
  int clients = 4;
  double burst_every = 10;
  int burst_size = 24;
  double timeout = 60;        // one request, client side
  double health_limit = 2;    // seconds
  double rss_limit = 5;       // percent
  double drain = 20;          // seconds
  double wait_ready = 300;    // seconds GET /ready may take to answer 200 before the soak starts
  std::string pids;           // comma-separated; "" = the process listening on the URL's port (and its ranks)
  bool no_rss = false;
  std::string mix;            // JSON: kind -> weight, over the defaults
  std::string corpus = "tools/loadtest/heldout.jsonl";
  int input_words = 12;
  int output_tokens = 16;     // good requests: max_tokens up to this
  int long_tokens = 200;      // disconnect and timeout requests
  std::string model;
  std::string api_key;
  std::int64_t seed = 0;
  std::string json;
  bool quiet = false;
};

void add_soak_flags(cli::Command& app, SoakFlags& flags);

// Runs the soak; the exit code: 0 pass, 1 fail (2 for flags that cannot run).
int run_soak_command(const SoakFlags& flags);

}  // namespace tandem::soak
