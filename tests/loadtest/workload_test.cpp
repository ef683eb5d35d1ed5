// Tests of tools/loadtest/workload.h: JSONL work items and their errors,
// synthetic prompts cut from a corpus, and the request body's merge order.
#include "tools/loadtest/workload.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>
#include <set>
#include <sstream>

#include "common/error.h"
#include "tests/support/temp_file.h"

namespace tandem::loadtest {
namespace {

using test_support::write_temp_file;

std::vector<std::string> split_words(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> words;
  for (std::string word; in >> word;) words.push_back(word);
  return words;
}

// Documents of distinct words ("d0w0 d0w1 ..."), with uneven spacing and
// punctuation, so each run of words occurs once in the corpus.
std::vector<std::string> numbered_corpus(int documents, int words_per_document) {
  std::vector<std::string> texts;
  for (int d = 0; d < documents; ++d) {
    std::string text;
    for (int w = 0; w < words_per_document; ++w) {
      if (w > 0) text += (w % 7 == 0) ? "  " : (w % 5 == 0 ? "\t" : " ");
      text += "d" + std::to_string(d) + "w" + std::to_string(w) + (w % 3 == 0 ? "," : "");
    }
    texts.push_back(text);
  }
  return texts;
}

std::string join_lines(const std::vector<std::string>& texts) {
  std::string joined;
  for (const std::string& text : texts) joined += (joined.empty() ? "" : "\n") + text;
  return joined;
}

bool is_space_at(const std::string& text, std::size_t i) {
  return std::isspace(static_cast<unsigned char>(text[i])) != 0;
}

// Every prompt occurs in the corpus starting and ending on word boundaries.
void expect_whole_word_substrings(const std::vector<WorkItem>& items, const std::string& corpus) {
  for (const WorkItem& item : items) {
    const std::size_t at = corpus.find(item.prompt);
    ASSERT_NE(at, std::string::npos) << item.prompt;
    const std::size_t end = at + item.prompt.size();
    EXPECT_TRUE(at == 0 || is_space_at(corpus, at - 1)) << item.prompt;
    EXPECT_TRUE(end == corpus.size() || is_space_at(corpus, end)) << item.prompt;
    EXPECT_FALSE(is_space_at(item.prompt, 0));
    EXPECT_FALSE(is_space_at(item.prompt, item.prompt.size() - 1));
  }
}

TEST(ReadJsonl, ReadsPromptAndMaxTokensAndKeepsOtherFieldsAsExtra) {
  const auto path = write_temp_file(
      "items.jsonl",
      "{\"prompt\": \"Once upon\", \"max_tokens\": 16, \"temperature\": 0.5, \"stop\": [\"\\n\"]}\n"
      "\n"
      "   \n"
      "{\"max_tokens\": 3, \"prompt\": \"The end\", \"speculation\": false, \"seed\": 7}\n");
  const std::vector<WorkItem> items = read_jsonl(path);
  ASSERT_EQ(items.size(), 2u);
  EXPECT_EQ(items[0].prompt, "Once upon");
  EXPECT_EQ(items[0].max_tokens, 16);
  EXPECT_EQ(items[0].extra, nlohmann::json::parse(R"({"temperature": 0.5, "stop": ["\n"]})"));
  EXPECT_EQ(items[1].prompt, "The end");
  EXPECT_EQ(items[1].max_tokens, 3);
  EXPECT_EQ(items[1].extra, nlohmann::json::parse(R"({"speculation": false, "seed": 7})"));
}

TEST(ReadJsonl, MissingFileIsNotFound) {
  try {
    read_jsonl(std::filesystem::path(::testing::TempDir()) / "no_such_file.jsonl");
    FAIL() << "expected an Error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::not_found);
    EXPECT_NE(std::string(error.what()).find("no_such_file.jsonl"), std::string::npos);
  }
}

struct BadLine {
  std::string line;
  std::string expected_words;  // what the message must name
};

// Printed in test names: the bad line itself, not the struct's bytes.
void PrintTo(const BadLine& bad, std::ostream* out) { *out << bad.line; }

class ReadJsonlErrors : public ::testing::TestWithParam<BadLine> {};

// The bad line comes third, after a good line and a blank one, so the
// message must count blank lines too.
TEST_P(ReadJsonlErrors, NameFileLineAndField) {
  const BadLine& bad = GetParam();
  const auto path = write_temp_file("bad.jsonl", "{\"prompt\": \"ok\", \"max_tokens\": 1}\n\n" + bad.line + "\n");
  try {
    read_jsonl(path);
    FAIL() << "expected an Error for " << bad.line;
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_EQ(error.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(message.find(path.string() + ":3:"), std::string::npos) << message;
    EXPECT_NE(message.find(bad.expected_words), std::string::npos) << message;
  }
}

INSTANTIATE_TEST_SUITE_P(
    EachError, ReadJsonlErrors,
    ::testing::Values(BadLine{"{\"prompt\": \"x\", \"max_tokens\": ", "not valid JSON"},
                    BadLine{"[\"prompt\", 4]", "JSON object"},
                    BadLine{"{\"max_tokens\": 4}", "\"prompt\""},
                    BadLine{"{\"prompt\": 12, \"max_tokens\": 4}", "\"prompt\""},
                    BadLine{"{\"prompt\": \"x\"}", "\"max_tokens\""},
                    BadLine{"{\"prompt\": \"x\", \"max_tokens\": 0}", "\"max_tokens\""},
                    BadLine{"{\"prompt\": \"x\", \"max_tokens\": 2.5}", "\"max_tokens\""},
                    BadLine{"{\"prompt\": \"x\", \"max_tokens\": \"8\"}", "\"max_tokens\""},
                    BadLine{"{\"prompt\": \"x\", \"max_tokens\": 99999999999}", "\"max_tokens\""}));

TEST(SyntheticWorkload, SameSeedRepeatsExactlyAndOtherSeedsDiffer) {
  const auto corpus = numbered_corpus(20, 50);
  const auto first = synthetic_workload(corpus, 40, {10, 4}, {32, 16}, 1234);
  const auto again = synthetic_workload(corpus, 40, {10, 4}, {32, 16}, 1234);
  const auto other = synthetic_workload(corpus, 40, {10, 4}, {32, 16}, 1235);
  ASSERT_EQ(first.size(), 40u);
  ASSERT_EQ(other.size(), 40u);
  int different_prompts = 0;
  int different_lengths = 0;
  for (std::size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(first[i].prompt, again[i].prompt);
    EXPECT_EQ(first[i].max_tokens, again[i].max_tokens);
    different_prompts += first[i].prompt != other[i].prompt;
    different_lengths += first[i].max_tokens != other[i].max_tokens;
  }
  EXPECT_GT(different_prompts, 20);
  EXPECT_GT(different_lengths, 20);
}

TEST(SyntheticWorkload, LengthsStayInRangeAndCoverIt) {
  const auto corpus = numbered_corpus(10, 40);
  const auto items = synthetic_workload(corpus, 600, {6, 2}, {20, 3}, 99);
  std::set<std::size_t> input_lengths;
  std::set<int> output_lengths;
  for (const WorkItem& item : items) {
    input_lengths.insert(split_words(item.prompt).size());
    output_lengths.insert(item.max_tokens);
    EXPECT_TRUE(item.extra.empty());
  }
  // 600 draws from 5 (and 7) equally likely values miss one with
  // probability below 1e-50.
  EXPECT_EQ(input_lengths, (std::set<std::size_t>{4, 5, 6, 7, 8}));
  EXPECT_EQ(output_lengths, (std::set<int>{17, 18, 19, 20, 21, 22, 23}));
}

TEST(SyntheticWorkload, RangeZeroGivesFixedLengths) {
  const auto items = synthetic_workload(numbered_corpus(3, 30), 50, {9, 0}, {64, 0}, 5);
  for (const WorkItem& item : items) {
    EXPECT_EQ(split_words(item.prompt).size(), 9u);
    EXPECT_EQ(item.max_tokens, 64);
  }
}

TEST(SyntheticWorkload, PromptsAreWholeWordRunsOfTheCorpusFromEverywhere) {
  const auto corpus = numbered_corpus(8, 25);
  const auto items = synthetic_workload(corpus, 3000, {5, 1}, {8, 0}, 42);
  expect_whole_word_substrings(items, join_lines(corpus));
  // Windows start all over the corpus (200 words; a given start is missed by
  // 3000 draws with probability about e^-15) and may span two documents.
  std::set<std::string> first_words;
  std::set<std::string> last_words;
  for (const WorkItem& item : items) {
    first_words.insert(split_words(item.prompt).front());
    last_words.insert(split_words(item.prompt).back());
  }
  EXPECT_GT(first_words.size(), 150u);
  EXPECT_TRUE(first_words.contains("d0w0,")) << "the corpus' first word is never drawn";
  EXPECT_TRUE(last_words.contains("d7w24,")) << "the corpus' last word is never drawn";
}

TEST(SyntheticWorkload, PromptCanBeTheWholeCorpus) {
  const std::vector<std::string> corpus = {"alpha beta", "gamma"};
  const auto items = synthetic_workload(corpus, 3, {3, 0}, {1, 0}, 0);
  for (const WorkItem& item : items) EXPECT_EQ(item.prompt, "alpha beta\ngamma");
}

TEST(SyntheticWorkload, RejectsTooSmallCorpusAndBadLengths) {
  const auto corpus = numbered_corpus(1, 10);
  EXPECT_THROW(synthetic_workload(corpus, 1, {10, 1}, {4, 0}, 0), Error);  // 11 words > 10
  EXPECT_THROW(synthetic_workload(corpus, 1, {3, 3}, {4, 0}, 0), Error);   // 0 words possible
  EXPECT_THROW(synthetic_workload(corpus, 1, {3, -1}, {4, 0}, 0), Error);
  EXPECT_THROW(synthetic_workload(corpus, 1, {3, 0}, {0, 0}, 0), Error);
  EXPECT_THROW(synthetic_workload({}, 1, {1, 0}, {4, 0}, 0), Error);
  EXPECT_NO_THROW(synthetic_workload(corpus, 1, {9, 1}, {4, 3}, 0));
}

// The corpus built into the library is the file, line for line, so the
// tool needs no file and no particular working directory.
TEST(ReadCorpus, TheBuiltInCorpusIsTheHeldOutFile) {
  const std::filesystem::path path = std::filesystem::path(TANDEM_SOURCE_DIR) / "tools/loadtest/heldout.jsonl";
  EXPECT_EQ(read_default_corpus(), read_corpus(path));
}

TEST(ReadCorpus, ReadsTheHeldOutText) {
  const std::filesystem::path path = std::filesystem::path(TANDEM_SOURCE_DIR) / "tools/loadtest/heldout.jsonl";
  const std::vector<std::string> texts = read_corpus(path);
  ASSERT_EQ(texts.size(), 1110u);
  for (const std::string& text : texts) EXPECT_FALSE(text.empty());

  const auto items = synthetic_workload(texts, 200, {100, 50}, {128, 64}, 2024);
  expect_whole_word_substrings(items, join_lines(texts));
  for (const WorkItem& item : items) {
    const std::size_t words = split_words(item.prompt).size();
    EXPECT_GE(words, 50u);
    EXPECT_LE(words, 150u);
  }
}

TEST(ReadCorpus, LineWithoutTextNamesFileAndLine) {
  const auto path = write_temp_file("corpus.jsonl", "{\"text\": \"fine\"}\n{\"body\": \"no text\"}\n");
  try {
    read_corpus(path);
    FAIL() << "expected an Error";
  } catch (const Error& error) {
    const std::string message = error.what();
    EXPECT_NE(message.find(path.string() + ":2:"), std::string::npos) << message;
    EXPECT_NE(message.find("\"text\""), std::string::npos) << message;
  }
}

TEST(RequestBody, PutsModelPromptAndMaxTokensFirst) {
  const WorkItem item{"Hello \"there\"", 12, nlohmann::json::object()};
  EXPECT_EQ(request_body(item, "tiny", nlohmann::json::object()),
            R"({"model":"tiny","prompt":"Hello \"there\"","max_tokens":12})");
  EXPECT_EQ(request_body(item, "", nullptr), R"({"prompt":"Hello \"there\"","max_tokens":12})");
}

TEST(RequestBody, ExtraFieldsThenOverridesWin) {
  const WorkItem item{"p", 5, nlohmann::json::parse(R"({"temperature": 0.8, "seed": 3, "speculation": true})")};
  const auto overrides = nlohmann::json::parse(R"({"temperature": 0, "ignore_eos": true, "max_tokens": 9})");
  const auto body = nlohmann::json::parse(request_body(item, "m", overrides));
  EXPECT_EQ(body, nlohmann::json::parse(R"({"model": "m", "prompt": "p", "max_tokens": 9,
                                            "temperature": 0, "seed": 3, "speculation": true,
                                            "ignore_eos": true})"));

  // Extra fields override the item's own, too (a later source wins).
  const WorkItem with_max_tokens{"p", 5, nlohmann::json::parse(R"({"max_tokens": 7})")};
  EXPECT_EQ(nlohmann::json::parse(request_body(with_max_tokens, "", nullptr))["max_tokens"], 7);
}

TEST(RequestBody, RejectsOverridesThatAreNotAnObject) {
  const WorkItem item{"p", 5, nlohmann::json::object()};
  EXPECT_THROW(request_body(item, "", nlohmann::json::array({1})), Error);
  const WorkItem bad_extra{"p", 5, nlohmann::json("text")};
  EXPECT_THROW(request_body(bad_extra, "", nullptr), Error);
}

}  // namespace
}  // namespace tandem::loadtest
