// Template: parse once, render many times; every failure inside becomes
// tandem::Error(invalid_argument, "chat template line N: ...").
#include "common/jinja/template.h"

#include "common/error.h"
#include "common/jinja/ast.h"
#include "common/jinja/failure.h"
#include "common/jinja/interpreter.h"
#include "common/jinja/lexer.h"
#include "common/jinja/parser.h"

namespace tandem::jinja {

struct Template::Parsed {
  Body body;
  Options options;
};

namespace {

[[noreturn]] void rethrow(const Failure& failure, int line) {
  if (failure.raised_by_template) throw Error(ErrorKind::invalid_argument, "chat template: " + failure.message);
  throw Error(ErrorKind::invalid_argument, "chat template line " + std::to_string(line) + ": " + failure.message);
}

}  // namespace

Template::Template(std::unique_ptr<Parsed> parsed) : parsed_(std::move(parsed)) {}
Template::Template(Template&&) noexcept = default;
Template& Template::operator=(Template&&) noexcept = default;
Template::~Template() = default;

Template Template::parse(std::string_view source, Options options) {
  int line = 1;
  auto parsed = std::make_unique<Parsed>();
  parsed->options = options;
  try {
    std::vector<Token> tokens = tokenize(source, options, &line);
    parsed->body = parse_tokens(tokens, &line);
  } catch (const Failure& failure) {
    rethrow(failure, line);
  }
  return Template(std::move(parsed));
}

std::string Template::render(const nlohmann::ordered_json& context, const Limits& limits,
                             const Environment& environment) const {
  if (!parsed_) throw Error(ErrorKind::internal, "chat template: render() on a moved-from Template");
  Interpreter interpreter(limits, environment);
  try {
    return interpreter.render(parsed_->body, context);
  } catch (const Failure& failure) {
    rethrow(failure, interpreter.line());
  } catch (const std::bad_alloc&) {
    throw Error(ErrorKind::out_of_resources, "chat template line " + std::to_string(interpreter.line()) +
                                                 ": out of memory while rendering");
  }
}

}  // namespace tandem::jinja
