#include "kernels/cuda/step_graphs.h"

#include <cstdio>
#include <exception>

#include "kernels/cuda/cuda_check.h"

namespace tandem::cuda {
namespace {

// Graphs kept: the shapes one deployment steps through (batch sizes × block
// lengths × block-table sizes), times the segments of a step: one for an
// unsplit model, two per layer and two more for a tensor-parallel shard
// (162 for 80 layers), whose graphs hold about ten nodes each.
constexpr size_t kMaxGraphs = 8192;
// Keys remembered from their first sighting; forgotten all at once beyond.
constexpr size_t kMaxSeenOnce = 65536;

}  // namespace

StepGraphs::~StepGraphs() {
  for (auto& [key, graph] : graphs_) cudaGraphExecDestroy(graph);
}

void StepGraphs::begin() {
  stop_recording();
  recording_ = enabled_;
}

void StepGraphs::stop_recording() {
  recording_ = false;
  launches_.clear();
  key_.clear();
}

void StepGraphs::run_eagerly() {
  if (!recording_) return;
  ++stats_.eager;
  std::vector<std::function<void()>> launches = std::move(launches_);
  stop_recording();
  for (const auto& launch : launches) launch();
}

void StepGraphs::finish(cudaStream_t stream) {
  if (!recording_) return;
  if (launches_.empty()) return stop_recording();
  if (const auto found = graphs_.find(key_); found != graphs_.end()) {
    stop_recording();
    ++stats_.replayed;
    TANDEM_CUDA_CHECK(cudaGraphLaunch(found->second, stream));
    return;
  }
  const size_t hash = std::hash<std::string>{}(key_);
  if (seen_once_.count(hash)) {
    capture_and_launch(stream);
    return;
  }
  if (seen_once_.size() >= kMaxSeenOnce) seen_once_.clear();
  seen_once_.insert(hash);
  run_eagerly();
}

void StepGraphs::capture_and_launch(cudaStream_t stream) {
  // Launches during capture are recorded into the graph, not run.
  TANDEM_CUDA_CHECK(cudaStreamBeginCapture(stream, cudaStreamCaptureModeThreadLocal));
  bool captured = true;
  try {
    for (const auto& launch : launches_) launch();
  } catch (const std::exception&) {
    captured = false;  // a launch the capture refused: end it, run as called
  }
  cudaGraph_t graph = nullptr;
  if (cudaStreamEndCapture(stream, &graph) != cudaSuccess) captured = false;
  cudaGraphExec_t exec = nullptr;
  if (captured && graph && cudaGraphInstantiate(&exec, graph, 0) != cudaSuccess) captured = false;
  if (graph) cudaGraphDestroy(graph);
  if (!captured) {
    // Clear the capture's error and stop trying: what cannot be captured
    // now will not be next time. The step still runs, op by op (and a real
    // error in it is raised there).
    cudaGetLastError();
    if (exec) cudaGraphExecDestroy(exec);
    std::fprintf(stderr, "tandem: CUDA graph capture failed; running steps op by op\n");
    enabled_ = false;
    run_eagerly();
    return;
  }
  if (graphs_.size() >= kMaxGraphs) forget_oldest_graph();
  graph_order_.push_back(key_);
  graphs_.emplace(key_, exec);
  stop_recording();
  ++stats_.captured;
  TANDEM_CUDA_CHECK(cudaGraphLaunch(exec, stream));
}

void StepGraphs::forget_oldest_graph() {
  // The owner synchronizes after every step: no graph is running now.
  const auto oldest = graphs_.find(graph_order_.front());
  cudaGraphExecDestroy(oldest->second);
  graphs_.erase(oldest);
  graph_order_.pop_front();
}

}  // namespace tandem::cuda
