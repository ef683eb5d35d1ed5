#include "coordinator/api/token_logprobs.h"

#include <gtest/gtest.h>

#include <cmath>

namespace tandem::api {
namespace {

std::vector<LogprobEntry> sample_entries() {
  LogprobEntry first;  // an echoed prompt's first token: nothing before it
  first.token = "The";
  LogprobEntry second;
  second.token = " cat";
  second.logprob = -0.5;
  second.top = {{" cat", -0.5}, {" dog", -1.25}};
  second.text_offset = 3;
  LogprobEntry third;  // the first byte of "é", then an invalid byte
  third.token = "\xC3";
  third.logprob = -2.0;
  third.top = {{"\xC3", -2.0}};
  third.text_offset = 7;
  return {first, second, third};
}

TEST(TokenLogprobs, StringFormKeepsValidUtf8AndEscapesOtherBytes) {
  EXPECT_EQ(token_string("caf\xC3\xA9"), "caf\xC3\xA9");
  EXPECT_EQ(token_string("\xC3"), "\\xc3");
  EXPECT_EQ(token_string("a\xE2\x82"), "a\\xe2\\x82");
  EXPECT_EQ(token_string("\xF0\x9F\x98\x80!"), "\xF0\x9F\x98\x80!");
  EXPECT_EQ(token_string("\xC0\x80"), "\\xc0\\x80");      // an overlong NUL
  EXPECT_EQ(token_string("\xED\xA0\x80"), "\\xed\\xa0\\x80");  // a surrogate
}

TEST(TokenLogprobs, CompletionShapeIsOpenAisParallelLists) {
  const OrderedJson shown = completion_logprobs_json(sample_entries());
  EXPECT_EQ(shown.dump(),
            R"({"tokens":["The"," cat","\\xc3"],"token_logprobs":[null,-0.5,-2.0],)"
            R"("top_logprobs":[null,{" cat":-0.5," dog":-1.25},{"\\xc3":-2.0}],"text_offset":[0,3,7]})");
}

TEST(TokenLogprobs, CompletionTopKeepsTheLikelierOfTwoTokensWithOneString) {
  LogprobEntry entry;
  entry.token = "\xC3";
  entry.logprob = -1.0;
  entry.top = {{"\xC3", -1.0}, {"\\xc3", -3.0}};  // a token spelled as our escape
  const OrderedJson shown = completion_logprobs_json({entry});
  EXPECT_EQ(shown["top_logprobs"][0].size(), 1u);
  EXPECT_EQ(shown["top_logprobs"][0]["\\xc3"], -1.0);
}

TEST(TokenLogprobs, ChatShapeCarriesExactBytes) {
  const std::vector<LogprobEntry> entries = sample_entries();
  const OrderedJson shown = chat_logprobs_json({entries[1], entries[2]});
  EXPECT_EQ(shown.dump(),
            R"({"content":[{"token":" cat","logprob":-0.5,"bytes":[32,99,97,116],"top_logprobs":[)"
            R"({"token":" cat","logprob":-0.5,"bytes":[32,99,97,116]},)"
            R"({"token":" dog","logprob":-1.25,"bytes":[32,100,111,103]}]},)"
            R"({"token":"\\xc3","logprob":-2.0,"bytes":[195],"top_logprobs":[)"
            R"({"token":"\\xc3","logprob":-2.0,"bytes":[195]}]}],"refusal":null})");
}

TEST(TokenLogprobs, EmptyEntriesGiveEmptyLists) {
  EXPECT_EQ(completion_logprobs_json({}).dump(),
            R"({"tokens":[],"token_logprobs":[],"top_logprobs":[],"text_offset":[]})");
  EXPECT_EQ(chat_logprobs_json({}).dump(), R"({"content":[],"refusal":null})");
}

TEST(TokenLogprobs, SumSkipsTheEntryWithNoLogprob) {
  EXPECT_DOUBLE_EQ(sum_logprobs(sample_entries()), -2.5);
}

}  // namespace
}  // namespace tandem::api
