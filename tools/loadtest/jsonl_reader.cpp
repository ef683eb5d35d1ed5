#include "tools/loadtest/jsonl_reader.h"

#include <cctype>
#include <fstream>

#include "common/error.h"

namespace tandem::loadtest {
namespace {

bool is_blank(const std::string& line) {
  for (const char c : line) {
    if (!std::isspace(static_cast<unsigned char>(c))) return false;
  }
  return true;
}

}  // namespace

void for_each_jsonl_object(
    const std::filesystem::path& path,
    const std::function<void(const nlohmann::json&, const std::string&)>& on_object) {
  std::ifstream in(path);
  require(in.is_open(), ErrorKind::not_found,
          [&] { return "cannot open " + path.string() + ": check the path and that it is readable"; });
  for_each_jsonl_object(in, path.string(), on_object);
}

void for_each_jsonl_object(
    std::istream& in, const std::string& name,
    const std::function<void(const nlohmann::json&, const std::string&)>& on_object) {
  std::string line;
  for (std::size_t line_number = 1; std::getline(in, line); ++line_number) {
    if (is_blank(line)) continue;
    const std::string where = name + ":" + std::to_string(line_number);
    nlohmann::json object;
    try {
      object = nlohmann::json::parse(line);
    } catch (const nlohmann::json::parse_error& error) {
      throw Error(ErrorKind::invalid_argument,
                  where + ": not valid JSON (" + error.what() + "); each line must hold one JSON object");
    }
    require(object.is_object(), ErrorKind::invalid_argument,
            [&] { return where + ": expected a JSON object, got " + std::string(object.type_name()); });
    on_object(object, where);
  }
}

}  // namespace tandem::loadtest
