// `tandem generate`: stream a completion of one prompt to stdout with plain
// autoregressive decoding (the baseline speculative decoding must match).
#include <cstdio>
#include <iostream>

#include "common/error.h"
#include "coordinator/cli/commands.h"
#include "coordinator/cli/model_options.h"
#include "workers/plain_decoder.h"

namespace tandem::cli {

int generate_command(const Words& words) {
  auto options = model_option_names();
  options.insert({"prompt", "max-tokens", "temperature", "top-k", "top-p", "seed"});
  const Args args(words, options, {"stats", "no-special"});
  require(args.has("model"), ErrorKind::invalid_argument,
          "generate needs --model DIR (a checkpoint with tokenizer.json)");
  OpenModel open = open_model(args);
  const Tokenizer& tokenizer = *open.tokenizer;

  DecodeRequest request;
  request.prompt = tokenizer.encode(args.require("prompt"), !args.has("no-special"));
  request.max_new_tokens = static_cast<int>(args.get_int("max-tokens", 64));
  request.sampling.temperature = static_cast<float>(args.get_double("temperature", 0.0));
  request.sampling.top_k = static_cast<int>(args.get_int("top-k", 0));
  request.sampling.top_p = static_cast<float>(args.get_double("top-p", 1.0));
  request.sampling.seed = static_cast<uint64_t>(args.get_int("seed", 0));
  require(request.sampling.temperature >= 0, ErrorKind::invalid_argument,
          "--temperature must be >= 0 (0 = greedy)");
  request.stop_ids = open.model->config().eos_token_ids;
  if (auto eos = tokenizer.eos_id(); eos && request.stop_ids.empty()) request.stop_ids = {*eos};

  StreamingDecoder text(tokenizer, /*skip_special=*/true);
  const DecodeStats stats = decode_plain(*open.model, *open.cache, request, [&](int32_t token) {
    std::cout << text.push(token) << std::flush;
    return true;
  });
  std::cout << text.flush() << std::endl;

  if (args.has("stats")) {
    const int later = stats.new_tokens - 1;
    std::fprintf(stderr,
                 "prompt %d tokens, %d new; first token after %.1f ms; %.1f tokens/s after it\n",
                 stats.prompt_tokens, stats.new_tokens, stats.prefill_seconds * 1e3,
                 later > 0 && stats.decode_seconds > 0 ? later / stats.decode_seconds : 0.0);
  }
  return 0;
}

}  // namespace tandem::cli
