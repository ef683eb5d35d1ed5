// A tiny, dependency-free SVG line-chart writer for load-test reports
// (latency CDFs, throughput against request rate): axes with "nice" ticks,
// an optional log-scale x axis, a legend and one colour per series (or the
// colour the caller gives, so a variant keeps its colour across charts),
// optional markers at the measured points, step-shaped lines for CDFs and a
// caption saying what was measured.
#pragma once

#include <string>
#include <vector>

namespace tandem::loadtest {

// One line of a chart; x and y have the same length. Points with a
// non-finite coordinate (or x <= 0 on a log axis) are left out.
struct Series {
  std::string name;
  std::vector<double> x, y;
  std::string colour{};  // "#rrggbb"; empty = palette_colour(index in the chart)
  std::string dash{};    // SVG stroke-dasharray, e.g. "6 3"; empty = solid
};

struct Chart {
  std::string title, x_label, y_label;
  std::vector<Series> series;
  bool log_x = false;      // log10 x axis, ticks at powers of ten
  bool integer_x = false;  // x is a count (concurrency): whole-number ticks; on a log axis, powers of two
  bool markers = false;    // a dot (class "marker") at every point: points measured, not a curve
  bool step = false;       // each point holds until the next x, then jumps: an empirical CDF
  std::string caption{};   // a line under the chart, e.g. requests, date and URL
};

// The chart palette's colour number index (it repeats past ten).
std::string palette_colour(size_t index);

// A standalone SVG document (valid XML; text is escaped). A series with one
// point is drawn as a dot; a chart with no points says "no data".
// Throws invalid_argument when a series' x and y differ in length or the
// size is too small to lay out (under 200 x 150).
std::string render_svg(const Chart& chart, int width = 720, int height = 440);

// The empirical CDF of a latency sample, for plotting: x the sorted values,
// y rising from 0 (at the smallest value) to 1 (at the largest).
// Empty for an empty sample.
Series cdf_series(std::string name, std::vector<double> values_ms);

}  // namespace tandem::loadtest
