// `tandem-loadtest`: throughput and latency of an OpenAI-compatible
// completions or chat endpoint (ours or a peer's), with vLLM `bench serve`'s terms.
//
//   tandem-loadtest --url http://127.0.0.1:8080 [--endpoint completions|chat]
//       (--concurrency 1,4,16 | --rate 2,4,8 [--burstiness 1] [--max-concurrency N])
//       [--requests N | --duration SECONDS]
//       [--prompts FILE.jsonl | --input-words N --output-tokens N [--range N] [--corpus FILE]
//        | --endpoint chat --conversations FILE.jsonl [--max-turns N] [--history live|recorded]]
//       [--body JSON] [--variants '{"spec on": {}, "spec off": {"speculation": false}}']
//       [--rounds N] [--warmups N]
//       [--slo-ttft-ms X] [--slo-tpot-ms Y] [--slo-e2e-ms Z] [--seed N]
//       [--json FILE] [--plots DIR] [--model NAME] [--api-key KEY] [--no-metrics]
//       [--ignore-eos] [--allow-errors] [--quiet]
//
// Every sweep point runs each variant in turn (side by side, same prompts),
// --rounds times in alternating order (variant_rounds.h), prints vLLM's
// result block, and, when the server exposes Tandem's /metrics, the
// speculation and prefix cache figures of that run; then, with two
// variants or more, each one's output throughput over the first's. --json
// writes every figure and the configuration; --plots writes SVG charts.
// Failed requests (an empty completion is one) are listed on stderr, the
// first few with the server's message, and make the exit code 1 unless
// --allow-errors.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "tools/loadtest/chat_request.h"
#include "tools/loadtest/cli/loadtest_flags.h"
#include "tools/loadtest/completion_client.h"
#include "tools/loadtest/conversation_runner.h"
#include "tools/loadtest/default_corpus.h"
#include "tools/loadtest/failure_log.h"
#include "tools/loadtest/load_runner.h"
#include "tools/loadtest/plain_request.h"
#include "tools/loadtest/report.h"
#include "tools/loadtest/server_metrics_scrape.h"
#include "tools/loadtest/statistics.h"
#include "tools/loadtest/sweep_plots.h"
#include "tools/loadtest/variant_rounds.h"
#include "tools/loadtest/workload.h"

