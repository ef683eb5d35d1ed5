// The names of the filters and tests this engine has, so that the parser
// rejects an unknown one as Jinja2 does: when the template is loaded,
// even in a branch that never runs.
#pragma once

#include <string_view>

namespace tandem::jinja {

bool is_filter_name(std::string_view name);  // filters.cpp
bool is_test_name(std::string_view name);    // tests.cpp

}  // namespace tandem::jinja
