#include "workers/speculation/model_drafter.h"

#include <algorithm>
#include <chrono>
#include <cstring>

#include "common/error.h"
#include "kernels/cpu/sampling.h"
#include "kernels/philox.h"

namespace tandem {

ModelDrafter::ModelDrafter(LlamaModel& model, PagedKvCache& cache)
    : model_(model), cache_(cache),
      probs_(model.backend().allocate(static_cast<size_t>(model.config().vocab_size))) {}

ModelDrafter::~ModelDrafter() {
  if (apart_work_.valid()) apart_work_.wait();  // a draft still running on its thread
  for (const auto& [session, seq] : sequences_) cache_.release(seq);
}

SequenceId ModelDrafter::sequence_for(SessionKey session) {
  auto it = sequences_.find(session);
  if (it == sequences_.end()) it = sequences_.emplace(session, cache_.create_sequence()).first;
  return it->second;
}

void ModelDrafter::propose(std::span<const DraftRequest> requests,
                           std::vector<DraftProposal>& proposals) {
  const auto start = std::chrono::steady_clock::now();
  const int V = model_.config().vocab_size;
  Backend& backend = model_.backend();
  proposals.assign(requests.size(), DraftProposal{});

  // Round j feeds each still-drafting session its pending tokens: in round 1
  // the committed tokens its cache lacks, later its last drafted token.
  std::vector<size_t> drafting;  // indices into requests
  std::vector<std::vector<int32_t>> pending(requests.size());
  std::vector<int> gammas(requests.size(), 0);  // what each request will get
  for (size_t i = 0; i < requests.size(); ++i) {
    const DraftRequest& r = requests[i];
    if (r.gamma <= 0) continue;
    const SequenceId seq = sequence_for(r.session);
    const int cached = cache_.length(seq);
    require(cached < static_cast<int>(r.tokens.size()), ErrorKind::internal,
            "draft cache of session " + std::to_string(r.session) + " is not behind its tokens");
    pending[i].assign(r.tokens.begin() + cached, r.tokens.end());
    // The draft's own context may be shorter than the target's.
    const int gamma = std::min(r.gamma, model_.config().max_position_embeddings -
                                            static_cast<int>(r.tokens.size()));
    if (gamma <= 0) continue;
    // Room for the catch-up and γ-1 drafted tokens (x_γ is never fed).
    if (!cache_.reserve(seq, static_cast<int>(r.tokens.size()) + gamma - 1)) continue;
    gammas[i] = gamma;
    drafting.push_back(i);
  }

  last_passes_ = 0;
  for (int round = 1; !drafting.empty(); ++round) {
    std::vector<SequenceStep> steps;
    for (size_t i : drafting) steps.push_back({sequences_.at(requests[i].session), pending[i], 1});
    const float* logits = model_.forward(steps, cache_);
    ++last_passes_;

    std::vector<size_t> still;
    for (size_t row = 0; row < drafting.size(); ++row) {
      const size_t i = drafting[row];
      const DraftRequest& r = requests[i];
      DraftProposal& out = proposals[i];
      const float* logit_row = logits + row * static_cast<size_t>(V);
      const int64_t position = static_cast<int64_t>(r.tokens.size()) + round - 1;
      int32_t token = 0;
      if (r.sampling.greedy()) {
        backend.argmax(logit_row, 1, V, &token);
      } else {
        backend.standardize(logit_row, 1, V, std::span(&r.sampling, 1), probs_.data());
        const size_t offset = out.q.size();
        out.q.resize(offset + static_cast<size_t>(V));
        backend.download(probs_.data(), std::span(out.q).subspan(offset));
        const double u = philox_uniform(r.sampling.seed, position, RandomPurpose::draft_sample);
        token = cpu::sample_row(out.q.data() + offset, V, u);
      }
      out.tokens.push_back(token);
      if (static_cast<int>(out.tokens.size()) < gammas[i]) {
        pending[i] = {token};
        still.push_back(i);
      }
    }
    drafting = std::move(still);
  }
  last_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

void ModelDrafter::begin_propose(std::span<const DraftRequest> requests) {
  if (!apart_) return Drafter::begin_propose(requests);
  apart_requests_.assign(requests.begin(), requests.end());
  apart_work_ = std::async(std::launch::async, [this] { propose(apart_requests_, apart_proposals_); });
}

void ModelDrafter::finish_propose(std::vector<DraftProposal>& proposals) {
  if (!apart_) return Drafter::finish_propose(proposals);
  apart_work_.get();  // rethrows what the drafting thread threw
  proposals = std::move(apart_proposals_);
  apart_proposals_.clear();
}

void ModelDrafter::commit(SessionKey session, int length) {
  auto it = sequences_.find(session);
  if (it == sequences_.end()) return;
  // Cached positions 0..length-2 are now committed tokens (accepted drafts
  // included); the last committed token has not been fed yet.
  const int keep = std::min(cache_.length(it->second), length - 1);
  cache_.truncate(it->second, std::max(keep, 0));
}

void ModelDrafter::release(SessionKey session) {
  auto it = sequences_.find(session);
  if (it == sequences_.end()) return;
  cache_.release(it->second);
  sequences_.erase(it);
}

}  // namespace tandem
