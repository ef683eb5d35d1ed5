// The filters, split in two files by what they work on; apply_filter
// (interpreter.h) tries each group in turn.
#pragma once

#include "common/jinja/interpreter.h"

namespace tandem::jinja {

// filters.cpp: text and numbers (trim, indent, int, round, tojson, ...).
bool scalar_filter(Interpreter& in, const std::string& name, const Value& value, CallArgs& args, Value* out);
// filters_sequence.cpp: lists and dicts (join, map, select, sort, ...).
bool sequence_filter(Interpreter& in, const std::string& name, const Value& value, CallArgs& args, Value* out);

}  // namespace tandem::jinja
