// Tests of coordinator/cli/command_line.h (the CLI11 plumbing of every
// binary) and of `tandem`'s own command line: values, defaults, lists, and
// every malformed command line refused with exit 2 and a message naming the
// argument, never silently read as something else.
#include "common/command_line.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <sstream>

#include "common/error.h"
#include "coordinator/cli/commands.h"

namespace tandem::cli {
namespace {

using ::testing::HasSubstr;
using ::testing::StartsWith;

// A test program with one command, `run`, taking the flags below.
struct Parsed {
  std::string model;
  int max_tokens = 0;
  double temperature = 0.5;
  std::string temperatures = "1,4";
  bool stats = false;
};

struct Outcome {
  int code = -1;
  std::string out, err;
};

Outcome parse(Parsed& parsed, std::vector<std::string> words, bool required_model = false) {
  CommandLine cli("prog", "a test program");
  cli.add_command("run", "the command", [&](Command& command) -> Run {
    Flag model = add_value(command, "--model", parsed.model, "a directory");
    if (required_model) model.required();
    add_value(command, "--max-tokens", parsed.max_tokens, "new tokens");
    add_value(command, "--temperature", parsed.temperature, "softmax temperature");
    add_number_list(command, "--temperatures", parsed.temperatures, "a list");
    add_switch(command, "--stats", parsed.stats, "print stats");
    return [] { return 7; };
  });
  words.insert(words.begin(), "run");
  std::ostringstream out, err;
  Outcome outcome;
  outcome.code = cli.run(words, out, err);
  outcome.out = out.str();
  outcome.err = err.str();
  return outcome;
}

TEST(CommandLine, ReadsSpacedAndEqualsForms) {
  Parsed parsed;
  const Outcome outcome = parse(parsed, {"--model", "dir", "--max-tokens=12", "--stats"});
  EXPECT_EQ(outcome.code, 7) << outcome.err;  // the command ran
  EXPECT_EQ(parsed.model, "dir");
  EXPECT_EQ(parsed.max_tokens, 12);
  EXPECT_TRUE(parsed.stats);
  EXPECT_DOUBLE_EQ(parsed.temperature, 0.5);  // the default, untouched
}

TEST(CommandLine, TheLastOfARepeatedFlagWins) {
  Parsed parsed;
  EXPECT_EQ(parse(parsed, {"--max-tokens", "3", "--max-tokens", "5"}).code, 7);
  EXPECT_EQ(parsed.max_tokens, 5);
}

TEST(CommandLine, ReadsNumberLists) {
  EXPECT_EQ(parse_number_list("--temperature", "0,0.7,1"), (std::vector<double>{0, 0.7, 1}));
  Parsed parsed;
  ASSERT_EQ(parse(parsed, {}).code, 7);
  EXPECT_EQ(parse_number_list("--temperatures", parsed.temperatures),
            (std::vector<double>{1, 4}));
  EXPECT_THROW(parse_number_list("--temperature", "1,,2"), Error);
  // A malformed list is refused when the flags are read, naming the flag.
  const Outcome bad = parse(parsed, {"--temperatures", "1,,2"});
  EXPECT_EQ(bad.code, 2);
  EXPECT_THAT(bad.err, HasSubstr("--temperatures: wants comma-separated numbers, got '1,,2'"));
}

TEST(CommandLine, RejectsUnknownOptionByName) {
  Parsed parsed;
  const Outcome outcome = parse(parsed, {"--modle", "dir"});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_THAT(outcome.err, HasSubstr("--modle"));
  EXPECT_THAT(outcome.err, StartsWith("prog run: "));
}

TEST(CommandLine, RejectsStrayArguments) {
  Parsed parsed;
  const Outcome outcome = parse(parsed, {"--model", "dir", "extra"});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_THAT(outcome.err, HasSubstr("extra"));
}

TEST(CommandLine, RejectsBadNumbersAndMissingValues) {
  for (const std::vector<std::string>& words :
       std::vector<std::vector<std::string>>{{"--max-tokens", "12x"},
                                             {"--temperature", ""},
                                             {"--max-tokens", "1.5"},
                                             {"--model"},
                                             {"--stats=1"}}) {
    Parsed parsed;
    const Outcome outcome = parse(parsed, words);
    EXPECT_EQ(outcome.code, 2) << words[0];
    // Named without its dashes in one of CLI11's messages ("stats was given a
    // disallowed flag override").
    EXPECT_THAT(outcome.err, HasSubstr(words[0].substr(2, words[0].find('=') - 2))) << outcome.err;
  }
  Parsed parsed;
  const Outcome missing = parse(parsed, {}, /*required_model=*/true);
  EXPECT_EQ(missing.code, 2);
  EXPECT_THAT(missing.err, HasSubstr("--model is required"));
}

TEST(CommandLine, HelpListsEachFlagWithItsDefault) {
  Parsed parsed;
  const Outcome outcome = parse(parsed, {"--help"});
  EXPECT_EQ(outcome.code, 0);
  EXPECT_THAT(outcome.out, HasSubstr("Usage: prog run"));
  EXPECT_THAT(outcome.out, HasSubstr("--temperature FLOAT=0.5"));
  EXPECT_THAT(outcome.out, HasSubstr("--temperatures N[,N...]=1,4"));
  EXPECT_EQ(outcome.err, "");
}

TEST(CommandLine, ErrorsFromTheCommandBecomeExitCodes) {
  for (const auto& [kind, code] : {std::pair{ErrorKind::invalid_argument, 2},
                                   std::pair{ErrorKind::not_found, 1}}) {
    CommandLine cli("prog", "a test program");
    cli.set_run([kind = kind]() -> int { throw Error(kind, "it went wrong"); });
    std::ostringstream out, err;
    EXPECT_EQ(cli.run({}, out, err), code);
    EXPECT_EQ(err.str(), "prog: error: it went wrong\n");
  }
}

// `tandem` itself.
Outcome tandem(const std::vector<std::string>& words) {
  std::ostringstream out, err;
  Outcome outcome;
  outcome.code = tandem_command_line().parse(words, out, err);
  outcome.out = out.str();
  outcome.err = err.str();
  return outcome;
}

TEST(TandemCommandLine, HelpExitsZeroWithUsage) {
  for (const char* help : {"-h", "--help"}) {
    const Outcome outcome = tandem({help});
    EXPECT_EQ(outcome.code, 0);
    for (const char* command : {"serve", "generate", "tokenize"})
      EXPECT_THAT(outcome.out, HasSubstr(command));
  }
  const Outcome serve = tandem({"serve", "--help"});
  EXPECT_EQ(serve.code, 0);
  EXPECT_THAT(serve.out, HasSubstr("--config FILE=configs/local.yaml"));
  for (const char* flag : {"--check-config", "--host", "--port"})
    EXPECT_THAT(serve.out, HasSubstr(flag));
  const Outcome generate = tandem({"generate", "--help"});
  EXPECT_EQ(generate.code, 0);
  for (const char* flag : {"--max-tokens INT=64", "--gamma N|auto=4", "--backend cpu|cuda=cpu"})
    EXPECT_THAT(generate.out, HasSubstr(flag));
}

TEST(TandemCommandLine, NoCommandIsAnErrorWithUsage) {
  const Outcome outcome = tandem({});
  EXPECT_EQ(outcome.code, 2);
  EXPECT_THAT(outcome.err, HasSubstr("serve"));
}

TEST(TandemCommandLine, UnknownFlagsAndStrayArgumentsExitTwoNamingThem) {
  for (const auto& [words, named] :
       std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"serve", "--bogus"}, "--bogus"},
           {{"serve", "extra"}, "extra"},
           {{"serve", "-p", "19201"}, "-p"},
           {{"serve", "--port", "80x"}, "--port"},
           {{"tokenize", "--model", "m", "--text", "t", "hello"}, "hello"},
           {{"frobnicate"}, "frobnicate"}}) {
    const Outcome outcome = tandem(words);
    EXPECT_EQ(outcome.code, 2) << words.back();
    EXPECT_THAT(outcome.err, HasSubstr(named));
  }
}

}  // namespace
}  // namespace tandem::cli
