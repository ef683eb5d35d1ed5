#include "coordinator/api/json_fields.h"

#include <cmath>
#include <limits>

namespace tandem::api {
namespace {

bool has_fraction(const Json& value) {
  if (!value.is_number_float()) return false;
  const double d = value.get<double>();
  return d != std::trunc(d);
}

}  // namespace

bool is_integral_number(const Json& value) { return value.is_number() && !has_fraction(value); }

std::optional<int64_t> exact_integer(const Json& value) {
  if (!value.is_number()) return std::nullopt;
  if (value.is_number_integer() && !value.is_number_unsigned()) return value.get<int64_t>();
  if (value.is_number_unsigned()) {
    const uint64_t u = value.get<uint64_t>();
    if (u > static_cast<uint64_t>(std::numeric_limits<int64_t>::max())) return std::nullopt;
    return static_cast<int64_t>(u);
  }
  const double d = value.get<double>();
  // 2^63 is exactly representable; every double below it that is integral fits.
  constexpr double two_to_63 = 9223372036854775808.0;
  if (d != std::trunc(d) || d < -two_to_63 || d >= two_to_63) return std::nullopt;
  return static_cast<int64_t>(d);
}

std::string json_type_phrase(const Json& value) {
  switch (value.type()) {
    case Json::value_t::null: return "null";
    case Json::value_t::boolean: return "a boolean";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "an integer";
    case Json::value_t::number_float: return has_fraction(value) ? "a decimal" : "an integer";
    case Json::value_t::string: return "a string";
    case Json::value_t::array: return "an array";
    case Json::value_t::object: return "an object";
    case Json::value_t::binary: return "binary data";
    case Json::value_t::discarded: return "nothing";
  }
  return "an unknown type";  // unreachable: every value_t is handled above
}

ApiError wrong_type(std::string_view field, std::string_view expected, const Json& got) {
  return invalid_request(std::string(field),
                         "Invalid type for '" + std::string(field) + "': expected " +
                             std::string(expected) + ", but got " + json_type_phrase(got) +
                             " instead.");
}

ApiError invalid_value(std::string_view field, std::string_view problem) {
  return invalid_request(std::string(field),
                         "Invalid '" + std::string(field) + "': " + std::string(problem));
}

bool read_bool(const Json& value, std::string_view field) {
  if (!value.is_boolean()) throw wrong_type(field, "a boolean", value);
  return value.get<bool>();
}

const std::string& read_string(const Json& value, std::string_view field) {
  if (!value.is_string()) throw wrong_type(field, "a string", value);
  return value.get_ref<const std::string&>();
}

double read_number(const Json& value, std::string_view field) {
  if (!value.is_number()) throw wrong_type(field, "a number", value);
  return value.get<double>();
}

const Json::object_t& read_object(const Json& value, std::string_view field) {
  if (!value.is_object()) throw wrong_type(field, "an object", value);
  return value.get_ref<const Json::object_t&>();
}

const Json::array_t& read_array(const Json& value, std::string_view field) {
  if (!value.is_array()) throw wrong_type(field, "an array", value);
  return value.get_ref<const Json::array_t&>();
}

int64_t read_integer(const Json& value, std::string_view field, int64_t min, int64_t max) {
  if (!is_integral_number(value)) throw wrong_type(field, "an integer", value);
  const std::optional<int64_t> integer = exact_integer(value);
  const std::string bounds =
      "Expected a value in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  if (!integer || *integer < min || *integer > max) {
    throw invalid_value(field, bounds + ", but got " + describe_number(value) + " instead.");
  }
  return *integer;
}

float as_engine_float(double number, const Json& value, std::string_view field) {
  const float engine = static_cast<float>(number);
  if (!std::isfinite(engine) || (engine == 0.0f && number != 0.0)) {
    throw invalid_value(field, describe_number(value) + " is " +
                                   (std::isfinite(engine) ? "0" : "infinite") +
                                   " as the 32-bit float the engine uses, which is not the value "
                                   "sent. Send 0 or a number of at least 1e-38.");
  }
  return engine;
}

std::string describe_number(const Json& value) {
  // An integral decimal reads as the integer it is (2, not 2.0), up to where
  // doubles stop holding every integer; beyond that, as nlohmann writes it.
  if (value.is_number_float()) {
    const double d = value.get<double>();
    if (d == std::trunc(d) && std::fabs(d) < 9007199254740992.0) {
      return std::to_string(static_cast<int64_t>(d));
    }
  }
  return value.dump();
}

}  // namespace tandem::api
