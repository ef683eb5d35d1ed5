// for_each_jsonl_object: the one reader of the load generator's JSONL inputs
// (prompt workloads, corpora, conversations), so every file reports a bad
// line the same way: file:line, then what is wrong.
#pragma once

#include <filesystem>
#include <functional>
#include <istream>
#include <string>

#include <nlohmann/json.hpp>

namespace tandem::loadtest {

// Calls on_object(object, "file:line") for each non-blank line of a JSONL
// file, after checking that the line is a JSON object. Error not_found when
// the file cannot be opened; invalid_argument, naming file:line, for a line
// that is not JSON or not an object.
void for_each_jsonl_object(
    const std::filesystem::path& path,
    const std::function<void(const nlohmann::json& object, const std::string& where)>& on_object);

// The same over text already open (e.g. the corpus built into the binary),
// whose lines are named "name:line".
void for_each_jsonl_object(
    std::istream& in, const std::string& name,
    const std::function<void(const nlohmann::json& object, const std::string& where)>& on_object);

}  // namespace tandem::loadtest
