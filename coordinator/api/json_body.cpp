#include "coordinator/api/json_body.h"

#include <string>
#include <vector>

#include "coordinator/api/json_depth.h"
#include "coordinator/api/completion_request.h"  // kMaxJsonDepth

namespace tandem::api {
namespace {

constexpr std::string_view kWhitespace = " \t\n\r";  // JSON's four

// Builds the Json value from nlohmann's SAX events, as its own DOM parser
// does, but refuses a key its object already holds. The check is the
// insertion itself (try_emplace), so it costs nothing on a good body.
class StrictBuilder {
 public:
  using number_integer_t = Json::number_integer_t;
  using number_unsigned_t = Json::number_unsigned_t;
  using number_float_t = Json::number_float_t;
  using string_t = Json::string_t;
  using binary_t = Json::binary_t;

  bool null() { return place(nullptr) != nullptr; }
  bool boolean(bool value) { return place(value) != nullptr; }
  bool number_integer(number_integer_t value) { return place(value) != nullptr; }
  bool number_unsigned(number_unsigned_t value) { return place(value) != nullptr; }
  bool number_float(number_float_t value, const string_t&) { return place(value) != nullptr; }
  bool string(string_t& value) { return place(std::move(value)) != nullptr; }
  bool binary(binary_t& value) { return place(Json::binary(std::move(value))) != nullptr; }

  bool start_object(std::size_t) { return open(Json::value_t::object); }
  bool start_array(std::size_t) { return open(Json::value_t::array); }
  bool end_object() { return close(); }
  bool end_array() { return close(); }

  bool key(string_t& name) {
    Level& level = levels_.back();
    auto [slot, inserted] = level.container->get_ref<Json::object_t&>().try_emplace(std::move(name));
    if (!inserted) {
      duplicate_key_ = slot->first;
      duplicate_path_ = path_to_innermost() + (levels_.size() > 1 ? "." : "") + duplicate_key_;
      return false;
    }
    level.key = &slot->first;
    slot_ = &slot->second;
    return true;
  }

  template <typename Exception>
  bool parse_error(std::size_t, const std::string&, const Exception& error) {
    message_ = error.what();
    return false;
  }

  Json& root() { return root_; }
  bool complete() const { return complete_; }
  const std::string& duplicate_key() const { return duplicate_key_; }
  const std::string& duplicate_path() const { return duplicate_path_; }
  const std::string& message() const { return message_; }

 private:
  // An open array or object, and the key of its member being read (objects).
  struct Level {
    Json* container;
    const std::string* key = nullptr;
  };

  // Where the next value goes: the root, the end of the innermost array, or
  // the innermost object's member just keyed. Pointers stay valid: a
  // container only grows while it is the innermost one. Values are built in
  // place, as nlohmann's own DOM parser builds them.
  template <typename Value>
  Json* place(Value&& value) {
    if (levels_.empty()) {
      root_ = Json(std::forward<Value>(value));
      complete_ = !root_.is_structured();
      return &root_;
    }
    if (auto* items = levels_.back().container->get_ptr<Json::array_t*>())
      return &items->emplace_back(std::forward<Value>(value));
    *slot_ = Json(std::forward<Value>(value));
    return slot_;
  }
  bool open(Json::value_t type) {
    levels_.push_back(Level{place(type)});
    return true;
  }
  bool close() {
    levels_.pop_back();
    complete_ = levels_.empty();
    return true;
  }
  // "messages[1]" for the object being read inside {"messages": [{}, {...}]};
  // only built for the error.
  std::string path_to_innermost() const {
    std::string path;
    for (std::size_t i = 0; i + 1 < levels_.size(); ++i) {
      const Level& level = levels_[i];
      if (level.container->is_array()) {
        path += "[" + std::to_string(level.container->size() - 1) + "]";
      } else {
        path += (path.empty() ? "" : ".") + *level.key;
      }
    }
    return path;
  }

