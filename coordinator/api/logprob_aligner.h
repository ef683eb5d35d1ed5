// LogprobAligner: which tokens' logprobs leave with which text.
//
// Generated text reaches the client through two holds: the streaming
// decoder keeps a token's bytes until their UTF-8 character is complete,
// and the StopMatcher keeps text that may still begin a stop string. A
// token's logprob has to leave with the text it made, and be dropped with
// it when a stop string cuts the text. The rules:
// - Each token has a span of the decoded text, [start, end) in bytes. A
//   token that let out no text (part of a character, or a special token,
//   which has none) shares the span of the next text let out; one still
//   without text at the end gets an empty span there.
// - A token leaves with the chunk that holds the end of its span (so a
//   token whose text straddles two chunks goes with the second).
// - A stop string cuts the text at C: the tokens whose span starts before
//   C stay (each made part of the text kept); the stop string's own tokens
//   and any after it are dropped.
// - A token leaves only once its logprob is known (`known`): until then
//   the text from its span's start on is held back too.
// Token indices count from 0 in the order added. Not thread-safe.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::api {

class LogprobAligner {
 public:
  static constexpr std::size_t kAllKnown = std::numeric_limits<std::size_t>::max();

  // The next token, and how many bytes of text the decoder let out for it.
  void add_token(std::size_t decoded_bytes);
  // Bytes the decoder let out at the end (its held-back bytes) for the
  // tokens added already.
  void add_held_text(std::size_t decoded_bytes);
  // Text the stop matcher let out (a prefix of the decoded text, in order).
  void add_text(std::string_view emitted);

  // What may be sent: text, and the tokens [first_token, end_token).
  struct Piece {
    std::string text;
    std::size_t first_token = 0;
    std::size_t end_token = 0;
  };
  // Now, given that the logprobs of the first `known` tokens are known.
  Piece take(std::size_t known = kAllKnown);
  // A stop string completed: all text let out (it ends where the stop string
  // starts) and the tokens whose span starts before that point.
  Piece take_cut();
  // Generation ended without a stop string and the stop matcher let out all
  // its text: everything left.
  Piece take_rest();

  std::size_t tokens() const { return spans_.size(); }
  // Where token i's span starts in the decoded text.
  std::size_t text_offset(std::size_t token) const { return spans_[token].start; }

 private:
  struct Span {
    std::size_t start = 0;
    std::size_t end = kOpen;
  };
  static constexpr std::size_t kOpen = std::numeric_limits<std::size_t>::max();

  void close_open_spans();
  // Sends text up to `text_end` and tokens up to `token_end`.
  Piece send(std::size_t text_end, std::size_t token_end);

  std::vector<Span> spans_;
  std::size_t decoded_ = 0;      // bytes the decoder let out
  std::size_t first_open_ = 0;   // the first token still without text
  std::string unsent_;           // text let out by the stop matcher, not sent
  std::size_t text_sent_ = 0;    // bytes sent
  std::size_t tokens_sent_ = 0;  // tokens sent (or dropped, after a cut)
};

}  // namespace tandem::api
