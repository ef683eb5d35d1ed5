// A sparse mixture-of-experts layer in one backend's memory, for the tests
// of kernels/moe.h: the router's weight, every expert's fused gate_up and
// down, and the layer's forward (router matmul, moe_route, moe_experts).
#pragma once

#include <span>
#include <vector>

#include "kernels/backend.h"
#include "kernels/moe.h"

namespace tandem::testing {

struct MoeShape {
  int C = 0, I = 0, E = 0, top_k = 0;
  bool norm_topk_prob = true;
};

class MoeLayer {
 public:
  // gate (E, C) f32; gate_proj[e], up_proj[e] (I, C); down_proj[e] (C, I).
  MoeLayer(Backend& backend, const MoeShape& shape, std::span<const float> gate,
           const std::vector<std::vector<float>>& gate_proj,
           const std::vector<std::vector<float>>& up_proj,
           const std::vector<std::vector<float>>& down_proj)
      : backend_(backend), shape_(shape) {
    gate_ = backend.allocate(gate.size());
    backend.upload(gate, gate_.data());
    for (int e = 0; e < shape.E; ++e) {
      std::vector<float> gate_up(gate_proj[e]);
      gate_up.insert(gate_up.end(), up_proj[e].begin(), up_proj[e].end());
      gate_up_.push_back(backend.upload_weights(gate_up));
      down_.push_back(backend.upload_weights(down_proj[e]));
      views_.push_back({gate_up_.back().view(), down_.back().view()});
    }
  }

  // out (T, C) of x (T, C) on the host; plan gets the routing.
  std::vector<float> forward(std::span<const float> x, MoePlan& plan) {
    const int T = static_cast<int>(x.size()) / shape_.C;
    Buffer xb = backend_.allocate(x.size()), logits = backend_.allocate(size_t(T) * shape_.E);
    Buffer out = backend_.allocate(x.size());
    if (T == 0) return {};
    backend_.upload(x, xb.data());
    backend_.matmul(xb.data(), WeightView(gate_.data()), nullptr, T, shape_.C, shape_.E,
                    logits.data());
    backend_.moe_route(logits.data(), T, shape_.E, shape_.top_k, shape_.norm_topk_prob, plan);
    moe_experts(backend_, xb.data(), plan, views_, shape_.C, shape_.I, scratch_, out.data());
    std::vector<float> host(x.size());
    backend_.download(out.data(), host);
    return host;
  }

 private:
  Backend& backend_;
  MoeShape shape_;
  Buffer gate_;
  std::vector<Buffer> gate_up_, down_;
  std::vector<MoeExpertWeights> views_;
  MoeScratch scratch_;
};

}  // namespace tandem::testing
