#include "coordinator/api/logprob_aligner.h"

#include <algorithm>

namespace tandem::api {

void LogprobAligner::add_token(std::size_t decoded_bytes) {
  spans_.push_back(Span{decoded_, kOpen});
  add_held_text(decoded_bytes);
}

void LogprobAligner::add_held_text(std::size_t decoded_bytes) {
  if (decoded_bytes == 0) return;
  decoded_ += decoded_bytes;
  close_open_spans();
}

void LogprobAligner::close_open_spans() {
  for (; first_open_ < spans_.size(); ++first_open_) spans_[first_open_].end = decoded_;
}

void LogprobAligner::add_text(std::string_view emitted) { unsent_.append(emitted); }

LogprobAligner::Piece LogprobAligner::send(std::size_t text_end, std::size_t token_end) {
  Piece piece;
  const std::size_t count = text_end - text_sent_;
  piece.text = unsent_.substr(0, count);
  unsent_.erase(0, count);
  text_sent_ = text_end;
  piece.first_token = tokens_sent_;
  piece.end_token = std::max(token_end, tokens_sent_);
  tokens_sent_ = piece.end_token;
  return piece;
}

LogprobAligner::Piece LogprobAligner::take(std::size_t known) {
  const std::size_t emitted = text_sent_ + unsent_.size();
  std::size_t text_end = emitted;
  // Text from the first unknown token's span on waits for its logprob.
  if (known < spans_.size()) text_end = std::max(text_sent_, std::min(text_end, spans_[known].start));
  std::size_t token_end = tokens_sent_;
  const std::size_t limit = std::min(known, spans_.size());
  while (token_end < limit && spans_[token_end].end != kOpen && spans_[token_end].end <= text_end)
    ++token_end;
  return send(text_end, token_end);
}

LogprobAligner::Piece LogprobAligner::take_cut() {
  const std::size_t cut = text_sent_ + unsent_.size();
  std::size_t token_end = tokens_sent_;
  while (token_end < spans_.size() && spans_[token_end].start < cut) ++token_end;
  Piece piece = send(cut, token_end);
  tokens_sent_ = spans_.size();  // the rest are dropped with the stop string
  return piece;
}

LogprobAligner::Piece LogprobAligner::take_rest() {
  close_open_spans();  // tokens that never made text end where the text does
  return send(text_sent_ + unsent_.size(), spans_.size());
}

}  // namespace tandem::api
