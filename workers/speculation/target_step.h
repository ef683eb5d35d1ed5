// The engine's own description of one target pass and its outcome, and of
// the q rows a drafter in another process made: plain structs, nothing about
// the wire. The engine hands a TargetStep to its TargetExecutor and gets a
// TargetResult back; whether the pass runs in this process or on a
// tensor-parallel group elsewhere is the executor's business (the cluster
// wing encodes these structs for the wire: cluster/wire/).
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/sampling_params.h"
#include "workers/speculation/logit_processing.h"
#include "workers/speculation/engine_types.h"
#include "workers/speculation/session_fault.h"

namespace tandem {

// Which standardized draft rows q_1..q_γ' one draft step produced for its
// sampled sessions. The rows themselves follow on the q link, the entries'
// rows side by side in entry order, in runs of consecutive entries (one
// transfer each: runs[i] entries' rows × vocab floats), the receiver
// putting them side by side again (cluster/links/q_rows_link.h):
// over NCCL they go from the draft GPU to the target GPU without touching
// either host.
// A QRows with no entries ends the stream: the draft rank sends one after
// Shutdown, and whoever takes its rows takes them until then, because a
// large send waits for its receiver and rows nobody needed would keep the
// draft rank (and so the job) from finishing.
struct QRows {
  uint64_t step = 0;
  int32_t vocab = 0;
  struct Entry {
    uint64_t session = 0;
    int32_t rows = 0;  // γ'
  };
  std::vector<Entry> entries;
  std::vector<int32_t> runs;  // entries per transfer, Σ = entries.size(); each > 0
};

// Where the q rows of a verified block come from. (1 was rows inline in
// the message, before they went over the q rows link; it is not used.)
enum class QSource : uint8_t {
  one_hot = 0,     // deterministic drafter or greedy session: q_j one-hot at x_j
  draft_rank = 2,  // in the QRows of draft step q_step, over the q rows link
  // In the verifying process's memory, handed to the executor beside the
  // message (TargetExecutor::run). Never on the wire: the coordinator sends
  // such rows to a remote target over the q rows link, as draft_rank.
  local = 3,
};

struct TargetStep {
  uint64_t step = 0;
  struct Sequence {
    int64_t seq = 0;                // the coordinator's KV sequence id
    int32_t start = 0;              // cached positions kept (truncate to this first)
    std::vector<int32_t> tokens;    // new tokens: chunk or catch-up, then the drafts
    int32_t logit_count = 0;        // logits for the last logit_count tokens
    // Verification (when verify): the last `gamma` tokens are the drafts.
    bool verify = false;
    int32_t gamma = 0;
    SamplingParams sampling;
    int64_t first_position = 0;     // absolute position of x_1
    float lenience = 1.0f;
    uint64_t session = 0;           // matches QRows entries
    QSource q_source = QSource::one_hot;
    // q_source draft_rank: the draft step whose QRows hold this block's rows,
    // from row q_first_row on (a block drafted ahead behind its guessed
    // bonus token starts at row 1). Draft steps that were drafted but never
    // verified (a missed guess, a session that ended) leave QRows no step
    // names; target rank 0 drops them once a later step is named.
    uint64_t q_step = 0;
    int32_t q_first_row = 0;
    // Sessions that ask for logit processing (logit_processing.h), and only
    // they: one entry, and the committed tokens (prompt, then output) the
    // block's rows follow. Empty for everyone else, so they carry nothing.
    std::vector<LogitProcessing> processing = {};
    std::vector<int32_t> history = {};
    // Logprobs (logprob_rows.h), only for sessions that ask. logprobs >= 0:
    // each token a verified block emits is scored under the row it was
    // sampled from, with the top `logprobs` tokens. `scored`: prompt tokens
    // scored by the first scored.size() logits rows (raw log-softmax, top
    // max(logprobs, 0)); logit_count then covers those rows too, and the
    // block's γ + 1 rows are always the last ones.
    int32_t logprobs = -1;
    std::vector<int32_t> scored;
    // The coordinator's block table (TargetKv::stamp), which a rank's
    // driven mirror cache adopts (PagedKvCache::adopt_blocks): the block
    // numbers from index table_from on, covering positions up to start +
    // tokens.size(). From 0 the first time the sequence appears (it may
    // start on cached prefix blocks this rank never saw it hold), else
    // from start / block_size: the blocks before never change.
    int32_t table_from = 0;
    std::vector<int32_t> table;
  };
  std::vector<Sequence> sequences;
  std::vector<int64_t> released;   // KV sequences to free before this step
  // Sequences the coordinator truncated since the last step (rejected
  // drafts) and their new lengths, applied after `released` and before any
  // reservation: the blocks a truncation freed on the coordinator may hold
  // another sequence's tokens in this step, also when the truncated
  // sequence itself sits the step out.
  std::vector<int64_t> truncated;
  std::vector<int32_t> truncated_lengths;  // one per truncated sequence
};

struct TargetResult {
  uint64_t step = 0;
  struct Outcome {
    int32_t accepted = 0;  // n
    int32_t token = 0;     // t
    double beta_sum = 0;   // Σ β_j over the block's drafts
    int32_t beta_count = 0;
    // The block's own fault (its sampling parameters, its non-finite
    // logits): n and t mean nothing then, and the engine ends its session.
    SessionFault fault = SessionFault::none;
    // When the block asked (Sequence::logprobs >= 0): n + 1 entries, the
    // accepted drafts' and t's, each under its own row p_j.
    std::vector<TokenLogprob> logprobs;
  };
  std::vector<Outcome> outcomes;     // one per verifying sequence, in step order
  // One per sequence, in step order: the scores of its `scored` tokens
  // (empty for a sequence that scores none).
  std::vector<std::vector<TokenLogprob>> prompt_logprobs;
  double forward_seconds = 0;        // the sharded forward pass on target rank 0
  double communication_seconds = 0;  // of which waiting in collectives
  // After the forward pass on target rank 0: verifying the blocks and
  // scoring prompts (any wait there for the draft's q rows included).
  double verify_seconds = 0;
};

}  // namespace tandem
