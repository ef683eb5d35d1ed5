// Failure: what the engine throws inside, before template.cpp turns it into
// tandem::Error with the template line ("chat template line N: ...").
#pragma once

#include <string>

namespace tandem::jinja {

struct Failure {
  std::string message;
  bool raised_by_template = false;  // raise_exception(): no line, the template's own words
};

[[noreturn]] inline void fail(std::string message) { throw Failure{std::move(message)}; }

}  // namespace tandem::jinja
