#include <gtest/gtest.h>
#include <chrono>
#include <cstdio>
#include "workers/kv_cache.h"
#include "workers/llama_model.h"
#include "workers/llama_weights.h"
#include "workers/plain_decoder.h"
namespace tandem {
namespace {
double now() { return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count(); }
TEST(TinySpeculation, Probe) {
  auto backend = make_cpu_backend();
  ModelConfig c;
  c.architecture = "LlamaForCausalLM";
  c.hidden_size = 256; c.intermediate_size = 688; c.num_layers = 8; c.num_heads = 8; c.num_kv_heads = 4;
  c.head_dim = 32; c.vocab_size = 4096; c.max_position_embeddings = 256; c.rms_norm_eps = 1e-5;
  PagedKvCache cache(c, 1024, 16, *backend);
  LlamaModel model(c, make_dummy_weights(c, 1, *backend), *backend);
  std::vector<int32_t> prompt;
  for (int i = 0; i < 20; ++i) prompt.push_back(i * 37 % 4096);
  double t0 = now();
  DecodeRequest r{prompt, 128, {}, {}};
  r.sampling.temperature = 0;
  int n = 0;
  decode_plain(model, cache, r, [&](int32_t) { ++n; return true; });
  double t1 = now();
  std::printf("decode_plain 128 tokens: %.3f s\n", t1 - t0);
  // batched: 50 seqs, 1 token each, 128 steps
  std::vector<SequenceId> seqs;
  std::vector<std::vector<int32_t>> feeds(50, prompt);
  for (int i = 0; i < 50; ++i) { seqs.push_back(cache.create_sequence()); cache.reserve(seqs.back(), 160); }
  t0 = now();
  for (int s = 0; s < 128; ++s) {
    std::vector<SequenceStep> steps;
    for (int i = 0; i < 50; ++i) steps.push_back({seqs[i], feeds[i], 1});
    model.forward(steps, cache);
    for (int i = 0; i < 50; ++i) feeds[i] = {static_cast<int32_t>(s)};
  }
  t1 = now();
  std::printf("batched 50 x 128 steps: %.3f s\n", t1 - t0);
}
}
}