namespace tandem::loadtest {
namespace {

using nlohmann::json;

// GET http://host:port/metrics; empty when the server has none (or does not
// answer within 30 s).
std::string fetch_metrics(const Endpoint& endpoint) {
  const PlainResponse response = plain_request(endpoint, {"GET", "/metrics", ""}, std::chrono::seconds(30));
  return response.status == 200 ? response.body : std::string();
}

struct SweepPoint {
  std::string label;  // "concurrency 4" or "rate 2/s"
  double load = 0;    // the x of throughput plots
  LoadShape shape;
};

std::vector<SweepPoint> sweep(const LoadtestFlags& flags) {
  require(flags.concurrency.empty() != flags.rate.empty(), ErrorKind::invalid_argument,
          "give exactly one of --concurrency N[,N...] (closed loop) or --rate R[,R...] "
          "(open loop, requests per second)");
  LoadShape base;
  const std::int64_t requests = flags.requests.value_or(flags.duration > 0 ? 0 : 64);
  require(requests >= 0, ErrorKind::invalid_argument, "--requests must be >= 0");
  base.max_requests = static_cast<size_t>(requests);
  base.max_seconds = flags.duration;
  require(base.max_requests > 0 || base.max_seconds > 0, ErrorKind::invalid_argument,
          "--requests and --duration must bound the run (give a positive one)");
  base.seed = static_cast<uint64_t>(flags.seed);
  base.request_timeout_seconds = flags.timeout;
  std::vector<SweepPoint> points;
  if (!flags.concurrency.empty()) {
    for (double c : cli::parse_number_list("--concurrency", flags.concurrency)) {
      require(c >= 1, ErrorKind::invalid_argument, "--concurrency values must be >= 1");
      LoadShape shape = base;
      shape.kind = LoadShape::closed_loop;
      shape.concurrency = static_cast<int>(c);
      points.push_back({"concurrency " + std::to_string(shape.concurrency), c, shape});
    }
  } else {
    for (double r : cli::parse_number_list("--rate", flags.rate)) {
      require(r > 0, ErrorKind::invalid_argument, "--rate values must be > 0");
      LoadShape shape = base;
      shape.kind = LoadShape::open_loop;
      shape.request_rate = r;
      shape.burstiness = flags.burstiness;
      shape.concurrency = flags.max_concurrency;
      require(shape.burstiness > 0, ErrorKind::invalid_argument, "--burstiness must be > 0");
      char label[64];
      std::snprintf(label, sizeof label, "rate %g/s", r);
      points.push_back({label, r, shape});
    }
  }
  return points;
}

// The multi-turn flags only make sense together; each mistake names its flag.
void check_conversation_flags(const LoadtestFlags& flags, Api api) {
  if (flags.conversations.empty()) {
    require(flags.max_turns == 0 && flags.history == "live", ErrorKind::invalid_argument,
            "--max-turns and --history apply to --conversations only");
    return;
  }
  require(api == Api::chat, ErrorKind::invalid_argument,
          "--conversations needs --endpoint chat: conversations are sent as chat messages");
  require(flags.prompts.empty(), ErrorKind::invalid_argument,
          "give either --prompts or --conversations, not both");
  require(flags.rate.empty(), ErrorKind::invalid_argument,
          "--conversations replays conversations with a fixed number of simulated users: give "
          "--concurrency N, not --rate");
  require(flags.max_turns >= 0, ErrorKind::invalid_argument, "--max-turns must be >= 0");
  require(flags.output_tokens >= 1, ErrorKind::invalid_argument,
          "--output-tokens (max_tokens of conversations that give none) must be >= 1");
  parse_history(flags.history);  // throws naming --history
}

std::vector<WorkItem> workload(const LoadtestFlags& flags, size_t count) {
  if (!flags.conversations.empty()) return {};
  if (!flags.prompts.empty()) return read_jsonl(flags.prompts);
  const std::vector<std::string> corpus =
      flags.corpus.empty() ? read_default_corpus() : read_corpus(flags.corpus);
  return synthetic_workload(corpus, std::max<size_t>(count, 1),
                            {flags.input_words, flags.range}, {flags.output_tokens, flags.range},
                            static_cast<uint64_t>(flags.seed));
}

// name -> body overrides, in the order given.
std::vector<std::pair<std::string, json>> variants(const LoadtestFlags& flags) {
  json base = json::object();
  if (!flags.body.empty()) {
    try {
      base = json::parse(flags.body);
    } catch (const json::exception& error) {
      throw Error(ErrorKind::invalid_argument, std::string("--body is not JSON: ") + error.what());
    }
    require(base.is_object(), ErrorKind::invalid_argument, "--body must be a JSON object");
  }
  if (flags.ignore_eos) base["ignore_eos"] = true;
  if (flags.variants.empty()) return {{"run", base}};
  nlohmann::ordered_json given;  // variants run in the order given
  try {
    given = nlohmann::ordered_json::parse(flags.variants);
  } catch (const json::exception& error) {
    throw Error(ErrorKind::invalid_argument, std::string("--variants is not JSON: ") + error.what());
  }
  require(given.is_object() && !given.empty(), ErrorKind::invalid_argument,
          "--variants must be a JSON object of name -> body overrides");
  std::vector<std::pair<std::string, json>> out;
  for (const auto& [name, overrides] : given.items()) {
    require(overrides.is_object(), ErrorKind::invalid_argument,
            "--variants: \"" + name + "\" must map to a JSON object");
    json merged = base;
    merged.update(json(overrides));
    out.emplace_back(name, merged);
  }
  return out;
}

Slo slo(const LoadtestFlags& flags) {
  Slo s;
  if (flags.slo_ttft_ms) s.ttft_seconds = *flags.slo_ttft_ms / 1e3;
  if (flags.slo_tpot_ms) s.tpot_seconds = *flags.slo_tpot_ms / 1e3;
  if (flags.slo_e2e_ms) s.e2e_seconds = *flags.slo_e2e_ms / 1e3;
  return s;
}

// What every run of the sweep shares.
struct RunInputs {
  Api api;
  const Endpoint& endpoint;
  const std::vector<WorkItem>& items;
  const std::vector<Conversation>& conversations;
  const LoadtestFlags& flags;
  const Slo& objectives;
  bool scrape;              // the server's /metrics before and after
  bool show_progress_line;  // stderr is a terminal
};

// One run's figures for the JSON report ("summary", and "conversations",
// "speculation", "prefix_cache" where there are such), its summary and
// its requests.
struct RunOutcome {
  json figures = json::object();
  RunSummary summary;
  std::vector<RequestRecord> records;
};

// The request bodies of the workload under a variant's overrides.
std::vector<std::string> request_bodies(const RunInputs& in, const json& overrides) {
  std::vector<std::string> bodies;
  for (const WorkItem& item : in.items)
    bodies.push_back(in.api == Api::chat ? chat_request_body(item, in.flags.model, overrides)
                                         : request_body(item, in.flags.model, overrides));
  return bodies;
}

// --warmups: `count` requests of each variant before the sweep, at the
// first load point's concurrency (one at a time before an open loop), in
// no run's figures. A fresh server's first requests pay for page faults,
// cold caches and the γ controller's first measurements: in one try the
// first run on a fresh server gave 485 output tokens/s, the next five
// 1,148-1,266. Their failures count as a run's do.
void warm_up(const RunInputs& in, const SweepPoint& first,
             const std::vector<std::pair<std::string, json>>& variants, int count,
             FailureLog& failures) {
  LoadShape shape = first.shape;
  shape.concurrency =
      shape.kind == LoadShape::closed_loop ? std::min(shape.concurrency, count) : 1;
  shape.kind = LoadShape::closed_loop;
  shape.max_requests = static_cast<size_t>(count);
  shape.max_seconds = 0;
  for (const auto& [variant, overrides] : variants) {
    double duration = 0;
    const auto no_progress = [](size_t, size_t) {};
    const std::vector<RequestRecord> records =
        run_load(in.endpoint, request_bodies(in, overrides), shape, no_progress, duration);
    failures.add_run("warm-up, " + variant, records);
    const auto failed = std::count_if(records.begin(), records.end(),
                                      [](const RequestRecord& r) { return !r.ok; });
    std::printf("warm-up, %s: %zu requests in %.2f s (%td failed), left out of the figures\n",
                variant.c_str(), records.size(), duration, failed);
  }
  std::printf("\n");
}

// One variant (its body overrides) at one load point: runs it, prints
// vLLM's result block and the server's figures of the run under `title`,
// and adds its failures to `failures`.
RunOutcome run_once(const RunInputs& in, const SweepPoint& point, const json& overrides,
                    const std::string& title, FailureLog& failures) {
  const LoadtestFlags& flags = in.flags;
  const auto before =
      in.scrape ? parse_prometheus(fetch_metrics(in.endpoint)) : std::map<std::string, double>{};
  double duration = 0;
  const auto run_start = std::chrono::steady_clock::now();
  auto show_progress = [&](size_t done, size_t total) {
    if (!in.show_progress_line) return;
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - run_start).count();
    std::fprintf(stderr, "\r%s  %s\x1b[K", progress_line(done, total, elapsed, 30).c_str(),
                 title.c_str());
  };
  RunOutcome out;
  std::vector<ConversationTotals> per_conversation;
  if (in.conversations.empty()) {
    out.records =
        run_load(in.endpoint, request_bodies(in, overrides), point.shape, show_progress, duration);
  } else {
    ConversationShape shape;
    shape.concurrency = point.shape.concurrency;
    shape.max_requests = point.shape.max_requests;
    shape.max_seconds = point.shape.max_seconds;
    shape.max_turns = flags.max_turns;
    shape.history = parse_history(flags.history);
    shape.request_timeout_seconds = point.shape.request_timeout_seconds;
    ConversationRun replayed = run_conversations(
        in.endpoint, in.conversations, shape, {flags.model, flags.output_tokens, overrides},
        show_progress);
    per_conversation = conversation_totals(replayed, in.conversations);
    out.records = std::move(replayed.records);
    duration = replayed.duration_seconds;
  }
  if (in.show_progress_line) std::fprintf(stderr, "\n");
  failures.add_run(title, out.records);
  out.summary = summarize(out.records, duration, in.objectives);
  std::printf("%s", summary_table(out.summary, title).c_str());
  json& run = out.figures;
  run["summary"] = summary_json(out.summary);
  if (!in.conversations.empty()) {
    std::printf("%s", conversations_line(per_conversation).c_str());
    run["conversations"] = conversations_json(per_conversation);
  }
  if (in.scrape) {
    const auto after = parse_prometheus(fetch_metrics(in.endpoint));
    const SpeculationDelta delta = speculation_delta(before, after);
    if (delta.target_steps > 0) {
      std::printf("Speculation (server /metrics): acceptance rate %.3f, accepted per draft %.2f, "
                  "tokens per target step %.2f\n",
                  delta.acceptance_rate(), delta.accepted_per_draft(),
                  delta.tokens_per_target_step());
      if (delta.step_seconds > 0) {
        std::printf("Pipelining (server /metrics): %.0f of %.0f steps pipelined, draft busy "
                    "%.2f, target busy %.2f of step time, draft-ahead hit rate %.2f (%.0f of "
                    "%.0f)\n",
                    delta.pipelined_steps, delta.target_steps, delta.draft_busy_fraction(),
                    delta.target_busy_fraction(), delta.ahead_hit_rate(), delta.ahead_hits,
                    delta.ahead_hits + delta.ahead_misses);
      }
      run["speculation"] = {{"acceptance_rate", delta.acceptance_rate()},
                            {"accepted_per_draft", delta.accepted_per_draft()},
                            {"tokens_per_target_step", delta.tokens_per_target_step()},
                            {"drafts", delta.drafts},
                            {"draft_tokens", delta.draft_tokens},
                            {"accepted_tokens", delta.accepted_tokens},
                            {"target_steps", delta.target_steps},
                            {"generation_tokens", delta.generation_tokens},
                            {"pipelined_steps", delta.pipelined_steps},
                            {"draft_busy_fraction", delta.draft_busy_fraction()},
                            {"target_busy_fraction", delta.target_busy_fraction()},
                            {"draft_ahead_hits", delta.ahead_hits},
                            {"draft_ahead_misses", delta.ahead_misses}};
    }
    const PrefixCacheDelta cache = prefix_cache_delta(before, after);
    if (cache.target_queries > 0) {
      std::printf("Prefix cache (server /metrics, prompt tokens): target hit rate %.3f (%.0f of "
                  "%.0f), draft hit rate %.3f (%.0f of %.0f)\n",
                  cache.target_hit_rate(), cache.target_hits, cache.target_queries,
                  cache.draft_hit_rate(), cache.draft_hits, cache.draft_queries);
      run["prefix_cache"] = {{"target_queries", cache.target_queries},
                             {"target_hits", cache.target_hits},
                             {"target_hit_rate", cache.target_hit_rate()},
                             {"draft_queries", cache.draft_queries},
                             {"draft_hits", cache.draft_hits},
                             {"draft_hit_rate", cache.draft_hit_rate()}};
    }
  }
  std::printf("\n");
  std::fflush(stdout);
  return out;
}

// Each variant after the first against the first at one load point:
// printed, and returned for the JSON report. throughput[v][r] is variant
// v's output tokens/s in round r.
json compare_variants(const std::vector<std::pair<std::string, json>>& variants,
                      const std::vector<std::vector<double>>& throughput,
                      const std::string& load) {
  json out = json::array();
  const std::string& baseline = variants.front().first;
  for (size_t v = 1; v < variants.size(); ++v) {
    std::vector<double> ratios;
    for (size_t r = 0; r < throughput[v].size(); ++r) {
      // A run that emitted nothing (every request failed) has no ratio.
      if (!(throughput[0][r] > 0) || !(throughput[v][r] > 0)) continue;
      ratios.push_back(throughput[v][r] / throughput[0][r]);
    }
    const std::string name = variants[v].first + " / " + baseline + ", " + load;
    if (ratios.empty()) {
      std::printf("%s: no round where both emitted tokens\n", name.c_str());
      continue;
    }
    const RatioSummary summary = summarize_ratios(ratios);
    std::printf("%s", comparison_line(name, ratios, summary).c_str());
    json entry = {{"load", load},
                  {"variant", variants[v].first},
                  {"baseline", baseline},
                  {"output_throughput_ratios", ratios},
                  {"geometric_mean", summary.geometric_mean}};
    if (summary.low) entry["interval_95"] = {*summary.low, *summary.high};
    out.push_back(entry);
  }
  return out;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  require(out.good(), ErrorKind::not_found, "cannot write " + path.string());
  out << text;
}

}  // namespace

