// Typed reads of request fields from parsed JSON, each throwing an ApiError
// that names the field and the type it should have had.
//
// JSON has one number type, so "an integer" means a number with no fraction:
// 16, 16.0 and 1.6e1 are all the integer 16 (as pydantic-based servers read
// them), while 2.5 is not an integer and 1e30 is out of range.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "coordinator/api/api_error.h"

namespace tandem::api {

using Json = nlohmann::json;

// How a message names a value's type: "an integer", "a decimal", "a string"...
std::string json_type_phrase(const Json& value);

// 400 "Invalid type for 'field': expected <expected>, but got <type> instead."
ApiError wrong_type(std::string_view field, std::string_view expected, const Json& got);

// 400 "Invalid 'field': <problem>", the shape of every range and value error.
ApiError invalid_value(std::string_view field, std::string_view problem);

bool read_bool(const Json& value, std::string_view field);
const std::string& read_string(const Json& value, std::string_view field);
double read_number(const Json& value, std::string_view field);
const Json::object_t& read_object(const Json& value, std::string_view field);
const Json::array_t& read_array(const Json& value, std::string_view field);

// A number with no fraction (of any size).
bool is_integral_number(const Json& value);

// The exact int64 a number holds; nullopt for a non-number, a fraction, or a
// value outside int64 (such as 1e30).
std::optional<int64_t> exact_integer(const Json& value);

// An integer in [min, max]; anything outside is a 400 that states the bounds.
int64_t read_integer(const Json& value, std::string_view field, int64_t min, int64_t max);

// `number` (read from `value`) as the 32-bit float the engine holds it in.
// A number that is not 0 but becomes 0 as a float (1e-300), or that no
// float holds (1e300), is a 400 naming the field: the engine would see
// another value than the one sent.
float as_engine_float(double number, const Json& value, std::string_view field);

// A number formatted for a message: 2, 2.5, 1e+30 (integral values without ".0").
std::string describe_number(const Json& value);

}  // namespace tandem::api
