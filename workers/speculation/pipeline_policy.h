// PipelinePolicy: whether the draft works while the target verifies, and how.
//
// In Algorithm 1 the draft waits while the target verifies and the target
// waits while the draft drafts. With the draft on a device of its own (a
// draft rank, a draft GPU: Drafter::overlaps()) the engine can hide one
// behind the other in two ways:
//   ahead     while block k of a session is verified, the draft drafts its
//             block k+1 as if all of block k were accepted and the target's
//             bonus token were the draft's own guess. When verification
//             keeps all of block k and the target's token equals the guess,
//             block k+1 is verified at once without drafting; otherwise it
//             is dropped. Pays for latency (batch 1); per session only when
//             its hit rate α^(γ+1) is high enough to be worth the draft time.
//   pingpong  the decoding sessions form two groups: while the target
//             verifies group A, the draft drafts group B, then they swap.
//             Pays for throughput when both passes grow with their batch.
// Both are lossless: a block drafted ahead or apart is drawn by the same
// draft model from the same prefix with the same Philox uniforms (keyed by
// absolute position) as the block a plain step would draft, so outputs are
// identical with pipelining on or off.
//
// choose_shape() picks, for one step, the shape with the least expected
// time per verified block per session, from measured costs:
//   plain     D + T                        (draft, then verify)
//   ahead     (1 - h) D + max(T, A)        (misses draft first; the ahead
//                                           drafts run during the target pass)
//   pingpong  max(D_a, T_b) + max(D_b, T_a) (two steps, one block each)
// D: one block drafted for every decoding session; T: their target pass;
// A: drafting ahead for them, as measured on the drafter (until measured,
// f·D with f = (γ+1)/γ: one pass more; in practice less, since a lockstep
// draft also pays a catch-up pass and the messages of a round trip);
// h: the mean hit rate; a and b the two groups. Whether to draft at all
// (γ = 0, plain decoding) stays the γ policy's and the guard's decision.
// Since A is only learned by drafting ahead, an automatic policy that keeps
// choosing plain still drafts ahead once every tuning.ahead_probe_every
// steps (PipelinedDrafting, pipelined_drafting.h, runs the steps).
#pragma once

#include <functional>
#include <string_view>

namespace tandem {

enum class PipelineMode { off, automatic, ahead, pingpong };  // the deployment's choice
enum class StepShape { plain, ahead, pingpong };              // what one step does

const char* pipeline_mode_name(PipelineMode mode);
const char* step_shape_name(StepShape shape);

struct PipelinePolicy {
  PipelineMode mode = PipelineMode::automatic;
  // Draft ahead for a session only if its expected hit rate α^(γ+1) is at
  // least this (a miss costs the draft time of one block).
  double min_hit_rate = 0.2;
};

// Measured (or modelled) seconds, all at the current batch.
struct PipelineCosts {
  double draft_all = 0;      // D: one block drafted for all N decoding sessions
  double target_all = 0;     // T: their target pass
  double draft_group_a = 0;  // D_a, D_b, T_a, T_b: the same for each ping-pong group
  double draft_group_b = 0;
  double target_group_a = 0;
  double target_group_b = 0;
  double hit_rate = 0;       // h: mean expected hit rate of drafting ahead
  double ahead_factor = 1;   // f = (γ+1)/γ
  double ahead_draft = 0;    // A, measured; 0 until it has been
};

// Expected seconds per verified block per session of each shape.
double plain_block_seconds(const PipelineCosts& c);
double ahead_block_seconds(const PipelineCosts& c);
double pingpong_block_seconds(const PipelineCosts& c);

// Ping-pong group sizes: how many of n decoding sessions draft apart (a),
// the rest verifying, so that a two-step cycle max(D(a), T(n-a)) +
// max(D(n-a), T(a)) is shortest; D(k) and T(k) are the seconds of drafting
// and verifying k sessions' blocks. Without measurements (a 0 anywhere), or
// on ties, the groups are even.
int pingpong_split(int n, const std::function<double(int)>& draft,
                   const std::function<double(int)>& target);

// The shape of the next step. Plain unless the drafter overlaps and costs
// have been measured (D and T > 0); a forced mode is obeyed where it can
// run (ping-pong needs two decoding sessions, else it drafts ahead).
StepShape choose_shape(const PipelinePolicy& policy, const PipelineCosts& costs, bool overlaps,
                       int decoding_sessions);

}  // namespace tandem
