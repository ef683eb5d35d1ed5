// The SVG line-chart writer: see svg_plot.h. Layout, left to right: y tick
// labels, plot area, legend column; top to bottom: title, plot area, x tick
// labels, x label.
#include "tools/loadtest/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <string_view>
#include <utility>

#include "common/error.h"

namespace tandem::loadtest {
namespace {

// Tableau 10: distinct hues that stay distinguishable for most colour-blind
// readers. Past ten series the palette repeats with dashed lines.
constexpr const char* kPalette[] = {"#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f",
                                    "#edc948", "#b07aa1", "#ff9da7", "#9c755f", "#bab0ac"};
constexpr size_t kPaletteSize = sizeof kPalette / sizeof kPalette[0];
constexpr int kTargetTicks = 6;

std::string escape_xml(std::string_view text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string num(double value) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f", value);
  return text;
}

// An axis: its drawn range, tick positions and labels. Linear ticks are
// multiples of 1, 2 or 5 times a power of ten; log ticks are powers of ten
// (plus 2x and 5x when the range spans two decades or fewer).
struct Axis {
  double lo = 0, hi = 1;
  bool log = false;
  std::vector<std::pair<double, std::string>> ticks;

  // Position of value along the axis, 0 at lo and 1 at hi.
  double fraction(double value) const {
    if (log) return (std::log10(value) - std::log10(lo)) / (std::log10(hi) - std::log10(lo));
    return (value - lo) / (hi - lo);
  }
};

// The 1, 2 or 5 times a power of ten closest above rough.
double nice_step(double rough) {
  const double power = std::pow(10.0, std::floor(std::log10(rough)));
  const double mantissa = rough / power;
  if (mantissa < 1.5) return power;
  if (mantissa < 3.0) return 2 * power;
  if (mantissa < 7.0) return 5 * power;
  return 10 * power;
}

// integer: the values are counts, so a tick between two whole numbers
// (concurrency 2.5) would name a load never run.
Axis linear_axis(double lo, double hi, bool integer = false) {
  if (hi <= lo) {  // one value: centre it in a range of its own size (or 1)
    const double half = lo == 0 ? 1.0 : std::abs(lo) * 0.5;
    lo -= half;
    hi += half;
  }
  double step = nice_step((hi - lo) / (kTargetTicks - 1));
  if (integer) step = std::max(1.0, std::round(step));
  Axis axis;
  axis.lo = std::floor(lo / step) * step;
  axis.hi = std::ceil(hi / step) * step;
  const int decimals = std::max(0, static_cast<int>(-std::floor(std::log10(step))));
  const auto count = static_cast<int>(std::lround((axis.hi - axis.lo) / step));
  for (int i = 0; i <= count; ++i) {
    double value = axis.lo + i * step;
    if (std::abs(value) < step * 1e-9) value = 0;  // no "-0.0"
    char text[64];
    std::snprintf(text, sizeof text, "%.*f", decimals, value);
    axis.ticks.emplace_back(value, text);
  }
  return axis;
}

// A log axis of counts (concurrency 1, 4, 16): from the power of two at or
// below the smallest to the one at or above the largest, a tick at each
// power of two (every other one past kTargetTicks + 3 ticks), since count
// sweeps double and a tick then falls on each load measured.
Axis log2_count_axis(double lo, double hi) {
  const double first = std::floor(std::log2(std::max(lo, 1.0)));
  double last = std::ceil(std::log2(hi));
  if (last <= first) last = first + 1;
  Axis axis;
  axis.log = true;
  axis.lo = std::exp2(first);
  axis.hi = std::exp2(last);
  const double stride = last - first > kTargetTicks + 3 ? 2 : 1;
  for (double power = first; power <= last; power += stride) {
    char text[32];
    std::snprintf(text, sizeof text, "%.0f", std::exp2(power));
    axis.ticks.emplace_back(std::exp2(power), text);
  }
  return axis;
}

Axis log_axis(double lo, double hi) {
  const double first = std::floor(std::log10(lo));
  double last = std::ceil(std::log10(hi));
  if (last <= first) last = first + 1;
  Axis axis;
  axis.log = true;
  axis.lo = std::pow(10.0, first);
  axis.hi = std::pow(10.0, last);
  const bool few_decades = last - first <= 2;
  for (double decade = first; decade <= last; ++decade) {
    const double power = std::pow(10.0, decade);
    for (double multiple : {1.0, 2.0, 5.0}) {
      if (multiple != 1.0 && (!few_decades || decade == last)) continue;
      char text[32];
      std::snprintf(text, sizeof text, "%g", multiple * power);
      axis.ticks.emplace_back(multiple * power, text);
    }
  }
  return axis;
}

// The points of a series that can be drawn on these axes.
std::vector<std::pair<double, double>> drawable_points(const Series& series, bool log_x) {
  std::vector<std::pair<double, double>> points;
  for (size_t i = 0; i < series.x.size(); ++i) {
    const double x = series.x[i], y = series.y[i];
    if (!std::isfinite(x) || !std::isfinite(y) || (log_x && x <= 0)) continue;
    points.emplace_back(x, y);
  }
  return points;
}

struct Box {
  double left, top, right, bottom;
};

std::string text_element(double x, double y, std::string_view anchor, std::string_view text,
                         std::string_view extra = "") {
  return "<text x=\"" + num(x) + "\" y=\"" + num(y) + "\" text-anchor=\"" +
         std::string(anchor) + "\"" + std::string(extra) + ">" + escape_xml(text) + "</text>\n";
}

std::string line_element(double x1, double y1, double x2, double y2, std::string_view stroke) {
  return "<line x1=\"" + num(x1) + "\" y1=\"" + num(y1) + "\" x2=\"" + num(x2) + "\" y2=\"" +
         num(y2) + "\" stroke=\"" + std::string(stroke) + "\"/>\n";
}

std::string draw_axes(const Box& plot, const Axis& x_axis, const Axis& y_axis) {
  std::string out = "<g font-size=\"11\" fill=\"#333\">\n";
  for (const auto& [value, label] : x_axis.ticks) {
    const double x = plot.left + x_axis.fraction(value) * (plot.right - plot.left);
    out += line_element(x, plot.top, x, plot.bottom, "#e5e5e5");
    out += line_element(x, plot.bottom, x, plot.bottom + 4, "#333");
    out += text_element(x, plot.bottom + 16, "middle", label);
  }
  for (const auto& [value, label] : y_axis.ticks) {
    const double y = plot.bottom - y_axis.fraction(value) * (plot.bottom - plot.top);
    out += line_element(plot.left, y, plot.right, y, "#e5e5e5");
    out += line_element(plot.left - 4, y, plot.left, y, "#333");
    out += text_element(plot.left - 7, y + 4, "end", label);
  }
  out += line_element(plot.left, plot.bottom, plot.right, plot.bottom, "#333");
  out += line_element(plot.left, plot.top, plot.left, plot.bottom, "#333");
  return out + "</g>\n";
}

std::string colour_of(const Series& series, size_t index) {
  return series.colour.empty() ? palette_colour(index) : series.colour;
}

// Past the palette's ten colours, lines repeat them dashed, unless the
// caller chose colour and dash itself.
std::string series_style(const Series& series, size_t index) {
  std::string style = "stroke=\"" + colour_of(series, index) + "\"";
  const std::string dash = !series.dash.empty()                         ? series.dash
                           : series.colour.empty() && index >= kPaletteSize ? "6 3"
                                                                            : "";
  if (!dash.empty()) style += " stroke-dasharray=\"" + dash + "\"";
  return style;
}

std::string dot(double x, double y, const std::string& colour) {
  return "<circle class=\"marker\" cx=\"" + num(x) + "\" cy=\"" + num(y) +
         "\" r=\"3.5\" fill=\"" + colour + "\"/>\n";
}

std::string draw_series(const Chart& chart, const Box& plot, const Axis& x_axis, const Axis& y_axis,
                        const std::vector<std::pair<double, double>>& points, size_t index) {
  auto px = [&](double x) { return plot.left + x_axis.fraction(x) * (plot.right - plot.left); };
  auto py = [&](double y) { return plot.bottom - y_axis.fraction(y) * (plot.bottom - plot.top); };
  if (points.empty()) return "";
  const Series& series = chart.series[index];
  const std::string colour = colour_of(series, index);
  if (points.size() == 1) return dot(px(points[0].first), py(points[0].second), colour);
  std::string out;
  if (chart.step) {  // hold each y until the next x, then jump: "H x V y" per point
    std::string d = "M" + num(px(points[0].first)) + "," + num(py(points[0].second));
    for (size_t i = 1; i < points.size(); ++i)
      d += " H" + num(px(points[i].first)) + " V" + num(py(points[i].second));
    out = "<path fill=\"none\" stroke-width=\"2\" " + series_style(series, index) + " d=\"" +
          d + "\"/>\n";
  } else {
    std::string coordinates;
    for (const auto& [x, y] : points) coordinates += num(px(x)) + "," + num(py(y)) + " ";
    coordinates.pop_back();
    out = "<polyline fill=\"none\" stroke-width=\"2\" " + series_style(series, index) +
          " points=\"" + coordinates + "\"/>\n";
  }
  if (chart.markers)
    for (const auto& [x, y] : points) out += dot(px(x), py(y), colour);
  return out;
}

std::string draw_legend(const Chart& chart, double left, double top) {
  std::string out = "<g font-size=\"12\" fill=\"#333\">\n";
  for (size_t i = 0; i < chart.series.size(); ++i) {
    const double y = top + 18.0 * static_cast<double>(i);
    out += "<line x1=\"" + num(left) + "\" y1=\"" + num(y) + "\" x2=\"" + num(left + 22) +
           "\" y2=\"" + num(y) + "\" stroke-width=\"3\" " + series_style(chart.series[i], i) + "/>\n";
    out += text_element(left + 28, y + 4, "start", chart.series[i].name);
  }
  return out + "</g>\n";
}

// Smallest and largest of the chosen coordinate over every drawable point;
// nullopt-like (lo > hi) when there are none.
std::pair<double, double> extent(const std::vector<std::vector<std::pair<double, double>>>& all,
                                 bool want_x) {
  double lo = std::numeric_limits<double>::infinity(), hi = -lo;
  for (const auto& points : all)
    for (const auto& [x, y] : points) {
      lo = std::min(lo, want_x ? x : y);
      hi = std::max(hi, want_x ? x : y);
    }
  return {lo, hi};
}

}  // namespace

std::string render_svg(const Chart& chart, int width, int height) {
  require(width >= 200 && height >= 150, ErrorKind::invalid_argument, [&] {
    return "chart size " + std::to_string(width) + "x" + std::to_string(height) +
           " is too small to lay out; use at least 200x150";
  });
  std::vector<std::vector<std::pair<double, double>>> points;
  size_t longest_name = 0;
  for (const Series& series : chart.series) {
    require(series.x.size() == series.y.size(), ErrorKind::invalid_argument, [&] {
      return "series '" + series.name + "' has " + std::to_string(series.x.size()) +
             " x values but " + std::to_string(series.y.size()) + " y values";
    });
    points.push_back(drawable_points(series, chart.log_x));
    longest_name = std::max(longest_name, series.name.size());
  }
  auto [x_lo, x_hi] = extent(points, true);
  auto [y_lo, y_hi] = extent(points, false);
  const bool has_data = x_lo <= x_hi;
  if (!has_data) {
    x_lo = chart.log_x ? 1 : 0;
    x_hi = chart.log_x ? 10 : 1;
    y_lo = 0;
    y_hi = 1;
  }
  const Axis x_axis = !chart.log_x     ? linear_axis(x_lo, x_hi, chart.integer_x)
                     : chart.integer_x ? log2_count_axis(x_lo, x_hi)
                                       : log_axis(x_lo, x_hi);
  const Axis y_axis = linear_axis(y_lo, y_hi);

  // The legend column is as wide as the longest name (about 7 px a letter at
  // 12 px), capped so the plot keeps most of the width.
  const double legend_width =
      chart.series.empty() ? 0 : std::min(40.0 + 7.0 * static_cast<double>(longest_name), width * 0.35);
  const double caption_height = chart.caption.empty() ? 0 : 18;
  const Box plot{72, 40, width - 20 - legend_width, height - 52 - caption_height};

  std::string out = "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
                    "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) +
                    "\" height=\"" + std::to_string(height) + "\" viewBox=\"0 0 " +
                    std::to_string(width) + " " + std::to_string(height) +
                    "\" font-family=\"sans-serif\">\n";
  out += "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n";
  out += text_element(width / 2.0, 24, "middle", chart.title, " font-size=\"15\" font-weight=\"bold\"");
  out += draw_axes(plot, x_axis, y_axis);
  for (size_t i = 0; i < points.size(); ++i)
    out += draw_series(chart, plot, x_axis, y_axis, points[i], i);
  if (!has_data)
    out += text_element((plot.left + plot.right) / 2, (plot.top + plot.bottom) / 2, "middle",
                        "no data", " font-size=\"14\" fill=\"#999\"");
  out += draw_legend(chart, plot.right + 14, plot.top + 6);
  out += text_element((plot.left + plot.right) / 2, plot.bottom + 40, "middle", chart.x_label,
                      " font-size=\"12\"");
  if (!chart.caption.empty())
    out += text_element(width / 2.0, height - 8.0, "middle", chart.caption,
                        " class=\"caption\" font-size=\"11\" fill=\"#666\"");
  const std::string y_label_at = num(16) + "," + num((plot.top + plot.bottom) / 2);
  out += "<text transform=\"translate(" + y_label_at + ") rotate(-90)\" text-anchor=\"middle\"" +
         " font-size=\"12\">" + escape_xml(chart.y_label) + "</text>\n";
  return out + "</svg>\n";
}

std::string palette_colour(size_t index) { return kPalette[index % kPaletteSize]; }

Series cdf_series(std::string name, std::vector<double> values_ms) {
  Series series{std::move(name), {}, {}};
  if (values_ms.empty()) return series;
  std::sort(values_ms.begin(), values_ms.end());
  const auto n = static_cast<double>(values_ms.size());
  // Start at 0 at the smallest value, then step up 1/n at each value.
  series.x.push_back(values_ms.front());
  series.y.push_back(0.0);
  for (size_t i = 0; i < values_ms.size(); ++i) {
    series.x.push_back(values_ms[i]);
    series.y.push_back(static_cast<double>(i + 1) / n);
  }
  return series;
}

}  // namespace tandem::loadtest
