#include "workers/speculation/model_drafter.h"

#include <algorithm>
#include <chrono>

#include "common/error.h"
#include "kernels/philox.h"

namespace tandem {

ModelDrafter::ModelDrafter(LlamaModel& model, PagedKvCache& cache)
    : model_(model), cache_(cache), q_pool_(model.backend()) {}

ModelDrafter::~ModelDrafter() {
  if (apart_work_.valid()) apart_work_.wait();  // a draft still running on its thread
  for (const auto& [session, sequence] : sequences_) cache_.release(sequence.seq);
}

ModelDrafter::DraftSequence& ModelDrafter::sequence_for(const DraftRequest& request) {
  auto it = sequences_.find(request.session);
  if (it != sequences_.end()) return it->second;
  DraftSequence sequence{cache_.create_sequence(), {}, request.cache_salt};
  // Prefix caching: start after the longest cached prefix of its tokens
  // (never the last: its row yields x_1).
  const int attached = cache_.attach_prefix(sequence.seq, request.tokens, request.cache_salt,
                                            static_cast<int>(request.tokens.size()) - 1);
  sequence.fed.assign(request.tokens.begin(), request.tokens.begin() + attached);
  return sequences_.emplace(request.session, std::move(sequence)).first->second;
}

void ModelDrafter::propose(std::span<const DraftRequest> requests,
                           std::vector<DraftProposal>& proposals) {
  const auto start = std::chrono::steady_clock::now();
  proposals.assign(requests.size(), DraftProposal{});

  // Round j feeds each still-drafting session its pending tokens: in round 1
  // the committed tokens its cache lacks, later its last drafted token.
  std::vector<size_t> drafting;  // indices into requests
  std::vector<std::vector<int32_t>> pending(requests.size());
  std::vector<int> gammas(requests.size(), 0);  // what each request will get
  faults_.assign(requests.size(), SessionFault::none);
  for (size_t i = 0; i < requests.size(); ++i) {
    const DraftRequest& r = requests[i];
    if (r.gamma <= 0) continue;
    // The request's own fault, not the batch's (the engine checked it when
    // the session was added; a draft rank sees what came over the wire).
    if (find_sampling_problem(r.sampling) ||
        (r.processing && find_processing_problem(*r.processing, model_.config().vocab_size))) {
      faults_[i] = SessionFault::bad_sampling;
      continue;
    }
    DraftSequence& sequence = sequence_for(r);
    const SequenceId seq = sequence.seq;
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

  // Room for every q row this call can draw: γ per sampled session.
  const size_t V = static_cast<size_t>(model_.config().vocab_size);
  size_t q_rows = 0;
  for (size_t i : drafting)
    if (!requests[i].sampling.greedy()) q_rows += static_cast<size_t>(gammas[i]);
  if (q_rounds_.size() < q_rows * V) q_rounds_ = model_.backend().allocate(q_rows * V);
  q_rows_used_ = 0;
  q_row_of_.assign(requests.size(), {});

  for (int round = 1; !drafting.empty(); ++round) {
    std::vector<SequenceStep> steps;
    for (size_t i : drafting) {
      DraftSequence& sequence = sequences_.at(requests[i].session);
      // What its cache positions hold (published once committed).
      sequence.fed.resize(static_cast<size_t>(cache_.length(sequence.seq)));
      sequence.fed.insert(sequence.fed.end(), pending[i].begin(), pending[i].end());
      steps.push_back({sequence.seq, pending[i], 1});
    }
    const float* logits = model_.forward(steps, cache_);

    choose_tokens(requests, drafting, proposals, logits, round);

    std::vector<size_t> still;
    for (size_t row = 0; row < drafting.size(); ++row) {
      const size_t i = drafting[row];
      if (faults_[i] != SessionFault::none) continue;  // drafts no further
      DraftProposal& out = proposals[i];
      const int32_t token = round_tokens_[row];
      out.tokens.push_back(token);
      if (static_cast<int>(out.tokens.size()) < gammas[i]) {
        pending[i] = {token};
        still.push_back(i);
      }
    }
    drafting = std::move(still);
  }
  for (size_t i = 0; i < requests.size(); ++i) {
    if (faults_[i] == SessionFault::none) continue;
    proposals[i].tokens.clear();
    proposals[i].fault = faults_[i];
    q_row_of_[i].clear();  // its rows are not handed over
  }
  if (q_rows_used_ > 0) hand_over_q_rows(proposals);
  last_seconds_ =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
}

const float* ModelDrafter::process_round(std::span<const DraftRequest> requests,
                                         std::span<const size_t> drafting,
                                         std::span<const DraftProposal> proposals,
                                         const float* logits) {
  const bool any = std::any_of(drafting.begin(), drafting.end(),
                               [&](size_t i) { return requests[i].processing != nullptr; });
  if (!any) return logits;
  Backend& backend = model_.backend();
  const int V = model_.config().vocab_size;
  const size_t n = drafting.size() * static_cast<size_t>(V);
  if (processed_logits_.size() < n) processed_logits_ = backend.allocate(n);
  processed_host_.resize(n);
  backend.download(logits, processed_host_);
  for (size_t row = 0; row < drafting.size(); ++row) {
    const DraftRequest& r = requests[drafting[row]];
    if (r.processing == nullptr) continue;
    std::vector<int32_t> history(r.tokens.begin(), r.tokens.end());
    const std::vector<int32_t>& drafted = proposals[drafting[row]].tokens;
    history.insert(history.end(), drafted.begin(), drafted.end());
    process_rows(*r.processing, history, {}, 1, V, processed_host_.data() + row * V);
  }
  backend.upload(processed_host_, processed_logits_.data());
  return processed_logits_.data();
}

void ModelDrafter::choose_tokens(std::span<const DraftRequest> requests,
                                 std::span<const size_t> drafting,
                                 std::span<const DraftProposal> proposals, const float* logits,
                                 int round) {
  // Every host read is a device synchronization: one argmax for the whole
  // round, and for the sampled sessions one standardization and one draw
  // on the device. Their q rows stay there.
  const int V = model_.config().vocab_size;
  Backend& backend = model_.backend();
  const int rows = static_cast<int>(drafting.size());
  round_tokens_.assign(drafting.size(), 0);
  // A session whose draft logits are not finite ends alone (session_fault.h):
  // its row is neither sampled nor kept.
  std::vector<uint8_t> nonfinite(drafting.size());
  backend.find_nonfinite_rows(logits, rows, V, nonfinite.data());
  // Then the rows of sessions with logit processing are processed (after
  // the check: min_tokens masks with -inf on purpose).
  logits = process_round(requests, drafting, proposals, logits);
  // The sampled rows, those drawn by inverse CDF (rejection coupling) first,
  // then those drawn by the Gumbel-max race: each kind is one op over
  // consecutive rows.
  std::vector<int32_t> sampled_rows, gumbel_rows;
  bool any_greedy = false;
  for (size_t row = 0; row < drafting.size(); ++row) {
    if (nonfinite[row]) {
      faults_[drafting[row]] = SessionFault::nonfinite_draft_logits;
      continue;
    }
    const SamplingParams& sampling = requests[drafting[row]].sampling;
    any_greedy |= sampling.greedy();
    if (sampling.greedy()) continue;
    (sampling.coupling == Coupling::gumbel ? gumbel_rows : sampled_rows)
        .push_back(static_cast<int32_t>(row));
  }
  const size_t by_inverse_cdf = sampled_rows.size();
  sampled_rows.insert(sampled_rows.end(), gumbel_rows.begin(), gumbel_rows.end());
  std::vector<SamplingParams> sampled_params;
  for (int32_t row : sampled_rows)
    sampled_params.push_back(requests[drafting[static_cast<size_t>(row)]].sampling);
  if (any_greedy) backend.argmax(logits, rows, V, round_tokens_.data());
  if (sampled_rows.empty()) return;

  const size_t n = sampled_rows.size() * static_cast<size_t>(V);
  if (sampled_logits_.size() < n) sampled_logits_ = backend.allocate(n);
  // The sampled sessions' logits side by side (the embedding op gathers rows).
  backend.embedding(sampled_rows, logits, V, sampled_logits_.data());
  const int sampled = static_cast<int>(sampled_rows.size());
  float* probs = q_rounds_.data() + q_rows_used_ * static_cast<size_t>(V);
  backend.standardize(sampled_logits_.data(), sampled, V, sampled_params, probs);
  // Each session's draw from its own Philox stream at the absolute position
  // of the token being drafted, where the rows are. Rejection: the
  // draft_sample uniform (Algorithm 1's x ~ q). Gumbel: the race with the
  // noise the target's own draw at that position uses, so that the draft
  // proposes what the target draws whenever q and p are alike
  // (kernels/philox.h); the q rows stay as they are for whatever reads them.
  std::vector<double> uniforms;
  std::vector<NoiseKey> keys;
  for (size_t k = 0; k < sampled_rows.size(); ++k) {
    const DraftRequest& r = requests[drafting[static_cast<size_t>(sampled_rows[k])]];
    const int64_t position = static_cast<int64_t>(r.tokens.size()) + round - 1;
    if (k < by_inverse_cdf)
      uniforms.push_back(philox_uniform(r.sampling.seed, position, RandomPurpose::draft_sample));
    else
      keys.push_back(NoiseKey{r.sampling.seed, position});
  }
  std::vector<int32_t> drawn(sampled_rows.size());
  const int inverse = static_cast<int>(by_inverse_cdf);
  if (inverse > 0) backend.sample(probs, inverse, V, uniforms, drawn.data());
  if (sampled > inverse)
    backend.sample_gumbel(probs + by_inverse_cdf * static_cast<size_t>(V), sampled - inverse, V,
                          keys, drawn.data() + by_inverse_cdf);
  for (int k = 0; k < sampled; ++k) {
    const size_t row = static_cast<size_t>(sampled_rows[static_cast<size_t>(k)]);
    round_tokens_[row] = drawn[static_cast<size_t>(k)];
    q_row_of_[drafting[row]].push_back(static_cast<int32_t>(q_rows_used_++));
  }
}

void ModelDrafter::hand_over_q_rows(std::vector<DraftProposal>& proposals) {
  // One gather (the embedding op over the rounds' rows) puts each
  // session's rows q_1..q_γ side by side, as verification reads them.
  const size_t V = static_cast<size_t>(model_.config().vocab_size);
  std::vector<int32_t> order;
  for (const std::vector<int32_t>& rows : q_row_of_) order.insert(order.end(), rows.begin(), rows.end());
  if (order.empty()) return;  // every sampled request faulted
  Backend& backend = model_.backend();
  std::shared_ptr<Buffer> storage = q_pool_.acquire(order.size() * V);
  backend.embedding(order, q_rounds_.data(), static_cast<int>(V), storage->data());
  // Written before anyone else reads them: the target's GPU, or the
  // engine's thread while this drafter drafts on its own.
  backend.synchronize();
  size_t at = 0;
  for (size_t i = 0; i < proposals.size(); ++i) {
    const size_t count = q_row_of_[i].size() * V;
    if (count == 0) continue;
    proposals[i].q = DeviceRows(backend, storage, at, count);
    at += count;
  }
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
  DraftSequence& sequence = it->second;
  const int keep = std::min(cache_.length(sequence.seq), length - 1);
  cache_.truncate(sequence.seq, std::max(keep, 0));  // may keep less (a shared block)
  sequence.fed.resize(static_cast<size_t>(cache_.length(sequence.seq)));
  cache_.publish(sequence.seq, sequence.fed, sequence.salt);
}

void ModelDrafter::release(SessionKey session) {
  auto it = sequences_.find(session);
  if (it == sequences_.end()) return;
  cache_.release(it->second.seq);
  sequences_.erase(it);
}

}  // namespace tandem
