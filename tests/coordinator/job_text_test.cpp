// JobText on the tiny model's byte-level tokenizer, with hand-built
// TokenLogprob vectors standing in for the engine's.
#include "coordinator/engine_loop/job_text.h"
#include "tests/support/tiny_models.h"

#include <gtest/gtest.h>

#include <filesystem>
#include <stdexcept>

namespace tandem {
namespace {

using test_support::kTinyTarget;

const Tokenizer& tokenizer() {
  static const Tokenizer loaded = Tokenizer::load(kTinyTarget);
  return loaded;
}

// A logprob entry for each token: token i has logprob -(i + 1) / 8 and two
// alternatives, itself and token 0.
std::vector<TokenLogprob> scored(const std::vector<int32_t>& tokens) {
  std::vector<TokenLogprob> out;
  for (std::size_t i = 0; i < tokens.size(); ++i) {
    const float logprob = -static_cast<float>(i + 1) / 8;
    out.push_back(TokenLogprob{tokens[i], logprob, {{tokens[i], logprob}, {0, logprob - 1}}});
  }
  return out;
}

std::string bytes_of(int32_t token) {
  std::string bytes;
  tokenizer().append_token_bytes(token, bytes);
  return bytes;
}

SpeculationResult result_of(const std::vector<int32_t>& output, const std::vector<int32_t>& prompt) {
  SpeculationResult result;
  result.tokens = output;
  result.logprobs = scored(output);
  result.prompt_logprobs = scored(std::vector<int32_t>(prompt.begin() + 1, prompt.end()));
  return result;
}

void append(JobText::Piece& into, JobText::Piece piece) {
  into.text += piece.text;
  for (api::LogprobEntry& entry : piece.logprobs) into.logprobs.push_back(std::move(entry));
}

// The whole output at once, as a request that is not streamed sees it.
JobText::Piece whole(const std::vector<int32_t>& prompt, const std::vector<int32_t>& output,
                     std::vector<std::string> stops, bool echo) {
  JobText text(tokenizer(), std::move(stops), prompt, echo, /*logprobs=*/true);
  JobText::Piece all;
  if (!text.push(output)) text.finish();
  append(all, text.take_last(result_of(output, prompt)));
  return all;
}

// One token a step, each step's logprobs known as its token is.
JobText::Piece streamed(const std::vector<int32_t>& prompt, const std::vector<int32_t>& output,
                        std::vector<std::string> stops, bool echo,
                        std::vector<JobText::Piece>* chunks = nullptr) {
  JobText text(tokenizer(), std::move(stops), prompt, echo, /*logprobs=*/true);
  const SpeculationResult result = result_of(output, prompt);
  JobText::Piece all;
  std::vector<int32_t> so_far;
  bool stopped = false;
  for (const int32_t token : output) {
    so_far.push_back(token);
    if ((stopped = text.push(so_far))) break;
    const std::vector<TokenLogprob> known(result.logprobs.begin(), result.logprobs.begin() + so_far.size());
    JobText::Piece piece = text.take(&known, &result.prompt_logprobs);
    if (chunks) chunks->push_back(piece);
    append(all, std::move(piece));
  }
  if (!stopped) text.finish();
  JobText::Piece last = text.take_last(result);
  if (chunks) chunks->push_back(last);
  append(all, std::move(last));
  return all;
}

void expect_same(const JobText::Piece& a, const JobText::Piece& b) {
  EXPECT_EQ(a.text, b.text);
  ASSERT_EQ(a.logprobs.size(), b.logprobs.size());
  for (std::size_t i = 0; i < a.logprobs.size(); ++i) {
    EXPECT_EQ(a.logprobs[i].token, b.logprobs[i].token) << i;
    EXPECT_EQ(a.logprobs[i].logprob, b.logprobs[i].logprob) << i;
    EXPECT_EQ(a.logprobs[i].top, b.logprobs[i].top) << i;
    EXPECT_EQ(a.logprobs[i].text_offset, b.logprobs[i].text_offset) << i;
  }
}

TEST(JobText, EveryTokenHasItsEntryAndTheEntriesSpellTheText) {
  const std::vector<int32_t> output = tokenizer().encode(" the cat sat on the mat", false);
  const JobText::Piece all = whole({1}, output, {}, /*echo=*/false);
  EXPECT_EQ(all.text, " the cat sat on the mat");
  ASSERT_EQ(all.logprobs.size(), output.size());
  std::string spelled;
  for (std::size_t i = 0; i < output.size(); ++i) {
    const api::LogprobEntry& entry = all.logprobs[i];
    EXPECT_EQ(entry.token, bytes_of(output[i]));
    EXPECT_EQ(entry.text_offset, spelled.size());
    EXPECT_FLOAT_EQ(static_cast<float>(*entry.logprob), -static_cast<float>(i + 1) / 8);
    ASSERT_EQ(entry.top.size(), 2u);
    EXPECT_EQ(entry.top[1].first, bytes_of(0));
    spelled += entry.token;
  }
  EXPECT_EQ(spelled, all.text);
}

TEST(JobText, StreamedPiecesAddUpToTheWhole) {
  const std::vector<int32_t> output = tokenizer().encode(" caf\xC3\xA9 na\xC3\xAFve \xE2\x9C\x93 done", false);
  std::vector<JobText::Piece> chunks;
  expect_same(streamed({1}, output, {}, false, &chunks), whole({1}, output, {}, false));
  expect_same(streamed({1}, output, {"ve"}, false), whole({1}, output, {"ve"}, false));
  // Each chunk's entries spell the text it carries (no character is cut,
  // so each token's bytes are in the chunk holding the end of its text).
  for (const JobText::Piece& chunk : chunks) {
    std::string spelled;
    for (const api::LogprobEntry& entry : chunk.logprobs) spelled += entry.token;
    EXPECT_EQ(spelled, chunk.text);
  }
}

TEST(JobText, AStopStringCutsTheEntriesWithTheText) {
  const std::vector<int32_t> output = tokenizer().encode(" one two.\nthree four", false);
  const JobText::Piece all = whole({1}, output, {"\n"}, false);
  EXPECT_EQ(all.text, " one two.");
  // Kept: exactly the tokens whose text starts before the cut (ASCII, so
  // each token's text is its bytes).
  std::size_t kept = 0, at = 0;
  for (const int32_t token : output) {
    if (at >= all.text.size()) break;
    at += bytes_of(token).size();
    ++kept;
  }
  ASSERT_EQ(all.logprobs.size(), kept);
  EXPECT_LT(kept, output.size());
  for (std::size_t i = 0; i < kept; ++i) EXPECT_EQ(all.logprobs[i].token, bytes_of(output[i]));
  expect_same(streamed({1}, output, {"\n"}, false), all);
}

TEST(JobText, TextWaitsForLogprobsThatComeOnlyAtTheEnd) {
  const std::vector<int32_t> output = tokenizer().encode(" hello there", false);
  JobText text(tokenizer(), {}, {1}, false, /*logprobs=*/true);
  text.push(output);
  const JobText::Piece early = text.take(nullptr, nullptr);
  EXPECT_EQ(early.text, "");
  EXPECT_TRUE(early.logprobs.empty());
  text.finish();
  const JobText::Piece last = text.take_last(result_of(output, {1}));
  EXPECT_EQ(last.text, " hello there");
  EXPECT_EQ(last.logprobs.size(), output.size());
  EXPECT_DOUBLE_EQ(text.cumulative_logprob(), api::sum_logprobs(last.logprobs));
}

TEST(JobText, EchoedTextWaitsUntilTheWholePromptIsScored) {
  const std::vector<int32_t> prompt = tokenizer().encode("The history of", true);
  const std::vector<int32_t> output = tokenizer().encode(" the city", false);
  JobText text(tokenizer(), {}, prompt, /*echo=*/true, /*logprobs=*/true);
  text.push(output);
  const SpeculationResult result = result_of(output, prompt);
  const std::vector<TokenLogprob> part(result.prompt_logprobs.begin(), result.prompt_logprobs.end() - 1);
  const JobText::Piece early = text.take(&result.logprobs, &part);  // prefill not done
  EXPECT_EQ(early.text, "");
  EXPECT_TRUE(early.logprobs.empty());
  const JobText::Piece piece = text.take(&result.logprobs, &result.prompt_logprobs);
  EXPECT_EQ(piece.text, "The history of the city");
  EXPECT_EQ(piece.logprobs.size(), prompt.size() + output.size());
}

TEST(JobText, WithoutLogprobsTextGoesAtOnceWithNoEntries) {
  const std::vector<int32_t> output = tokenizer().encode(" hello there", false);
  JobText text(tokenizer(), {}, {1}, false, /*logprobs=*/false);
  text.push(output);
  const JobText::Piece piece = text.take(nullptr, nullptr);
  EXPECT_EQ(piece.text, " hello there");
  EXPECT_TRUE(piece.logprobs.empty());
}

TEST(JobText, EchoSendsThePromptAndItsEntriesFirst) {
  const std::vector<int32_t> prompt = tokenizer().encode("The history of", true);
  const std::vector<int32_t> output = tokenizer().encode(" the city", false);
  const JobText::Piece all = whole(prompt, output, {}, /*echo=*/true);
  const std::string prompt_text = tokenizer().decode(prompt, /*skip_special=*/true);
  EXPECT_EQ(all.text, prompt_text + " the city");
  ASSERT_EQ(all.logprobs.size(), prompt.size() + output.size());
  EXPECT_FALSE(all.logprobs[0].logprob.has_value());  // nothing before the first token
  for (std::size_t i = 1; i < prompt.size(); ++i) {
    EXPECT_EQ(all.logprobs[i].token, bytes_of(prompt[i]));
    EXPECT_FLOAT_EQ(static_cast<float>(*all.logprobs[i].logprob), -static_cast<float>(i) / 8);
  }
  EXPECT_EQ(all.logprobs[prompt.size()].text_offset, prompt_text.size());
  expect_same(streamed(prompt, output, {}, true), all);
}

TEST(JobText, EchoWithNoOutputIsThePromptAlone) {
  const std::vector<int32_t> prompt = tokenizer().encode("Score me", true);
  const JobText::Piece all = whole(prompt, {}, {}, /*echo=*/true);
  EXPECT_EQ(all.text, "Score me");
  EXPECT_EQ(all.logprobs.size(), prompt.size());
}

TEST(JobText, LogprobsThatDoNotMatchTheOutputAreAnError) {
  const std::vector<int32_t> output = tokenizer().encode(" hello", false);
  JobText text(tokenizer(), {}, {1}, false, true);
  text.push(output);
  text.finish();
  SpeculationResult result = result_of(output, {1});
  result.logprobs.front().token += 1;
  EXPECT_THROW(text.take_last(result), std::runtime_error);
  JobText short_of(tokenizer(), {}, {1}, false, true);
  short_of.push(output);
  short_of.finish();
  result = result_of(output, {1});
  result.logprobs.pop_back();
  EXPECT_THROW(short_of.take_last(result), std::runtime_error);
}

}  // namespace
}  // namespace tandem
