// StopMatcher: stop sequences applied to streamed text, one delta at a time.
//
// A stop sequence may arrive split over several deltas ("\n" then "\n"), so
// text that could still become the start of one is held back until the
// next delta decides. The semantics match a check after every byte of the
// whole text: generation stops where a stop sequence first completes (the
// smallest end; among those ending there, the one starting earliest), and the
// output is everything before that sequence; the sequence itself is never
// sent. So the concatenated output does not depend on how text is split.
// Works on bytes; with UTF-8 deltas of whole characters every emitted piece
// is whole characters too (a match or a held suffix starts where a stop
// string starts, on a character's first byte).
// Not thread-safe: one per streamed request.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

namespace tandem::api {

class StopMatcher {
 public:
  // stops must be non-empty strings (throws Error invalid_argument
  // otherwise); no stops at all makes push() pass text straight through.
  explicit StopMatcher(std::vector<std::string> stops);

  struct Result {
    std::string emit;      // text safe to send now
    bool stopped = false;  // a stop sequence has completed: end the stream
  };

  // Takes the next piece of generated text. After a stop, returns nothing
  // more and stopped stays true.
  Result push(std::string_view text_delta);

  // At the end of generation (no stop matched): the held-back text, which
  // can no longer become a stop sequence. Empty after a stop.
  std::string flush();

  bool stopped() const { return stopped_; }

 private:
  // Length of the longest suffix of held_ that is a proper prefix of a stop.
  std::size_t longest_partial_stop() const;

  std::vector<std::string> stops_;
  std::string held_;  // text received but not yet emitted
  bool stopped_ = false;
};

}  // namespace tandem::api
