// The sessions `tandem-bench batching` and `pipeline` decode: a few
// English openings (the tiny models' kind of text), cycled over the batch.
#pragma once

#include <chrono>
#include <iterator>

#include "coordinator/models/model_flags.h"
#include "workers/speculation/speculative_engine.h"

namespace tandem::bench {

inline constexpr const char* kBenchPrompts[] = {
    "The history of the city",      "In the morning, the committee",
    "She looked at the letter and", "The results of the study show that",
    "When the war was over, the",   "He said that the new law",
    "The church stood on the hill", "After dinner we walked down to the",
};

// Session i of a batch: prompt i (cycled), max_tokens new tokens, seed i + 1.
inline SpeculationRequest bench_session(const OpenModel& open, int i, int max_tokens,
                                        float temperature, GammaPolicy gamma) {
  SpeculationRequest request;
  request.prompt = open.target.tokenizer->encode(kBenchPrompts[i % std::size(kBenchPrompts)]);
  request.max_new_tokens = max_tokens;
  request.sampling.temperature = temperature;
  request.sampling.seed = static_cast<uint64_t>(i + 1);
  request.gamma = gamma;
  return request;
}

// Steps `engine` until every session has ended, handing each step's report
// to on_step: the wall time, the steps and the tokens emitted.
struct DecodeRun {
  double seconds = 0;
  int steps = 0;
  long tokens = 0;
};
template <typename OnStep>
DecodeRun decode_all(SpeculativeEngine& engine, OnStep on_step) {
  DecodeRun run;
  const auto start = std::chrono::steady_clock::now();
  while (engine.running() + engine.waiting() > 0) {
    engine.step();
    const StepReport& step = engine.last_step();
    for (const auto& session : step.sessions) run.tokens += session.emitted;
    ++run.steps;
    on_step(step);
  }
  run.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return run;
}

}  // namespace tandem::bench
