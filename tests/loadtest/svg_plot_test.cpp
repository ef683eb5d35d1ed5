// Tests of tools/loadtest/svg_plot.h's chart options, read back from the SVG
// text: a marker at every measured point, whole-number ticks on a count
// axis, step-shaped CDF lines, the caption, and colours the caller chose.
// (report_test.cpp covers the basic layout: escaping, ticks, legend.)
#include "tools/loadtest/svg_plot.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <regex>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace tandem::loadtest {
namespace {

// Every match of pattern's first group in text.
std::vector<std::string> all_of(const std::string& text, const std::string& pattern) {
  std::vector<std::string> out;
  const std::regex re(pattern);
  for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
    out.push_back((*it)[1].str());
  return out;
}

// The x tick labels: the axis group's middle-anchored texts (the y ticks
// are anchored at their end).
std::vector<std::string> x_tick_labels(const std::string& svg) {
  const size_t begin = svg.find("<g font-size=\"11\"");
  const std::string axes = svg.substr(begin, svg.find("</g>", begin) - begin);
  return all_of(axes, "text-anchor=\"middle\">([^<]*)</text>");
}

Chart sweep_chart(bool markers, bool integer_x) {
  Chart chart;
  chart.title = "throughput";
  chart.series = {{"spec on", {1, 2, 3}, {100, 180, 240}}, {"spec off", {1, 2, 3}, {90, 150, 200}}};
  chart.markers = markers;
  chart.integer_x = integer_x;
  return chart;
}

TEST(SvgPlotOptions, MarkersSitOnEveryMeasuredPoint) {
  const std::string svg = render_svg(sweep_chart(true, true));
  std::set<std::string> line_points;
  for (const std::string& points : all_of(svg, "<polyline[^>]* points=\"([^\"]*)\"")) {
    std::istringstream in(points);
    for (std::string point; in >> point;) line_points.insert(point);
  }
  ASSERT_EQ(line_points.size(), 6u);
  std::set<std::string> markers;
  const std::regex marker("<circle class=\"marker\" cx=\"([^\"]*)\" cy=\"([^\"]*)\"");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), marker); it != std::sregex_iterator(); ++it)
    markers.insert((*it)[1].str() + "," + (*it)[2].str());
  EXPECT_EQ(markers, line_points);
  EXPECT_EQ(render_svg(sweep_chart(false, true)).find("<circle"), std::string::npos);
}

TEST(SvgPlotOptions, ACountAxisHasWholeNumberTicksOnly) {
  // Loads 1..3: a plain linear axis puts ticks at halves.
  const std::vector<std::string> plain = x_tick_labels(render_svg(sweep_chart(false, false)));
  EXPECT_NE(std::find(plain.begin(), plain.end(), "1.5"), plain.end());
  const std::vector<std::string> counts = x_tick_labels(render_svg(sweep_chart(false, true)));
  ASSERT_GE(counts.size(), 3u);
  for (const std::string& label : counts)
    EXPECT_TRUE(std::regex_match(label, std::regex("[0-9]+"))) << label;
  for (const char* load : {"1", "2", "3"})
    EXPECT_NE(std::find(counts.begin(), counts.end(), load), counts.end()) << load;
  // One load point: still whole numbers around it.
  Chart single = sweep_chart(true, true);
  single.series = {{"only", {1}, {50}}};
  for (const std::string& label : x_tick_labels(render_svg(single)))
    EXPECT_TRUE(std::regex_match(label, std::regex("[0-9]+"))) << label;
  // A log count axis ticks the powers of two, where doubling sweeps measure.
  Chart logged = sweep_chart(true, true);
  logged.series = {{"log", {1, 4, 16}, {1, 2, 3}}};
  logged.log_x = true;
  EXPECT_EQ(x_tick_labels(render_svg(logged)), (std::vector<std::string>{"1", "2", "4", "8", "16"}));
  logged.series = {{"log", {3, 12, 100}, {1, 2, 3}}};
  EXPECT_EQ(x_tick_labels(render_svg(logged)),
            (std::vector<std::string>{"2", "4", "8", "16", "32", "64", "128"}));
  logged.series = {{"log", {1, 4096}, {1, 2}}};  // 13 powers: every other one
  EXPECT_EQ(x_tick_labels(render_svg(logged)),
            (std::vector<std::string>{"1", "4", "16", "64", "256", "1024", "4096"}));
}

TEST(SvgPlotOptions, AStepChartDrawsHorizontalThenVerticalSegments) {
  Chart chart;
  chart.title = "TTFT distribution";
  chart.series = {cdf_series("run", {30, 10, 20})};  // (10,0) (10,1/3) (20,2/3) (30,1)
  chart.step = true;
  const std::string svg = render_svg(chart);
  EXPECT_EQ(svg.find("<polyline"), std::string::npos);
  const std::vector<std::string> paths = all_of(svg, "<path [^>]*d=\"([^\"]*)\"");
  ASSERT_EQ(paths.size(), 1u);
  const std::regex step("M([0-9.]+),([0-9.]+)( H([0-9.]+) V([0-9.]+)){3}");
  ASSERT_TRUE(std::regex_match(paths[0], step)) << paths[0];
  // Each H keeps the previous y and each V the new x: the x of a value is
  // reached before the jump, as a CDF that rises at each measured value.
  const std::vector<std::string> xs = all_of(paths[0], "H([0-9.]+)");
  const std::vector<std::string> ys = all_of(paths[0], "V([0-9.]+)");
  ASSERT_EQ(xs.size(), 3u);
  EXPECT_LT(std::stod(xs[1]), std::stod(xs[2]));
  EXPECT_GT(std::stod(ys[0]), std::stod(ys[1]));  // SVG y grows downwards: rising
  EXPECT_GT(std::stod(ys[1]), std::stod(ys[2]));
}

TEST(SvgPlotOptions, CaptionAndChosenColoursAndDashesAreDrawn) {
  Chart chart = sweep_chart(true, true);
  chart.caption = "96 requests (0 failed), 2026-11-26 07:30 UTC, http://127.0.0.1:8080/v1/completions";
  chart.series[0].colour = "#123456";
  chart.series[1].colour = "#123456";
  chart.series[1].dash = "2 3";
  const std::string svg = render_svg(chart);
  EXPECT_NE(svg.find("class=\"caption\" font-size=\"11\" fill=\"#666\">" + chart.caption + "</text>"),
            std::string::npos);
  // Two lines and two legend swatches in the chosen colour, one of each dashed.
  EXPECT_EQ(all_of(svg, "(stroke=\"#123456\")").size(), 4u);
  EXPECT_EQ(all_of(svg, "(stroke=\"#123456\" stroke-dasharray=\"2 3\")").size(), 2u);
  EXPECT_EQ(all_of(svg, "(fill=\"#123456\")").size(), 6u);  // the markers
  EXPECT_EQ(render_svg(sweep_chart(true, true)).find("class=\"caption\""), std::string::npos);
}

}  // namespace
}  // namespace tandem::loadtest
