#include "tools/loadtest/cli/loadtest_flags.h"

namespace tandem::loadtest {

void add_loadtest_flags(cli::Command& app, LoadtestFlags& f) {
  using cli::add_switch;
  using cli::add_value;
  add_value(app, "--url", f.url,
            "the server; a URL without a path gets /v1/completions or /v1/chat/completions "
            "(--endpoint)")
      .type_name("URL");
  add_value(app, "--endpoint", f.endpoint,
            "completions: each prompt as /v1/completions; chat: as one user message to "
            "/v1/chat/completions")
      .type_name("completions|chat");
  add_value(app, "--model", f.model, "the request's \"model\" field (left out when empty)")
      .type_name("NAME");
  add_value(app, "--api-key", f.api_key, "sent as Authorization: Bearer KEY").type_name("KEY");
  cli::Flag concurrency = cli::add_number_list(
      app, "--concurrency", f.concurrency,
      "closed loop: a run per value, with that many requests in flight");
  cli::add_number_list(app, "--rate", f.rate,
                       "open loop: a run per value, arrivals at that many requests per second")
      .excludes(concurrency);
  add_value(app, "--burstiness", f.burstiness,
            "open loop: 1 = Poisson arrivals; < 1 burstier, > 1 steadier (gamma-distributed gaps)");
  add_value(app, "--max-concurrency", f.max_concurrency,
            "open loop: requests in flight at most; 0 = no cap");
  add_value(app, "--requests", f.requests, "requests per run (default 64 unless --duration)")
      .type_name("N");
  add_value(app, "--duration", f.duration, "seconds per run; 0 = bounded by --requests only");
  add_value(app, "--prompts", f.prompts, "a JSONL workload ({\"prompt\": ..., ...} per line)")
      .type_name("FILE.jsonl");
  add_value(app, "--conversations", f.conversations,
            "multi-turn chat (needs --endpoint chat): one conversation per line, OpenAI "
            "{\"messages\": [...]} or ShareGPT {\"conversations\": [...]}; --concurrency users "
            "replay them turn by turn")
      .type_name("FILE.jsonl");
  add_value(app, "--max-turns", f.max_turns,
            "--conversations: turns sent per conversation at most; 0 = all");
  add_value(app, "--history", f.history,
            "--conversations: the assistant text each next turn carries: live = the server's "
            "reply, recorded = the file's")
      .type_name("live|recorded");
  add_value(app, "--corpus", f.corpus,
            "the JSONL text ({\"text\": ...} per line) synthetic prompts are cut from; default: "
            "tools/loadtest/heldout.jsonl, built into the binary")
      .type_name("FILE.jsonl");
  add_value(app, "--input-words", f.input_words, "synthetic prompts: words per prompt");
  add_value(app, "--output-tokens", f.output_tokens, "max_tokens per request of synthetic prompts, and of conversations that give none");
  add_value(app, "--range", f.range,
            "synthetic prompts: lengths vary uniformly by up to this much either way");
  add_switch(app, "--ignore-eos", f.ignore_eos,
             "send \"ignore_eos\": true, so every request generates its max_tokens");
  add_value(app, "--body", f.body, "a JSON object merged into every request body")
      .type_name("JSON");
  add_value(app, "--variants", f.variants,
            "a JSON object of name -> body overrides, each run in turn at every load point, "
            "e.g. '{\"spec on\": {}, \"spec off\": {\"speculation\": false}}'")
      .type_name("JSON");
  add_value(app, "--rounds", f.rounds,
            "with --variants: run them this many times at every load point, in alternating "
            "order, and print each one's output throughput over the first's per round, with the "
            "geometric mean and its 95% interval");
  add_value(app, "--warmups", f.warmups,
            "requests per variant sent before the sweep and left out of its figures (a fresh "
            "server's first requests are slow); not with --conversations");
  add_value(app, "--slo-ttft-ms", f.slo_ttft_ms, "goodput: time to first token at most")
      .type_name("MS");
  add_value(app, "--slo-tpot-ms", f.slo_tpot_ms, "goodput: time per output token at most")
      .type_name("MS");
  add_value(app, "--slo-e2e-ms", f.slo_e2e_ms, "goodput: end-to-end latency at most")
      .type_name("MS");
  add_value(app, "--seed", f.seed, "seed of the workload and the arrivals");
  add_value(app, "--json", f.json, "write the configuration and every figure here")
      .type_name("FILE");
  add_value(app, "--plots", f.plots, "write SVG charts into this directory").type_name("DIR");
  add_value(app, "--timeout", f.timeout, "seconds one request may take, connect to end of stream");
  add_switch(app, "--no-metrics", f.no_metrics, "do not scrape the server's /metrics");
  add_switch(app, "--quiet", f.quiet,
             "no progress line (shown, with rate and ETA, only when stderr is a terminal)");
  add_switch(app, "--allow-errors", f.allow_errors,
             "exit 0 even when requests failed (they are still listed and counted)");
}

}  // namespace tandem::loadtest
