// The flags of `tandem-loadtest` (main.cpp parses them; loadtest_command.cpp
// runs what they describe). Defaults follow vLLM's `bench serve` where it
// has the same knob.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "common/command_line.h"

namespace tandem::loadtest {

struct LoadtestFlags {
  std::string url = "http://127.0.0.1:8080";  // no path: the --endpoint's own
  std::string endpoint = "completions";       // or "chat"
  std::string model;    // the request's "model"; "" leaves it out
  std::string api_key;  // sent as Authorization: Bearer
  // The sweep: exactly one of these lists.
  std::string concurrency;  // closed loop: requests in flight
  std::string rate;         // open loop: requests per second
  double burstiness = 1.0;
  int max_concurrency = 0;  // open loop: cap on requests in flight; 0 = none
  std::optional<std::int64_t> requests;  // per run; 64 unless --duration bounds it
  double duration = 0;                   // seconds per run; 0 = unbounded
  // The workload: a JSONL file, or synthetic prompts cut from a corpus.
  std::string prompts;
  std::string corpus;  // "" = the held-out text built into the binary (default_corpus.h)
  int input_words = 32;
  int output_tokens = 64;
  int range = 0;
  // Multi-turn chat: conversations replayed turn by turn (--endpoint chat).
  std::string conversations;
  int max_turns = 0;             // per conversation; 0 = all
  std::string history = "live";  // or "recorded": which assistant text the next turn carries
  bool ignore_eos = false;  // every request asks for "ignore_eos": true
  std::string body;      // JSON merged into every request
  std::string variants;  // JSON: name -> overrides, run side by side
  int rounds = 1;         // the variants this many times per load point (variant_rounds.h)
  int warmups = 0;        // requests per variant before the sweep, not in its figures
  std::optional<double> slo_ttft_ms, slo_tpot_ms, slo_e2e_ms;
  std::int64_t seed = 0;
  std::string json;   // write every figure here
  std::string plots;  // write SVG charts into this directory
  double timeout = 300;  // one request, connect to end of stream
  bool no_metrics = false;
  bool quiet = false;         // no progress line even on a terminal
  bool allow_errors = false;  // exit 0 although requests failed
};

// Registers the flags above on app, writing into flags.
void add_loadtest_flags(cli::Command& app, LoadtestFlags& flags);

// Runs the sweep the flags describe; the exit code (loadtest_command.cpp):
// 0, or 1 when any request failed and --allow-errors was not given.
int run_loadtest(const LoadtestFlags& flags);

}  // namespace tandem::loadtest
