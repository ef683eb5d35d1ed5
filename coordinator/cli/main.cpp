// tandem: one binary for every role and tool. `tandem help` lists commands.
#include <cstdio>
#include <exception>
#include <map>
#include <string>

#include "common/error.h"
#include "coordinator/cli/commands.h"

namespace {

constexpr const char* kUsage = R"(usage: tandem <command> [options]

commands:
  serve     --config FILE            serve a YAML deployment (default configs/local.yaml)
            --check-config FILE      validate a deployment without loading models
  generate  --model DIR --prompt T   stream a completion to stdout (plain decoding)
  tokenize  --model DIR --text T     print token ids as JSON (--decode: ids -> text)
  bench     forward --model DIR|--dummy CONFIG_JSON
                                     decode and prefill throughput of one model
  bench     matmul                   our CPU matmul vs OpenBLAS sgemm, side by side
  bench     speculative --model DIR --draft DIR
                                     alpha, c, measured and predicted speed-up per gamma
  bench     steps --dummy CONFIG [--dummy-draft CONFIG]
                                     v(k): cost of k new tokens per sequence vs 1; c
  bench     batching --model DIR --draft DIR
                                     speculation off / fixed gamma / auto at batch 1..32
  bench     pipeline --model DIR --draft DIR (with OMP_NUM_THREADS=1)
                                     pipelined vs lockstep drafting, draft on its own thread
  bench     tensor-parallel --model DIR|--dummy CONFIG (under mpirun -np 2)
                                     TP 1 vs TP N step times, communication apart
  generate  ... --draft DIR | --ngram [--gamma N|auto] [--lenience L]
                                     speculative decoding (same output as the target alone)
  loadtest  --url URL --concurrency 1,4,16 | --rate 2,4
                                     throughput and latency of an OpenAI completions endpoint
                                     (vLLM bench serve's metrics; --json, --plots DIR)
  generate and bench run on --backend cpu (default) or --backend cuda [--device N]
  [--weight-dtype bf16|fp16|fp32] (bf16 by default on cuda; see docs/gpu.md)
  help                               this text
)";

}  // namespace

int main(int argc, char** argv) {
  using namespace tandem::cli;
  const std::map<std::string, int (*)(const Words&)> commands = {
      {"serve", serve_command},
      {"generate", generate_command},
      {"tokenize", tokenize_command},
      {"bench", bench_command},
      {"loadtest", loadtest_command},
  };
  if (argc < 2 || std::string(argv[1]) == "help" || std::string(argv[1]) == "--help") {
    std::fputs(kUsage, argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  auto it = commands.find(argv[1]);
  if (it == commands.end()) {
    std::fprintf(stderr, "tandem: unknown command '%s'\n\n%s", argv[1], kUsage);
    return 2;
  }
  try {
    return it->second(Words(argv + 2, argv + argc));
  } catch (const tandem::Error& error) {
    std::fprintf(stderr, "tandem %s: error: %s\n", argv[1], error.what());
    return error.kind() == tandem::ErrorKind::invalid_argument ? 2 : 1;
  } catch (const std::exception& error) {
    std::fprintf(stderr, "tandem %s: internal error: %s\n", argv[1], error.what());
    return 1;
  }
}
