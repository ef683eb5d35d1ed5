// The Prometheus text exposition format 0.0.4, piece by piece: the content
// type, the name grammar, escaping and number spelling. Registry::render()
// assembles these; they are separate so each rule is tested on its own.
//
// Reference: https://prometheus.io/docs/instrumenting/exposition_formats/
#pragma once

#include <string>
#include <string_view>

namespace tandem::metrics {

// The Content-Type header a /metrics response carries.
inline constexpr std::string_view kContentType = "text/plain; version=0.0.4; charset=utf-8";

// [a-zA-Z_:][a-zA-Z0-9_:]*
bool is_valid_metric_name(std::string_view name);

// [a-zA-Z_][a-zA-Z0-9_]*, and not starting with "__" (reserved for Prometheus).
bool is_valid_label_name(std::string_view name);

// Label values and HELP text may hold any UTF-8, but nothing else.
bool is_valid_utf8(std::string_view text);

// A label value between double quotes: \ -> \\, " -> \", newline -> \n.
std::string escape_label_value(std::string_view value);

// HELP text: \ -> \\, newline -> \n (quotes stay as they are).
std::string escape_help(std::string_view help);

// A sample value or bucket bound, in the shortest form that reads back to the
// same double: plain decimals from 1e-4 up to 1e15 ("1000000", not "1e+06";
// "0.0005"), exponents outside it ("2.5e-07", "1e+20"), and "+Inf", "-Inf",
// "NaN".
std::string format_number(double value);

}  // namespace tandem::metrics
