// StepGraphs: records the launches of one model step and replays them as a
// CUDA graph when a later step launches exactly the same (Backend::
// begin_step_graph). A decode or verify step of an 8B model is about 500
// small launches; a graph launch replaces them with one. A tensor-parallel
// shard's step is recorded in segments, one between each two collectives
// (LlamaModel::between_graph_segments): each segment is a "step" here.
//
// While recording, each launch is kept as a closure and its arguments are
// appended, byte for byte, to the step's key: the launcher's address, every
// pointer, size and scalar, and for host metadata the pinned and device
// addresses its copy uses. Two steps with equal keys launch the same kernels
// with the same arguments over the same memory; only the contents of the
// pinned metadata differ, and the graph's copy nodes read those when it is
// launched. So replaying the graph recorded from one is running the other.
//
// At the end of the step (finish): a key seen with a graph replays it; a key
// seen once before is captured into a new graph (so one-off shapes, such as
// prefill chunks, never pay for a capture); a new key runs op by op.
#pragma once

#include <cuda_runtime.h>

#include <cstdint>
#include <deque>
#include <functional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "kernels/backend.h"

namespace tandem::cuda {

class StepGraphs {
 public:
  StepGraphs() = default;
  StepGraphs(const StepGraphs&) = delete;
  StepGraphs& operator=(const StepGraphs&) = delete;
  ~StepGraphs();  // the owner makes its device current first

  void set_enabled(bool enabled) { enabled_ = enabled; }
  bool recording() const { return recording_; }
  // Starts recording (when enabled). A recording left unfinished (its step
  // failed before synchronizing) is dropped: none of its ops had run.
  void begin();
  // Appends bytes of one argument to the key of the step being recorded.
  void key(const void* bytes, size_t size) { key_.append(static_cast<const char*>(bytes), size); }
  // Appends one launch (or copy) to the step being recorded.
  void add(std::function<void()> launch) { launches_.push_back(std::move(launch)); }
  // Runs what was recorded, op by op, on `stream`, and stops recording: an
  // op that cannot be recorded is next.
  void run_eagerly();
  // Ends the step: replays, captures or runs it on `stream` (see above).
  // Does not wait for it.
  void finish(cudaStream_t stream);
  Backend::StepGraphStats stats() const { return stats_; }

 private:
  void capture_and_launch(cudaStream_t stream);
  // Drops what was recorded (it ran, was launched as a graph, or never will).
  void stop_recording();
  void forget_oldest_graph();

  bool enabled_ = true;
  bool recording_ = false;
  std::string key_;
  std::vector<std::function<void()>> launches_;
  std::unordered_map<std::string, cudaGraphExec_t> graphs_;
  std::deque<std::string> graph_order_;     // oldest first, for eviction
  std::unordered_set<size_t> seen_once_;    // hashes of keys run op by op
  Backend::StepGraphStats stats_;
};

}  // namespace tandem::cuda