int run_loadtest(const LoadtestFlags& flags) {
  const Api api = parse_api(flags.endpoint);
  check_conversation_flags(flags, api);
  Endpoint endpoint = parse_url(flags.url, default_path(api));
  endpoint.api_key = flags.api_key;
  const std::vector<SweepPoint> points = sweep(flags);
  const auto runs_variants = variants(flags);
  require(flags.rounds >= 1 && flags.rounds <= 1000, ErrorKind::invalid_argument,
          "--rounds must be 1 to 1000, got " + std::to_string(flags.rounds));
  const auto rounds = static_cast<size_t>(flags.rounds);
  require(flags.warmups >= 0 && flags.warmups <= 100000, ErrorKind::invalid_argument,
          "--warmups must be 0 to 100000, got " + std::to_string(flags.warmups));
  require(flags.warmups == 0 || flags.conversations.empty(), ErrorKind::invalid_argument,
          "--warmups sends single requests: it does not go with --conversations");
  const Slo objectives = slo(flags);
  const size_t per_run = points.front().shape.max_requests;
  const std::vector<WorkItem> items = workload(flags, per_run > 0 ? per_run : 256);
  const std::vector<Conversation> conversations =
      flags.conversations.empty() ? std::vector<Conversation>{} : read_conversations(flags.conversations);
  require(!items.empty() || !conversations.empty(), ErrorKind::invalid_argument,
          flags.conversations.empty() ? "the workload has no prompts"
                                      : "the conversations file has no conversations");
  const bool scrape = !flags.no_metrics;
  // A progress line redrawn with \r is for a person watching: on a pipe or
  // in a log file it would only be noise.
  const bool show_progress_line = !flags.quiet && isatty(STDERR_FILENO) == 1;

  json report;
  report["config"] = {{"url", flags.url},
                      {"endpoint", flags.endpoint},
                      {"model", flags.model},
                      {"prompts", !flags.conversations.empty() ? flags.conversations
                                  : flags.prompts.empty()      ? "synthetic"
                                                               : flags.prompts},
                      {"requests_per_run", per_run},
                      {"duration_per_run", points.front().shape.max_seconds},
                      {"corpus", flags.corpus.empty() ? std::string(kDefaultCorpusName) : flags.corpus},
                      {"seed", flags.seed},
                      {"ignore_eos", flags.ignore_eos},
                      {"rounds", rounds},
                      {"warmups", flags.warmups}};
  report["runs"] = json::array();
  report["comparisons"] = json::array();

  std::vector<std::string> variant_names;
  for (const auto& [variant, overrides] : runs_variants) variant_names.push_back(variant);
  SweepPlots plots(variant_names);
  FailureLog failures;
  const RunInputs inputs{api, endpoint, items, conversations, flags, objectives, scrape,
                         show_progress_line};
  if (flags.warmups > 0) warm_up(inputs, points.front(), runs_variants, flags.warmups, failures);
  for (size_t point_index = 0; point_index < points.size(); ++point_index) {
    const SweepPoint& point = points[point_index];
    std::vector<std::vector<double>> throughput(runs_variants.size(), std::vector<double>(rounds));
    for (size_t round = 0; round < rounds; ++round) {
      for (size_t v : round_order(runs_variants.size(), round)) {
        const auto& [variant, overrides] = runs_variants[v];
        std::string title = variant + ", " + point.label;
        if (rounds > 1) title += ", round " + std::to_string(round + 1);
        RunOutcome outcome = run_once(inputs, point, overrides, title, failures);
        throughput[v][round] = outcome.summary.output_throughput;
        json run = {{"variant", variant}, {"load", point.label}, {"x", point.load},
                    {"round", round + 1}, {"overrides", overrides}};
        run.update(outcome.figures);
        report["runs"].push_back(run);
        // The charts draw one run per variant and load: the first round's.
        if (round == 0)
          plots.add_run(variant, point_index, point.label, point.load, outcome.summary,
                        outcome.records);
      }
    }
    if (runs_variants.size() > 1) {
      for (json& entry : compare_variants(runs_variants, throughput, point.label))
        report["comparisons"].push_back(std::move(entry));
      std::printf("\n");
    }
  }
  report["requests"] = failures.requests();
  report["failed"] = failures.failed();

  if (!flags.json.empty()) {
    write_file(flags.json, report.dump(2) + "\n");
    std::printf("wrote %s\n", flags.json.c_str());
  }
  if (!flags.plots.empty()) {
    const std::string url = "http://" + host_header(endpoint) + endpoint.path;
    plots.write(flags.plots, !flags.concurrency.empty(), points.size(),
                plot_caption(failures.requests(), failures.failed(),
                             static_cast<long long>(std::time(nullptr)), url));
    std::printf("wrote plots to %s\n", flags.plots.c_str());
  }
  std::fflush(stdout);
  if (failures.failed() == 0) return 0;
  std::fprintf(stderr, "%s", failures.describe().c_str());
  if (flags.allow_errors) {
    std::fprintf(stderr, "exit status 0 despite the failures: --allow-errors\n");
    return 0;
  }
  std::fprintf(stderr, "exit status 1: requests failed (--allow-errors accepts that)\n");
  return 1;
}

}  // namespace tandem::loadtest
