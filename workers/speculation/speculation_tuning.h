// SpeculationTuning: the constants behind choosing γ and pipelining, with
// today's values as defaults. A deployment sets them under `speculation:`
// (configs/README.md names each key); the engine's γ controller and its
// pipelined drafting read them from here and nowhere else.
#pragma once

namespace tandem {

struct SpeculationTuning {
  // The α estimate: a session's measured Σβ / n shrunk toward prior_alpha
  // as if prior_weight positions had been measured at it
  // ((Σβ + prior_alpha · prior_weight) / (n + prior_weight)), so that a
  // young session's first few positions do not swing γ.
  double prior_alpha = 0.6;
  double prior_weight = 4;
  // A session whose best γ is 0 still drafts one token (a probe) after
  // probe_every verifying steps, so its α can recover when the text becomes
  // predictable; each probe that does not bring it back doubles the
  // interval, up to max_probe_every (a probe costs the draft cache's
  // catch-up over every token since the last one).
  int probe_every = 8;
  int max_probe_every = 64;
  // The guard (measured drafting vs plain throughput per batch size): the
  // losing side is re-measured after guard_explore_every decisions (more
  // while drafting loses), and a verdict needs guard_min_steps of each
  // (drafting's counted afresh at each re-measurement).
  int guard_explore_every = 64;
  int guard_min_steps = 8;
  // Pipelined drafting: plain steps between two steps that draft ahead only
  // to measure what drafting ahead costs again.
  int ahead_probe_every = 32;
};

}  // namespace tandem
