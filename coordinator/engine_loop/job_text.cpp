#include "coordinator/engine_loop/job_text.h"

#include <stdexcept>

namespace tandem {

JobText::JobText(const Tokenizer& tokenizer, std::vector<std::string> stop_strings,
                 const std::vector<int32_t>& prompt, bool echo, bool logprobs)
    : tokenizer_(tokenizer), decoder_(tokenizer, /*skip_special=*/true),
      stops_(std::move(stop_strings)), prompt_(echo ? prompt : std::vector<int32_t>{}),
      logprobs_(logprobs), prompt_sent_(!echo) {}

bool JobText::push(const std::vector<int32_t>& output) {
  std::string text;
  for (std::size_t i = tokens_seen_; i < output.size(); ++i) {
    std::string piece = decoder_.push(output[i]);
    aligner_.add_token(piece.size());
    output_.push_back(output[i]);
    text += piece;
  }
  tokens_seen_ = output.size();
  api::StopMatcher::Result matched = stops_.push(text);
  aligner_.add_text(matched.emit);
  stopped_ = matched.stopped;
  return stopped_;
}

JobText::Piece JobText::take(const std::vector<TokenLogprob>* output_logprobs,
                             const std::vector<TokenLogprob>* prompt_logprobs) {
  Piece out;
  if (!prompt_sent_) {
    // The echoed prompt goes first, with its entries: nothing goes before
    // the engine has scored the whole prompt.
    const bool scored = prompt_logprobs && prompt_logprobs->size() + 1 == prompt_.size();
    if (logprobs_ && !scored) return out;
    out = take_prompt(prompt_logprobs);
  }
  if (!logprobs_) {
    out.text += aligner_.take().text;
    return out;
  }
  static const std::vector<TokenLogprob> kNone;
  const std::vector<TokenLogprob>& known = output_logprobs ? *output_logprobs : kNone;
  const api::LogprobAligner::Piece piece = aligner_.take(known.size());
  out.text += piece.text;
  add_output_entries(piece, known, out);
  return out;
}

bool JobText::finish() {
  const std::string tail = decoder_.flush();
  aligner_.add_held_text(tail.size());
  api::StopMatcher::Result matched = stops_.push(tail);
  aligner_.add_text(matched.emit);
  stopped_ = matched.stopped;
  if (!stopped_) aligner_.add_text(stops_.flush());
  return stopped_;
}

JobText::Piece JobText::take_last(const SpeculationResult& result) {
  Piece out;
  if (!prompt_sent_) out = take_prompt(&result.prompt_logprobs);
  const api::LogprobAligner::Piece piece = stopped_ ? aligner_.take_cut() : aligner_.take_rest();
  out.text += piece.text;
  if (logprobs_) add_output_entries(piece, result.logprobs, out);
  return out;
}

JobText::Piece JobText::take_prompt(const std::vector<TokenLogprob>* prompt_logprobs) {
  if (logprobs_ && prompt_logprobs->size() + 1 != prompt_.size()) {
    throw std::runtime_error("the engine scored " + std::to_string(prompt_logprobs->size()) +
                             " tokens of a prompt of " + std::to_string(prompt_.size()) +
                             " (expected all but the first)");
  }
  // The prompt's text and each token's place in it, by the same rules as
  // the output's.
  StreamingDecoder decoder(tokenizer_, /*skip_special=*/true);
  api::LogprobAligner spans;
  for (const int32_t token : prompt_) {
    std::string piece = decoder.push(token);
    spans.add_token(piece.size());
    prompt_text_ += piece;
  }
  const std::string tail = decoder.flush();
  spans.add_held_text(tail.size());
  prompt_text_ += tail;

  Piece out;
  out.text = prompt_text_;
  if (logprobs_) {
    for (std::size_t i = 0; i < prompt_.size(); ++i) {
      const TokenLogprob* scored = i == 0 ? nullptr : &(*prompt_logprobs)[i - 1];
      out.logprobs.push_back(entry(prompt_[i], scored, spans.text_offset(i)));
    }
  }
  prompt_sent_ = true;
  return out;
}

void JobText::add_output_entries(const api::LogprobAligner::Piece& piece,
                                 const std::vector<TokenLogprob>& logprobs, Piece& out) {
  if (piece.end_token > logprobs.size()) {
    throw std::runtime_error("the engine gave " + std::to_string(logprobs.size()) +
                             " logprobs for " + std::to_string(piece.end_token) + " tokens");
  }
  for (std::size_t i = piece.first_token; i < piece.end_token; ++i) {
    if (logprobs[i].token != output_[i]) {
      throw std::runtime_error("the engine's logprob " + std::to_string(i) + " is of token " +
                               std::to_string(logprobs[i].token) + ", not of the output's " +
                               std::to_string(output_[i]));
    }
    out.logprobs.push_back(entry(output_[i], &logprobs[i], prompt_text_.size() + aligner_.text_offset(i)));
    cumulative_logprob_ += logprobs[i].logprob;
  }
}

api::LogprobEntry JobText::entry(int32_t token, const TokenLogprob* logprob,
                                 std::size_t text_offset) const {
  api::LogprobEntry out;
  tokenizer_.append_token_bytes(token, out.token);
  out.text_offset = text_offset;
  if (!logprob) return out;
  out.logprob = logprob->logprob;
  for (const auto& [id, value] : logprob->top) {
    std::string bytes;
    tokenizer_.append_token_bytes(id, bytes);
    out.top.emplace_back(std::move(bytes), value);
  }
  return out;
}

}  // namespace tandem
