#include "coordinator/api/logprob_aligner.h"

#include <gtest/gtest.h>

#include "coordinator/api/stop_matcher.h"

namespace tandem::api {
namespace {

using Tokens = std::pair<std::size_t, std::size_t>;

Tokens tokens_of(const LogprobAligner::Piece& piece) { return {piece.first_token, piece.end_token}; }

TEST(LogprobAligner, EachTokenLeavesWithTheTextItMade) {
  LogprobAligner aligner;
  aligner.add_token(5);  // "Hello"
  aligner.add_token(1);  // " "
  aligner.add_text("Hello ");
  const LogprobAligner::Piece first = aligner.take();
  EXPECT_EQ(first.text, "Hello ");
  EXPECT_EQ(tokens_of(first), Tokens(0, 2));
  aligner.add_token(5);
  aligner.add_text("world");
  const LogprobAligner::Piece second = aligner.take();
  EXPECT_EQ(second.text, "world");
  EXPECT_EQ(tokens_of(second), Tokens(2, 3));
  EXPECT_EQ(aligner.text_offset(2), 6u);
}

TEST(LogprobAligner, TextHeldForAStopStringHoldsItsTokens) {
  LogprobAligner aligner;
  aligner.add_token(3);  // "abc"
  aligner.add_token(2);  // "\nx": could begin the stop "\nx\n", held back
  aligner.add_text("abc");
  const LogprobAligner::Piece first = aligner.take();
  EXPECT_EQ(first.text, "abc");
  EXPECT_EQ(tokens_of(first), Tokens(0, 1));
  // The stop never completes: the held text and its token leave together.
  aligner.add_text("\nx");
  const LogprobAligner::Piece rest = aligner.take_rest();
  EXPECT_EQ(rest.text, "\nx");
  EXPECT_EQ(tokens_of(rest), Tokens(1, 2));
}

TEST(LogprobAligner, ATokenStraddlingTwoChunksGoesWithTheSecond) {
  LogprobAligner aligner;
  aligner.add_token(4);  // "ab\n\n" with stop "\n\nZ": "ab" out, "\n\n" held
  aligner.add_text("ab");
  const LogprobAligner::Piece first = aligner.take();
  EXPECT_EQ(first.text, "ab");
  EXPECT_EQ(tokens_of(first), Tokens(0, 0));
  aligner.add_token(1);  // "c": the stop did not happen
  aligner.add_text("\n\nc");
  const LogprobAligner::Piece second = aligner.take();
  EXPECT_EQ(second.text, "\n\nc");
  EXPECT_EQ(tokens_of(second), Tokens(0, 2));
}

TEST(LogprobAligner, AStopStringDropsItsTokensAndThoseAfterIt) {
  // Tokens "one", " two", ".", "\n", "three" with stop "\n": the text is
  // cut at "one two." and the tokens "\n" and "three" go with the stop.
  StopMatcher stops({"\n"});
  LogprobAligner aligner;
  std::string text;
  for (const std::string token : {"one", " two", ".", "\n", "three"}) {
    aligner.add_token(token.size());
    text += token;
  }
  const StopMatcher::Result matched = stops.push(text);
  ASSERT_TRUE(matched.stopped);
  aligner.add_text(matched.emit);
  const LogprobAligner::Piece cut = aligner.take_cut();
  EXPECT_EQ(cut.text, "one two.");
  EXPECT_EQ(tokens_of(cut), Tokens(0, 3));
}

TEST(LogprobAligner, ATokenPartlyBeforeTheCutStays) {
  // ".\nmore" is one token and the stop is "\nmore": its "." is kept, so it is.
  LogprobAligner aligner;
  aligner.add_token(2);  // "hi"
  aligner.add_token(6);  // ".\nmore"
  aligner.add_text("hi.");
  const LogprobAligner::Piece cut = aligner.take_cut();
  EXPECT_EQ(cut.text, "hi.");
  EXPECT_EQ(tokens_of(cut), Tokens(0, 2));
}

TEST(LogprobAligner, APartialCharacterJoinsTheTokenThatCompletesIt) {
  // "é" split over two byte-level tokens: the first lets out nothing.
  LogprobAligner aligner;
  aligner.add_token(1);  // "a"
  aligner.add_token(0);  // 0xC3: held by the decoder
  aligner.add_text("a");
  const LogprobAligner::Piece first = aligner.take();
  EXPECT_EQ(tokens_of(first), Tokens(0, 1));
  aligner.add_token(2);  // 0xA9 completes "é" (2 bytes)
  aligner.add_text("\xC3\xA9");
  const LogprobAligner::Piece second = aligner.take();
  EXPECT_EQ(second.text, "\xC3\xA9");
  EXPECT_EQ(tokens_of(second), Tokens(1, 3));
  EXPECT_EQ(aligner.text_offset(1), 1u);
  EXPECT_EQ(aligner.text_offset(2), 1u);
}

TEST(LogprobAligner, ATokenWithNoTextAtTheEndGoesWithTheRest) {
  LogprobAligner aligner;
  aligner.add_token(2);
  aligner.add_token(0);  // end-of-sequence: no text
  aligner.add_text("ok");
  EXPECT_EQ(tokens_of(aligner.take()), Tokens(0, 1));
  const LogprobAligner::Piece rest = aligner.take_rest();
  EXPECT_EQ(rest.text, "");
  EXPECT_EQ(tokens_of(rest), Tokens(1, 2));
  EXPECT_EQ(aligner.text_offset(1), 2u);
}

TEST(LogprobAligner, TextWaitsForItsTokensLogprobs) {
  LogprobAligner aligner;
  aligner.add_token(3);  // "abc"
  aligner.add_token(3);  // "def"
  aligner.add_text("abcdef");
  const LogprobAligner::Piece none = aligner.take(0);
  EXPECT_EQ(none.text, "");
  EXPECT_EQ(tokens_of(none), Tokens(0, 0));
  const LogprobAligner::Piece one = aligner.take(1);
  EXPECT_EQ(one.text, "abc");
  EXPECT_EQ(tokens_of(one), Tokens(0, 1));
  const LogprobAligner::Piece both = aligner.take(2);
  EXPECT_EQ(both.text, "def");
  EXPECT_EQ(tokens_of(both), Tokens(1, 2));
}

TEST(LogprobAligner, ChunksConcatenateToTheWholeWhateverTheSplit) {
  // The same tokens taken after every token, and all at once at the end.
  const std::vector<std::size_t> lengths = {2, 0, 3, 1, 0, 0, 4, 2};
  LogprobAligner streamed, whole;
  std::string text(12, 'x');
  std::string sent;
  std::size_t tokens_sent = 0, at = 0;
  for (const std::size_t length : lengths) {
    streamed.add_token(length);
    whole.add_token(length);
    streamed.add_text(text.substr(at, length));
    at += length;
    const LogprobAligner::Piece piece = streamed.take();
    EXPECT_EQ(piece.first_token, tokens_sent);
    sent += piece.text;
    tokens_sent = piece.end_token;
  }
  const LogprobAligner::Piece last = streamed.take_rest();
  EXPECT_EQ(last.first_token, tokens_sent);
  EXPECT_EQ(last.end_token, lengths.size());
  whole.add_text(text);
  const LogprobAligner::Piece all = whole.take_rest();
  EXPECT_EQ(sent + last.text, all.text);
  EXPECT_EQ(tokens_of(all), Tokens(0, lengths.size()));
}

}  // namespace
}  // namespace tandem::api
