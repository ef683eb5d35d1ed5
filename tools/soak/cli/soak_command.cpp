// `tandem-soak`: turns the flags into SoakOptions, finds the server's
// processes, waits for the server to be ready, runs the soak, prints the report (and writes its JSON), and
// exits 0 on a pass, 1 on a failure.
#include <algorithm>
#include <cmath>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/error.h"
#include "tools/loadtest/plain_request.h"
#include "tools/loadtest/workload.h"
#include "tools/soak/cli/soak_flags.h"
#include "tools/soak/process_memory.h"
#include "tools/soak/soak_report.h"
#include "tools/soak/soak_run.h"
#include "tools/soak/soak_verdict.h"

namespace tandem::soak {
namespace {

using nlohmann::json;

std::array<int, kAllKinds.size()> weights_from(const std::string& mix) {
  std::array<int, kAllKinds.size()> weights = default_weights();
  if (mix.empty()) return weights;
  const json parsed = json::parse(mix, nullptr, /*allow_exceptions=*/false);
  require(parsed.is_object(), ErrorKind::invalid_argument,
          "--mix must be a JSON object of kind -> weight, e.g. '{\"timeout\": 0}'");
  for (const auto& [name, weight] : parsed.items()) {
    const auto kind = std::find_if(kAllKinds.begin(), kAllKinds.end(),
                                   [&](Kind k) { return name == kind_name(k) && k != Kind::burst; });
    require(kind != kAllKinds.end(), ErrorKind::invalid_argument, [&] {
      return "--mix: unknown kind '" + name + "' (bursts are set by --burst-every and --burst-size)";
    });
    require(weight.is_number_integer() && weight.get<int>() >= 0, ErrorKind::invalid_argument,
            [&] { return "--mix: the weight of '" + name + "' must be an integer >= 0"; });
    weights[static_cast<size_t>(*kind)] = weight.get<int>();
  }
  return weights;
}

std::vector<std::string> prompts_from(const SoakFlags& flags) {
  const auto corpus = loadtest::read_corpus(flags.corpus);
  const auto items = loadtest::synthetic_workload(corpus, 64, {flags.input_words, flags.input_words / 2},
                                                  {1, 0}, static_cast<std::uint64_t>(flags.seed));
  std::vector<std::string> prompts;
  for (const auto& item : items) prompts.push_back(item.prompt);
  return prompts;
}

// Waits for GET /ready to answer 200, for at most `seconds`: traffic sent
// to a server still loading its models would measure only its 503s.
void wait_until_ready(const loadtest::Endpoint& endpoint, double seconds) {
  const auto give_up = loadtest::Clock::now() + std::chrono::duration<double>(seconds);
  loadtest::PlainResponse response;
  do {
    const loadtest::PlainRequest ready{"GET", "/ready", ""};
    response = loadtest::plain_request(endpoint, ready, std::chrono::seconds(5));
    if (response.status == 200) return;
    std::this_thread::sleep_for(std::chrono::milliseconds(250));
  } while (loadtest::Clock::now() < give_up);
  throw Error(ErrorKind::unavailable,
              "the server at http://" + endpoint.host + ":" + std::to_string(endpoint.port) +
                  " was not ready within --wait-ready " + std::to_string(std::lround(seconds)) + " s (GET /ready: " +
                  (response.status == 0 ? response.error : "HTTP " + std::to_string(response.status)) + ")");
}

}  // namespace

int run_soak_command(const SoakFlags& flags) {
  SoakOptions options;
  options.endpoint = loadtest::parse_url(flags.url);
  options.endpoint.api_key = flags.api_key;
  options.duration_seconds = flags.minutes > 0 ? flags.minutes * 60 : flags.duration;
  require(options.duration_seconds > 0 && std::isfinite(options.duration_seconds), ErrorKind::invalid_argument,
          "--duration (or --minutes) must be > 0");
  require(flags.clients >= 1 && flags.clients <= 256, ErrorKind::invalid_argument,
          "--clients must be from 1 to 256");
  require(flags.burst_size >= 0 && flags.burst_size <= 1024 && flags.burst_every >= 0,
          ErrorKind::invalid_argument, "--burst-size must be from 0 to 1024 and --burst-every >= 0");
  require(flags.timeout > 0 && flags.health_limit > 0 && flags.drain > 0 && flags.rss_limit > 0 &&
              flags.wait_ready > 0,
          ErrorKind::invalid_argument,
          "--timeout, --health-limit, --drain, --rss-limit and --wait-ready must be > 0");
  require(flags.input_words >= 1 && flags.output_tokens >= 1 && flags.long_tokens >= 1,
          ErrorKind::invalid_argument, "--input-words, --output-tokens and --long-tokens must be >= 1");
  options.clients = flags.clients;
  options.weights = weights_from(flags.mix);
  options.burst_every_seconds = flags.burst_every;
  options.burst_size = flags.burst_size;
  options.client_timeout_seconds = flags.timeout;
  options.health_timeout_seconds = std::max(10.0, 2 * flags.health_limit);
  options.drain_seconds = flags.drain;
  options.seed = static_cast<std::uint64_t>(flags.seed);
  options.mix.prompts = prompts_from(flags);
  options.mix.model = flags.model;
  options.mix.short_tokens = flags.output_tokens;
  options.mix.long_tokens = flags.long_tokens;
  wait_until_ready(options.endpoint, flags.wait_ready);
  if (!flags.no_rss) {
    if (flags.pids.empty()) {
      options.pids = find_server_processes(options.endpoint.port);
    } else {
      for (double pid : cli::parse_number_list("--pid", flags.pids)) options.pids.push_back(static_cast<int>(pid));
    }
  }
  SoakLimits limits;
  limits.warmup_seconds = flags.warmup > 0 ? flags.warmup : std::min(60.0, options.duration_seconds / 4);
  options.warmup_seconds = limits.warmup_seconds;
  limits.health_seconds = flags.health_limit;
  limits.rss_growth_percent = flags.rss_limit;

  if (!flags.quiet) {
    std::cerr << "tandem-soak: " << options.duration_seconds << " s against " << flags.url << ", watching";
    for (int pid : options.pids) std::cerr << " " << pid << " (" << process_name(pid) << ")";
    std::cerr << (options.pids.empty() ? " no process" : "") << "\n";
  }
  const SoakResult result = run_soak(options, [&](const std::string& line) {
    if (!flags.quiet) std::cerr << "tandem-soak: " << line << "\n";
  });
  const Verdict verdict = judge(result, limits);
  std::cout << soak_text(result, verdict, limits) << std::flush;
  if (!flags.json.empty()) {
    std::ofstream out(flags.json);
    require(static_cast<bool>(out), ErrorKind::invalid_argument, [&] { return "cannot write --json " + flags.json; });
    out << soak_json(result, verdict, limits, options).dump(2) << "\n";
  }
  return verdict.pass ? 0 : 1;
}

}  // namespace tandem::soak
