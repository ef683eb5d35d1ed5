// Tests of tools/loadtest/jsonl_reader.h: every non-blank line reaches the
// callback with its file:line; a line that is not a JSON object stops the
// read with an error naming file:line.
#include "tools/loadtest/jsonl_reader.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "common/error.h"
#include "tests/support/temp_file.h"
#include "tests/support/expect_error.h"

namespace tandem::loadtest {
namespace {

using test_support::write_temp_file;

TEST(ForEachJsonlObject, SkipsBlankLinesAndNamesEachLine) {
  const auto path = write_temp_file("lines.jsonl", "{\"a\": 1}\n\n \t\n{\"a\": 2}\r\n{\"a\": 3}");
  std::vector<std::pair<int, std::string>> seen;
  for_each_jsonl_object(path, [&](const nlohmann::json& object, const std::string& where) {
    seen.emplace_back(object["a"].get<int>(), where);
  });
  const std::string file = path.string();
  EXPECT_EQ(seen, (std::vector<std::pair<int, std::string>>{
                      {1, file + ":1"}, {2, file + ":4"}, {3, file + ":5"}}));
}

TEST(ForEachJsonlObject, BadLinesNameFileAndLine) {
  for (const std::string bad : {"{\"a\": ", "\"just a string\"", "[{}]"}) {
    SCOPED_TRACE(bad);
    const auto path = write_temp_file("bad.jsonl", "{}\n" + bad + "\n");
    int calls = 0;
    test_support::expect_invalid(
        [&] { for_each_jsonl_object(path, [&](const nlohmann::json&, const std::string&) { ++calls; }); },
        path.string() + ":2");
    EXPECT_EQ(calls, 1);  // the good first line, then the error
  }
}

TEST(ForEachJsonlObject, MissingFileIsNotFound) {
  try {
    for_each_jsonl_object("/nonexistent/x.jsonl", [](const nlohmann::json&, const std::string&) {});
    FAIL() << "no error";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::not_found);
    EXPECT_NE(std::string(error.what()).find("/nonexistent/x.jsonl"), std::string::npos);
  }
}

}  // namespace
}  // namespace tandem::loadtest
