#include "coordinator/cli/commands.h"

namespace tandem::cli {

CommandLine tandem_command_line() {
  CommandLine cli("tandem",
                  "Tandem: a speculative-decoding LLM server. `tandem COMMAND --help` lists a "
                  "command's flags.\nBenchmarks: tandem-bench; load tests: tandem-loadtest.");
  cli.add_command("serve",
                  "serve a YAML deployment (configs/README.md) until SIGTERM or SIGINT; "
                  "--check-config validates one without loading models",
                  define_serve);
  cli.add_command("generate",
                  "stream a completion of --prompt to stdout: plain decoding, or speculative "
                  "with --draft DIR or --ngram (the same output as the target alone)",
                  define_generate);
  cli.add_command("tokenize",
                  "print the token ids of --text as JSON (--decode: ids to text)",
                  define_tokenize);
  cli.add_command("chat-template",
                  "print the prompt text a /v1/chat/completions --request renders to with the "
                  "model's chat template",
                  define_chat_template);
  cli.program().footer(
      "Models run on --backend cpu (default) or --backend cuda [--device N] [--weight-dtype "
      "auto|bf16|fp16|fp32] (auto by default: as the checkpoints store the weights when that is "
      "bf16 or fp16, else fp32 on cpu and bf16 on cuda; docs/gpu.md).");
  return cli;
}

}  // namespace tandem::cli