  Json root_;
  std::vector<Level> levels_;
  Json* slot_ = nullptr;
  bool complete_ = false;
  std::string duplicate_key_;
  std::string duplicate_path_;  // "messages[1].role"
  std::string message_;
};

// One past the last byte of the first JSON value in `text`, a text whose
// first value nlohmann read whole: a container ends at its matching bracket,
// a string at its closing quote, a literal after its word, a number at the
// first byte that cannot continue it.
std::size_t end_of_first_value(std::string_view text) {
  std::size_t i = text.find_first_not_of(kWhitespace);
  if (i == std::string_view::npos) return text.size();
  for (std::string_view literal : {"true", "false", "null"})
    if (text.substr(i).starts_with(literal)) return i + literal.size();
  if (text[i] != '{' && text[i] != '[' && text[i] != '"') {
    while (i < text.size() && std::string_view("0123456789+-.eE").find(text[i]) != std::string_view::npos) ++i;
    return i;
  }
  int depth = 0;
  bool in_string = false;
  for (; i < text.size(); ++i) {
    const char c = text[i];
    if (in_string) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        in_string = false;
        if (depth == 0) return i + 1;
      }
    } else if (c == '"') {
      in_string = true;
    } else if (c == '{' || c == '[') {
      ++depth;
    } else if ((c == '}' || c == ']') && --depth == 0) {
      return i + 1;
    }
  }
  return text.size();
}

// nlohmann's messages start with "[json.exception.parse_error.101] "; the
// client needs the part after it (position and reason), not our library's name.
std::string without_library_prefix(const std::string& what) {
  const std::size_t end = what.find("] ");
  return end == std::string::npos ? what : what.substr(end + 2);
}

ApiError trailing_bytes(std::size_t at, std::string_view what) {
  return invalid_request(std::nullopt, "The request body continues after its JSON value, at byte " +
                                           std::to_string(at) + std::string(what) +
                                           ". Send one JSON object and nothing after it.");
}

// Parses `text` whole; a failure becomes the ApiError the client gets.
Json parse_strictly(std::string_view text) {
  StrictBuilder builder;
  if (Json::sax_parse(text.begin(), text.end(), &builder)) return std::move(builder.root());
  if (!builder.duplicate_path().empty()) {
    const std::string& path = builder.duplicate_path();
    throw invalid_request(path, "The request body has the key \"" + builder.duplicate_key() +
                                    "\" twice in one object (at " + path + "). Send each key once.");
  }
  if (builder.complete()) {
    const std::size_t junk = text.find_first_not_of(kWhitespace, end_of_first_value(text));
    throw trailing_bytes(junk == std::string_view::npos ? text.size() : junk, "");
  }
  // parse_error (syntax, invalid UTF-8, bad escapes) and out_of_range
  // (a number such as 1e400 that no double holds) both land here.
  throw invalid_request(std::nullopt, "We could not parse the JSON body of your request: " +
                                          without_library_prefix(builder.message()) +
                                          ". The body must be one JSON object.");
}

}  // namespace

Json parse_request_body(std::string_view body) {
  // Before the parser: see json_depth.h for why.
  if (const auto at = find_nesting_beyond(body, kMaxJsonDepth)) {
    throw invalid_request(std::nullopt,
                          "The request body nests arrays or objects deeper than " +
                              std::to_string(kMaxJsonDepth) + " levels (at byte " +
                              std::to_string(*at) + "). A completion request needs 3, a chat request "
                              "about 6 plus its tools' parameter schemas.");
  }
  // No JSON text holds a raw NUL, in a string or out of one. nlohmann would
  // stop reading at it, so the text before it is judged alone.
  if (const std::size_t nul = body.find('\0'); nul != std::string_view::npos) {
    try {
      parse_strictly(body.substr(0, nul));
    } catch (const ApiError& error) {
      if (error.param) throw;  // a duplicate key before the NUL
      throw invalid_request(std::nullopt, "The request body holds a NUL byte at byte " + std::to_string(nul) +
                                              ", which JSON allows nowhere (in a string, write it as \\u0000).");
    }
    // What came before the NUL was one whole value and whitespace.
    throw trailing_bytes(nul, " (a NUL byte)");
  }
  return parse_strictly(body);
}

}  // namespace tandem::api
