#include "coordinator/api/stop_matcher.h"

#include <gtest/gtest.h>

#include <optional>
#include <random>

#include "common/error.h"

namespace tandem::api {
namespace {

using Strings = std::vector<std::string>;

// What a stream of `deltas` sends: each push's emit, then flush's text.
struct Stream {
  Strings emitted;
  std::string flushed;
  bool stopped = false;
};

Stream run(const Strings& stops, const Strings& deltas) {
  StopMatcher matcher(stops);
  Stream stream;
  for (const std::string& delta : deltas) {
    const StopMatcher::Result result = matcher.push(delta);
    stream.emitted.push_back(result.emit);
    stream.stopped = result.stopped;
  }
  stream.flushed = matcher.flush();
  return stream;
}

TEST(StopMatcher, HoldsBackAPossibleStopUntilTheNextDeltaDecides) {
  const Stream stream = run({"\n\n"}, {"Hello\n", "\nWorld"});
  EXPECT_EQ(stream.emitted, (Strings{"Hello", ""}));
  EXPECT_TRUE(stream.stopped);
  EXPECT_EQ(stream.flushed, "");
}

TEST(StopMatcher, ReleasesHeldTextWhenTheStopDoesNotComplete) {
  const Stream stream = run({"abc"}, {"xa", "b", "d", "ab"});
  EXPECT_EQ(stream.emitted, (Strings{"x", "", "abd", ""}));
  EXPECT_FALSE(stream.stopped);
  EXPECT_EQ(stream.flushed, "ab");  // the end of generation: it can no longer be a stop
}

TEST(StopMatcher, WithoutStopsPassesTextStraightThrough) {
  const Stream stream = run({}, {"a", "", "bc\n"});
  EXPECT_EQ(stream.emitted, (Strings{"a", "", "bc\n"}));
  EXPECT_EQ(stream.flushed, "");
}

TEST(StopMatcher, TheStopThatCompletesFirstWins) {
  // "bc" completes at the 3rd byte, before "abcd" could: generation would
  // have ended there, so the whole delta arriving at once changes nothing.
  EXPECT_EQ(run({"abcd", "bc"}, {"abcd"}).emitted, Strings{"a"});
  EXPECT_EQ(run({"abcd", "bc"}, {"a", "b", "c", "d"}).emitted, (Strings{"", "", "a", ""}));
  // Two stops completing at the same byte: the one that starts earlier.
  EXPECT_EQ(run({"bc", "abc"}, {"xabc"}).emitted, Strings{"x"});
  EXPECT_EQ(run({"abc", "bc"}, {"xa", "bc"}).emitted, (Strings{"x", ""}));
}

TEST(StopMatcher, StopsSharingAPrefixAreEachWatched) {
  const Strings stops = {"END", "ENDING", "EN"};
  EXPECT_EQ(run(stops, {"the E", "Nd"}).emitted, (Strings{"the ", ""}));
  const Stream no_stop = run({"ENDX", "ENDY"}, {"E", "N", "D", "Z"});
  EXPECT_EQ(no_stop.emitted, (Strings{"", "", "", "ENDZ"}));
  EXPECT_FALSE(no_stop.stopped);
}

TEST(StopMatcher, AfterAStopNothingMoreIsSent) {
  StopMatcher matcher({"."});
  EXPECT_EQ(matcher.push("One. Two").emit, "One");
  EXPECT_TRUE(matcher.stopped());
  const StopMatcher::Result after = matcher.push(" Three.");
  EXPECT_EQ(after.emit, "");
  EXPECT_TRUE(after.stopped);
  EXPECT_EQ(matcher.flush(), "");
}

TEST(StopMatcher, SplitsOnlyBetweenUtf8Characters) {
  // "é" is 2 bytes and "😀" 4; the stop starts with the same lead byte as "é".
  const std::string e_acute = "\xc3\xa9";
  const std::string e_grave = "\xc3\xa8";
  const std::string smile = "\xf0\x9f\x98\x80";
  const Stream stream = run({e_acute + "!"}, {"caf", e_grave, e_acute, smile, e_acute, "!"});
  EXPECT_EQ(stream.emitted, (Strings{"caf", e_grave, "", e_acute + smile, "", ""}));
  EXPECT_TRUE(stream.stopped);
}

TEST(StopMatcher, RefusesAnEmptyStop) {
  EXPECT_THROW(StopMatcher({"a", ""}), Error);
}

// ---- Against a brute-force reference over random texts and splits ----

// Checking after every byte of text: the start of the stop that completes
// first (the earliest-starting among those completing at that byte).
std::optional<std::size_t> reference_stop_start(const std::string& text, const Strings& stops) {
  for (std::size_t end = 1; end <= text.size(); ++end) {
    std::optional<std::size_t> start;
    for (const std::string& stop : stops) {
      if (stop.size() <= end && text.compare(end - stop.size(), stop.size(), stop) == 0) {
        start = std::min(start.value_or(end), end - stop.size());
      }
    }
    if (start) return start;
  }
  return std::nullopt;
}

// With no stop in text yet: all text before the first position from which
// the rest could still grow into some stop.
std::string reference_safe_prefix(const std::string& text, const Strings& stops) {
  for (std::size_t start = 0; start < text.size(); ++start) {
    const std::string rest = text.substr(start);
    for (const std::string& stop : stops) {
      if (rest.size() < stop.size() && stop.compare(0, rest.size(), rest) == 0) {
        return text.substr(0, start);
      }
    }
  }
  return text;
}

bool is_whole_utf8_characters(const std::string& text) {
  std::size_t i = 0;
  while (i < text.size()) {
    const auto lead = static_cast<unsigned char>(text[i]);
    const std::size_t length = lead < 0x80 ? 1 : lead >= 0xf0 ? 4 : lead >= 0xe0 ? 3 : lead >= 0xc0 ? 2 : 0;
    if (length == 0 || i + length > text.size()) return false;
    for (std::size_t k = 1; k < length; ++k) {
      if ((static_cast<unsigned char>(text[i + k]) & 0xc0) != 0x80) return false;
    }
    i += length;
  }
  return true;
}

TEST(StopMatcher, AgreesWithABruteForceReferenceOnRandomTextsAndSplits) {
  // A small alphabet makes stops, near-misses and overlaps common; the
  // multi-byte characters share lead bytes so byte-level prefixes collide.
  const Strings alphabet = {"a", "b", "\n", "\xc3\xa9", "\xc3\xa8", "\xe2\x82\xac"};
  std::mt19937 random(20240531);
  auto pick = [&](int low, int high) { return std::uniform_int_distribution<int>(low, high)(random); };
  int cases_with_a_stop = 0;
  constexpr int kCases = 20000;
  for (int trial = 0; trial < kCases; ++trial) {
    Strings stops(pick(0, 4));
    for (std::string& stop : stops) {
      for (int k = pick(1, 4); k > 0; --k) stop += alphabet[pick(0, 5)];
    }
    // Text as characters, cut into deltas of whole characters (some empty).
    Strings deltas(1);
    for (int k = pick(0, 24); k > 0; --k) {
      deltas.back() += alphabet[pick(0, 5)];
      if (pick(0, 2) == 0) deltas.emplace_back();
      if (pick(0, 9) == 0) deltas.emplace_back();  // now and then an empty delta
    }
    std::string text;
    for (const std::string& delta : deltas) text += delta;
    const std::optional<std::size_t> stop_at = reference_stop_start(text, stops);
    cases_with_a_stop += stop_at.has_value();

    SCOPED_TRACE("trial " + std::to_string(trial) + ", text '" + text + "'");
    StopMatcher matcher(stops);
    std::string received;  // the model's text so far
    std::string sent;      // what the client has been sent
    bool stopped = false;
    for (const std::string& delta : deltas) {
      received += delta;
      const StopMatcher::Result result = matcher.push(delta);
      ASSERT_TRUE(is_whole_utf8_characters(result.emit));
      if (stopped) {
        ASSERT_TRUE(result.stopped);
        ASSERT_EQ(result.emit, "");
        continue;
      }
      sent += result.emit;
      const std::optional<std::size_t> stop_so_far = reference_stop_start(received, stops);
      ASSERT_EQ(result.stopped, stop_so_far.has_value());
      if (stop_so_far) {
        ASSERT_EQ(sent, received.substr(0, *stop_so_far));
        stopped = true;
      } else {
        ASSERT_EQ(sent, reference_safe_prefix(received, stops));
      }
    }
    const std::string flushed = matcher.flush();
    ASSERT_TRUE(is_whole_utf8_characters(flushed));
    sent += flushed;
    ASSERT_EQ(sent, stop_at ? text.substr(0, *stop_at) : text);
    ASSERT_EQ(stopped, stop_at.has_value());
  }
  // The generator must have exercised both outcomes often.
  EXPECT_GT(cases_with_a_stop, kCases / 5);
  EXPECT_LT(cases_with_a_stop, kCases * 4 / 5);
}

}  // namespace
}  // namespace tandem::api
