// tandem::jinja::Template: the subset of Jinja2 that Hugging Face chat
// templates use, rendered exactly as transformers (Python) and
// @huggingface/jinja (JavaScript) render them.
//
// A template is parsed once (Template::parse) and rendered many times with
// a JSON context (render). Values are JSON values plus what Jinja2 adds:
// Undefined (a missing name or attribute, as Jinja2's default Undefined:
// prints as "", is falsy, iterates as empty, fails when called or
// indexed), namespaces, macros and callables. Objects keep the order of
// their keys (nlohmann::ordered_json), as Python dicts do, so `tojson` and
// `items` give what the reference gives.
//
// Every failure is a tandem::Error with kind invalid_argument: a syntax
// error at parse or an error while rendering reads "chat template line N:
// <what>"; raise_exception(message) reads "chat template: <message>", the
// template's own words, which the server passes on to the client.
// Rendering is bounded (Limits): a template or context cannot hang or
// exhaust the server.
#pragma once

#include <nlohmann/json.hpp>

#include <cstddef>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace tandem::jinja {

struct Options {
  // Transformers renders chat templates with both on (and so does
  // @huggingface/jinja): a block tag's newline is dropped, and the spaces
  // before a block tag at the start of a line.
  bool trim_blocks = true;
  bool lstrip_blocks = true;
};

struct Limits {
  size_t max_output_bytes = 4u << 20;  // the rendered text
  size_t max_steps = 5'000'000;        // evaluated nodes and loop iterations, all together
  int max_call_depth = 64;             // nested macro calls, includes recursion
};

// What the template may read beyond its context: strftime_now(format)
// formats this time (seconds since the epoch, UTC); 0 means now.
struct Environment {
  double now_seconds = 0;
};

class Template {
 public:
  // Throws Error(invalid_argument, "chat template line N: ...") on a
  // syntax error or a construct this engine does not implement.
  static Template parse(std::string_view source, Options options = {});

  // Renders with `context` (an object: its members are the template's
  // variables). Throws Error(invalid_argument, ...) when the template
  // fails, raise_exception included, or a limit is passed.
  std::string render(const nlohmann::ordered_json& context, const Limits& limits = {},
                     const Environment& environment = {}) const;

  Template(Template&&) noexcept;
  Template& operator=(Template&&) noexcept;
  ~Template();

  struct Parsed;  // the syntax tree (parser.h)

 private:
  explicit Template(std::unique_ptr<Parsed> parsed);
  std::unique_ptr<Parsed> parsed_;
};

}  // namespace tandem::jinja
