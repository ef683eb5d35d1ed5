#include "tools/soak/cli/soak_flags.h"

namespace tandem::soak {

void add_soak_flags(cli::Command& app, SoakFlags& f) {
  using cli::add_switch;
  using cli::add_value;
  add_value(app, "--url", f.url, "the server (http://host:port; loopback for tests)").type_name("URL");
  cli::Flag duration = add_value(app, "--duration", f.duration, "seconds of traffic");
  add_value(app, "--minutes", f.minutes, "minutes of traffic (instead of --duration)")
      .type_name("MINUTES")
      .excludes(duration);
  add_value(app, "--warmup", f.warmup,
            "seconds before the RSS baseline is taken; 0 = a quarter of the run, at most 60");
  add_value(app, "--clients", f.clients, "simulated clients, each sending one request after another");
  add_value(app, "--burst-every", f.burst_every, "seconds between bursts; 0 = no bursts");
  add_value(app, "--burst-size", f.burst_size,
            "requests sent at once in a burst (more than the server queues: it answers 429)");
  add_value(app, "--timeout", f.timeout, "seconds one request may take, client side");
  add_value(app, "--health-limit", f.health_limit, "the slowest acceptable /health answer, seconds");
  add_value(app, "--rss-limit", f.rss_limit, "the largest RSS growth after the warm-up, percent");
  add_value(app, "--drain", f.drain,
            "seconds the server may take, once the traffic stops, to be idle (/metrics)");
  add_value(app, "--wait-ready", f.wait_ready,
            "seconds to wait, before the traffic, for GET /ready to answer 200 (models loaded)");
  cli::add_number_list(app, "--pid", f.pids,
                       "the server's processes (comma-separated); default: the one listening on the "
                       "URL's port and, under mpirun, every rank");
  add_switch(app, "--no-rss", f.no_rss, "do not watch the server's memory (a server on another machine)");
  add_value(app, "--mix", f.mix,
            "JSON object of kind -> weight over the defaults, e.g. '{\"timeout\": 0}' (kinds: "
            "completion, completion_stream, chat, chat_stream, disconnect, bad_json, "
            "bad_parameter, unknown_route, timeout)")
      .type_name("JSON");
  add_value(app, "--corpus", f.corpus, "the text prompts are cut from").type_name("FILE");
  add_value(app, "--input-words", f.input_words, "words per prompt");
  add_value(app, "--output-tokens", f.output_tokens, "good requests ask for 1 to this many tokens");
  add_value(app, "--long-tokens", f.long_tokens,
            "tokens asked by the requests cut off mid-stream and by those meant to time out");
  add_value(app, "--model", f.model, "the requests' \"model\" field (left out when empty)").type_name("NAME");
  add_value(app, "--api-key", f.api_key, "sent as Authorization: Bearer KEY").type_name("KEY");
  add_value(app, "--seed", f.seed, "seed of the prompts and of the mix");
  add_value(app, "--json", f.json, "write the report's every figure here").type_name("FILE");
  add_switch(app, "--quiet", f.quiet, "no progress lines");
}

}  // namespace tandem::soak
