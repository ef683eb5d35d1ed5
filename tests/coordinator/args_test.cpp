#include "coordinator/cli/args.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace tandem::cli {
namespace {

Args parse(std::vector<std::string> words) {
  return Args(words, {"model", "max-tokens", "temperature"}, {"stats"});
}

TEST(Args, ReadsSpacedAndEqualsForms) {
  const Args args = parse({"--model", "dir", "--max-tokens=12", "--stats", "extra"});
  EXPECT_EQ(args.get("model"), "dir");
  EXPECT_EQ(args.get_int("max-tokens", 0), 12);
  EXPECT_TRUE(args.has("stats"));
  EXPECT_EQ(args.positional(), std::vector<std::string>{"extra"});
  EXPECT_DOUBLE_EQ(args.get_double("temperature", 0.5), 0.5);
}

TEST(Args, ReadsNumberLists) {
  const Args args({"--temperature", "0,0.7,1"}, {"temperature"}, {});
  EXPECT_EQ(args.get_numbers("temperature", ""), (std::vector<double>{0, 0.7, 1}));
  EXPECT_EQ(args.get_numbers("missing", "1,4"), (std::vector<double>{1, 4}));
  EXPECT_THROW(Args({"--temperature", "1,,2"}, {"temperature"}, {}).get_numbers("temperature", ""),
               Error);
}

TEST(Args, RejectsUnknownOptionByName) {
  try {
    parse({"--modle", "dir"});
    FAIL() << "a misspelt option must not be ignored";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::invalid_argument);
    EXPECT_NE(std::string(error.what()).find("--modle"), std::string::npos);
  }
}

TEST(Args, RejectsBadNumbersAndMissingValues) {
  EXPECT_THROW(parse({"--max-tokens", "12x"}).get_int("max-tokens", 0), Error);
  EXPECT_THROW(parse({"--temperature", ""}).get_double("temperature", 0), Error);
  EXPECT_THROW(parse({"--model"}), Error);
  EXPECT_THROW(parse({"--stats=1"}), Error);
  EXPECT_THROW(parse({}).require("model"), Error);
}

}  // namespace
}  // namespace tandem::cli
