// Tests of tools/loadtest/sweep_plots.h: the five charts of a sweep, read
// back from the files written: a variant has the same colour in every chart,
// sweep charts mark each load measured, CDFs are step lines, and every
// caption gives the request count, the date and the URL.
#include "tools/loadtest/sweep_plots.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

namespace tandem::loadtest {
namespace {

std::string read_text(const std::filesystem::path& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

std::vector<RequestRecord> records(double ttft, size_t count) {
  std::vector<RequestRecord> out(count);
  for (size_t i = 0; i < count; ++i) {
    out[i].ok = true;
    out[i].ttft = ttft * static_cast<double>(i + 1);
    out[i].latency = 2 * out[i].ttft;
  }
  return out;
}

RunSummary summary(double throughput) {
  RunSummary s;
  s.output_throughput = throughput;
  s.ttft.p99 = throughput / 1e4;
  s.tpot.p99 = throughput / 1e5;
  return s;
}

// legend name -> the colour of its swatch (the legend's lines are 3 wide).
std::map<std::string, std::string> legend_colours(const std::string& svg) {
  std::map<std::string, std::string> out;
  const std::regex swatch("stroke-width=\"3\" stroke=\"(#[0-9a-f]{6})\"[^>]*/>\n<text[^>]*>([^<]*)</text>");
  for (auto it = std::sregex_iterator(svg.begin(), svg.end(), swatch); it != std::sregex_iterator(); ++it)
    out[(*it)[2].str()] = (*it)[1].str();
  return out;
}

size_t count_of(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(SweepPlots, AVariantKeepsItsColourInEveryChart) {
  const std::filesystem::path dir =
      std::filesystem::path(::testing::TempDir()) / ("sweep_plots_" + std::to_string(::getpid()));
  SweepPlots plots({"spec on", "spec off"});
  // Loads 1 and 4; "spec off" is added first at each point, so order of
  // arrival does not decide the colour, --variants' order does.
  for (size_t point = 0; point < 2; ++point) {
    const double load = point == 0 ? 1 : 4;
    const std::string label = "concurrency " + std::to_string(static_cast<int>(load));
    plots.add_run("spec off", point, label, load, summary(100 * load), records(0.02, 4));
    plots.add_run("spec on", point, label, load, summary(150 * load), records(0.01, 4));
  }
  const std::string caption = plot_caption(32, 1, 1795000000, "http://127.0.0.1:8080/v1/completions");
  plots.write(dir, /*closed_loop=*/true, 2, caption);

  const std::string on = palette_colour(0), off = palette_colour(1);
  for (const char* file : {"throughput.svg", "p99_ttft.svg", "p99_tpot.svg"}) {
    const std::string svg = read_text(dir / file);
    const auto colours = legend_colours(svg);
    EXPECT_EQ(colours, (std::map<std::string, std::string>{{"spec on", on}, {"spec off", off}})) << file;
    EXPECT_EQ(count_of(svg, "class=\"marker\""), 4u) << file;  // 2 variants x 2 loads
    EXPECT_NE(svg.find(">" + caption + "</text>"), std::string::npos) << file;
    EXPECT_EQ(svg.find(">2.5</text>"), std::string::npos) << file;  // whole-number loads
  }
  for (const char* file : {"ttft_cdf.svg", "e2e_cdf.svg"}) {
    const std::string svg = read_text(dir / file);
    const auto colours = legend_colours(svg);
    ASSERT_EQ(colours.size(), 4u) << file;
    for (const auto& [name, colour] : colours)
      EXPECT_EQ(colour, name.rfind("spec on", 0) == 0 ? on : off) << file << ": " << name;
    EXPECT_EQ(count_of(svg, "<path "), 4u) << file;
    EXPECT_EQ(count_of(svg, "<polyline"), 0u) << file;
    EXPECT_EQ(count_of(svg, "stroke-dasharray=\"6 3\""), 4u) << file;  // load 4: 2 lines + 2 swatches
    EXPECT_NE(svg.find(">" + caption + "</text>"), std::string::npos) << file;
  }
  std::filesystem::remove_all(dir);
}

TEST(PlotCaption, GivesCountFailuresUtcDateAndUrl) {
  EXPECT_EQ(plot_caption(128, 3, 0, "http://127.0.0.1:8080/v1/completions"),
            "128 requests (3 failed), 1970-01-01 00:00 UTC, http://127.0.0.1:8080/v1/completions");
  EXPECT_EQ(plot_caption(1, 0, 1795000000, "http://h:1/x"),
            "1 requests (0 failed), 2026-11-18 11:06 UTC, http://h:1/x");
}

}  // namespace
}  // namespace tandem::loadtest
