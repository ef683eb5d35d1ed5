// Tests of tools/loadtest/report.h and svg_plot.h: the terminal table and
// JSON carry the summary's figures, the progress bar fills in proportion,
// and the SVG charts are well-formed XML with their names, ticks and colours.
#include "tools/loadtest/report.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <set>
#include <sstream>
#include <string>

#include "common/error.h"
#include "tools/loadtest/svg_plot.h"

namespace tandem::loadtest {
namespace {

Distribution distribution(double base) {
  // Distinct figures per statistic so a mixed-up column would show.
  return Distribution{.mean = base,
                      .median = base + 0.001,
                      .p90 = base + 0.002,
                      .p99 = base + 0.003,
                      .min = base - 0.001,
                      .max = base + 0.004,
                      .count = 7};
}

RunSummary sample_summary() {
  RunSummary s;
  s.duration_seconds = 12.5;
  s.requests = 10;
  s.completed = 7;
  s.failed = 3;
  s.errors_by_status = {{0, 1}, {503, 2}};
  s.first_error_by_status = {{0, "connection refused"}, {503, "the server is draining"}};
  s.request_throughput = 0.56;
  s.output_throughput = 123.25;
  s.total_token_throughput = 456.75;
  s.prompt_tokens = 4167;
  s.output_tokens = 1541;
  s.ttft = distribution(0.12345);
  s.tpot = distribution(0.02);
  s.itl = distribution(0.03);
  s.e2e = distribution(1.5);
  return s;
}

// The line of the table that starts with label (empty when none does).
std::string table_line(const std::string& table, const std::string& label) {
  std::istringstream lines(table);
  for (std::string line; std::getline(lines, line);)
    if (line.rfind(label, 0) == 0) return line;
  return "";
}

TEST(SummaryTable, ShowsCountsThroughputsAndLatenciesInMilliseconds) {
  const std::string table = summary_table(sample_summary(), "Serving Benchmark Result");
  EXPECT_NE(table.find("Serving Benchmark Result"), std::string::npos);
  EXPECT_NE(table_line(table, "Successful requests:").find(" 7"), std::string::npos);
  EXPECT_NE(table_line(table, "Failed requests:").find(" 3"), std::string::npos);
  EXPECT_NE(table_line(table, "Benchmark duration (s):").find("12.50"), std::string::npos);
  EXPECT_NE(table_line(table, "Total input tokens:").find("4167"), std::string::npos);
  EXPECT_NE(table_line(table, "Output token throughput (tok/s):").find("123.25"),
            std::string::npos);
  EXPECT_NE(table_line(table, "Mean TTFT (ms):").find("123.45"), std::string::npos);
  EXPECT_NE(table_line(table, "Median TTFT (ms):").find("124.45"), std::string::npos);
  EXPECT_NE(table_line(table, "P90 TPOT (ms):").find("22.00"), std::string::npos);
  EXPECT_NE(table_line(table, "P99 ITL (ms):").find("33.00"), std::string::npos);
  EXPECT_NE(table_line(table, "Mean E2EL (ms):").find("1500.00"), std::string::npos);
  EXPECT_NE(table_line(table, "HTTP 503:").find(" 2"), std::string::npos);
  EXPECT_NE(table_line(table, "No response:").find(" 1"), std::string::npos);
  EXPECT_EQ(table_line(table, "Request goodput"), "");  // no SLO given
}

TEST(SummaryTable, EachErrorStatusShowsItsFirstMessage) {
  RunSummary s = sample_summary();
  const std::string table = summary_table(s, "Result");
  EXPECT_EQ(table_line(table, "  first: the server is draining"),
            "  first: the server is draining");
  EXPECT_EQ(table_line(table, "  first: connection refused"), "  first: connection refused");
  // Each message right under its own count.
  EXPECT_NE(table.find("HTTP 503:"), std::string::npos);
  EXPECT_LT(table.find("HTTP 503:"), table.find("  first: the server is draining"));
  EXPECT_LT(table.find("No response:"), table.find("  first: connection refused"));
  EXPECT_LT(table.find("  first: connection refused"), table.find("HTTP 503:"));
  // A long message (an HTML error page, say) is cut to one line of 150 characters.
  s.first_error_by_status[503] = std::string(300, 'x') + "\nsecond line";
  const std::string cut = summary_table(s, "Result");
  const std::string line = table_line(cut, "  first: x");
  EXPECT_EQ(line, "  first: " + std::string(147, 'x') + "...");
  EXPECT_EQ(cut.find("second line"), std::string::npos);
}

TEST(SummaryTable, ValuesLineUpInOneColumn) {
  const std::string table = summary_table(sample_summary(), "Result");
  const size_t column = table_line(table, "Successful requests:").find('7');
  EXPECT_EQ(table_line(table, "Mean TTFT (ms):").find("123.45"), column);
  EXPECT_EQ(table_line(table, "Total token throughput (tok/s):").find("456.75"), column);
}

TEST(SummaryTable, ShowsGoodputWhenPresentAndNoErrorsSectionWithoutFailures) {
  RunSummary s = sample_summary();
  s.goodput = 0.48;
  s.errors_by_status.clear();
  const std::string table = summary_table(s, "Result");
  EXPECT_NE(table_line(table, "Request goodput (req/s):").find("0.48"), std::string::npos);
  EXPECT_EQ(table.find("Errors by status"), std::string::npos);
}

TEST(SummaryJson, CarriesEveryFigureWithVllmKeys) {
  const nlohmann::json j = summary_json(sample_summary());
  EXPECT_EQ(j.at("completed"), 7);
  EXPECT_EQ(j.at("failed"), 3);
  EXPECT_EQ(j.at("requests"), 10);
  EXPECT_DOUBLE_EQ(j.at("duration").get<double>(), 12.5);
  EXPECT_EQ(j.at("total_input_tokens"), 4167);
  EXPECT_EQ(j.at("total_output_tokens"), 1541);
  EXPECT_DOUBLE_EQ(j.at("request_throughput").get<double>(), 0.56);
  EXPECT_DOUBLE_EQ(j.at("output_throughput").get<double>(), 123.25);
  EXPECT_DOUBLE_EQ(j.at("total_token_throughput").get<double>(), 456.75);
  EXPECT_NEAR(j.at("mean_ttft_ms").get<double>(), 123.45, 1e-9);
  EXPECT_NEAR(j.at("median_ttft_ms").get<double>(), 124.45, 1e-9);
  EXPECT_NEAR(j.at("p90_tpot_ms").get<double>(), 22.0, 1e-9);
  EXPECT_NEAR(j.at("p99_itl_ms").get<double>(), 33.0, 1e-9);
  EXPECT_NEAR(j.at("min_e2el_ms").get<double>(), 1499.0, 1e-9);
  EXPECT_NEAR(j.at("max_e2el_ms").get<double>(), 1504.0, 1e-9);
  EXPECT_EQ(j.at("itl_count"), 7);
  EXPECT_TRUE(j.at("goodput").is_null());
  EXPECT_EQ(j.at("errors"), (nlohmann::json{{"0", 1}, {"503", 2}}));
  EXPECT_EQ(j.at("first_errors"),
            (nlohmann::json{{"0", "connection refused"}, {"503", "the server is draining"}}));
}

// Cached prompt tokens show only when the server reported some: a zero
// from a server without the field would read as a measured miss.
TEST(SummaryTable, CachedInputTokensOnlyWhenReported) {
  RunSummary s = sample_summary();
  EXPECT_EQ(table_line(summary_table(s, "t"), "Cached input tokens:"), "");
  s.cached_tokens = 1000;
  const std::string table = summary_table(s, "t");
  EXPECT_NE(table_line(table, "Cached input tokens:").find("1000"), std::string::npos);
  EXPECT_NE(table_line(table, "Cached share of input tokens:").find("0.240"), std::string::npos);
  const nlohmann::json j = summary_json(s);
  EXPECT_EQ(j.at("total_cached_tokens"), 1000);
  EXPECT_NEAR(j.at("cached_token_rate").get<double>(), 1000.0 / 4167.0, 1e-12);
}

TEST(SummaryJson, GoodputIsANumberWhenPresent) {
  RunSummary s = sample_summary();
  s.goodput = 0.48;
  EXPECT_DOUBLE_EQ(summary_json(s).at("goodput").get<double>(), 0.48);
}

TEST(ComparisonLine, GivesEachRoundThenTheMeanAndTheIntervalWhereThereIsOne) {
  RatioSummary two;
  two.geometric_mean = 0.98711;
  two.low = 0.5449;
  two.high = 1.78712;
  EXPECT_EQ(comparison_line("on / off, concurrency 8", {1.0542, 0.9243}, two),
            "on / off, concurrency 8, output throughput per round: 1.054, 0.924; geometric mean "
            "0.987 (95% interval 0.545-1.787)\n");
  RatioSummary one;
  one.geometric_mean = 1.25;
  EXPECT_EQ(comparison_line("b / a, rate 2/s", {1.25}, one),
            "b / a, rate 2/s, output throughput per round: 1.250; geometric mean 1.250\n");
}

TEST(ProgressBar, FillsInProportionAndAlignsTheCount) {
  EXPECT_EQ(progress_bar(42, 100, 10), "[####......]  42/100");
  EXPECT_EQ(progress_bar(0, 5, 4), "[....] 0/5");
  EXPECT_EQ(progress_bar(5, 5, 4), "[####] 5/5");
  EXPECT_EQ(progress_bar(7, 5, 4), "[####] 5/5");  // done is capped at total
  EXPECT_EQ(progress_bar(0, 0, 3), "[...] 0/0");
  EXPECT_THROW(progress_bar(1, 2, 0), Error);
}

// Whether text parses as XML, asked of Python's parser (the build found it).
bool is_well_formed_xml(const std::string& text, const std::string& file_name) {
  const std::string path = ::testing::TempDir() + std::to_string(::getpid()) + "_" + file_name;
  std::ofstream(path) << text;
  const std::string command = std::string(TANDEM_PYTHON) +
                              " -c 'import sys, xml.dom.minidom; "
                              "xml.dom.minidom.parse(sys.argv[1])' " + path + " 2>/dev/null";
  return std::system(command.c_str()) == 0;
}

size_t occurrences(const std::string& text, const std::string& needle) {
  size_t count = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1))
    ++count;
  return count;
}

TEST(SvgPlot, WellFormednessCheckRejectsBrokenXml) {
  EXPECT_FALSE(is_well_formed_xml("<svg><g></svg>", "broken.svg"));
  EXPECT_TRUE(is_well_formed_xml("<svg><g/></svg>", "fine.svg"));
}

TEST(SvgPlot, LineChartHasEscapedNamesTicksAndDistinctColours) {
  Chart chart{.title = "Latency <CDF> & more",
              .x_label = "TTFT (ms)",
              .y_label = "fraction",
              .series = {{"tandem \"spec\"", {0, 5, 10}, {0, 0.5, 1}},
                         {"vllm <base>", {1, 6, 9}, {0, 0.4, 1}}}};
  const std::string svg = render_svg(chart);
  ASSERT_TRUE(is_well_formed_xml(svg, "line.svg")) << svg;
  EXPECT_NE(svg.find("Latency &lt;CDF&gt; &amp; more"), std::string::npos);
  EXPECT_NE(svg.find("tandem &quot;spec&quot;"), std::string::npos);
  EXPECT_NE(svg.find("vllm &lt;base&gt;"), std::string::npos);
  EXPECT_NE(svg.find(">TTFT (ms)</text>"), std::string::npos);
  // x spans 0..10: ticks every 2; y spans 0..1: ticks every 0.2.
  for (const char* tick : {">0</text>", ">4</text>", ">10</text>", ">0.2</text>", ">1.0</text>"})
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  EXPECT_EQ(svg.find(">3</text>"), std::string::npos);
  EXPECT_EQ(occurrences(svg, "<polyline"), 2u);
  // Each colour appears on its polyline and its legend swatch.
  const size_t first = svg.find("stroke=\"#", svg.find("<polyline"));
  const size_t second = svg.find("stroke=\"#", svg.find("<polyline", first));
  ASSERT_NE(second, std::string::npos);
  EXPECT_NE(svg.substr(first, 16), svg.substr(second, 16));
}

TEST(SvgPlot, LogAxisTicksArePowersOfTen) {
  Chart chart;
  chart.title = "Throughput";
  chart.series = {{"rate", {1, 30, 900}, {2, 3, 4}}};
  chart.log_x = true;
  const std::string svg = render_svg(chart);
  ASSERT_TRUE(is_well_formed_xml(svg, "log.svg"));
  for (const char* tick : {">1</text>", ">10</text>", ">100</text>", ">1000</text>"})
    EXPECT_NE(svg.find(tick), std::string::npos) << tick;
  EXPECT_EQ(svg.find(">20</text>"), std::string::npos);  // three decades: powers only
}

TEST(SvgPlot, HandlesSinglePointEmptySeriesAndNoData) {
  Chart chart;
  chart.title = "Edge cases";
  chart.series = {{"one point", {3}, {7}}, {"nothing", {}, {}}};
  const std::string svg = render_svg(chart);
  ASSERT_TRUE(is_well_formed_xml(svg, "edge.svg"));
  EXPECT_EQ(occurrences(svg, "<circle"), 1u);
  EXPECT_EQ(occurrences(svg, "<polyline"), 0u);
  EXPECT_NE(svg.find(">nothing</text>"), std::string::npos);  // still in the legend
  EXPECT_EQ(svg.find("no data"), std::string::npos);

  Chart nothing;
  nothing.title = "Empty";
  const std::string empty = render_svg(nothing);
  ASSERT_TRUE(is_well_formed_xml(empty, "empty.svg"));
  EXPECT_NE(empty.find(">no data</text>"), std::string::npos);
}

TEST(SvgPlot, RejectsMismatchedSeriesAndTinyCanvas) {
  Chart mismatched;
  mismatched.series = {{"bad", {1, 2}, {1}}};
  EXPECT_THROW(render_svg(mismatched), Error);
  EXPECT_THROW(render_svg(Chart{}, 100, 100), Error);
}

TEST(CdfSeries, RisesFromZeroToOneOverSortedValues) {
  const Series cdf = cdf_series("ttft", {30, 10, 20});
  EXPECT_EQ(cdf.name, "ttft");
  EXPECT_EQ(cdf.x, (std::vector<double>{10, 10, 20, 30}));
  ASSERT_EQ(cdf.y.size(), 4u);
  EXPECT_DOUBLE_EQ(cdf.y[0], 0.0);
  EXPECT_DOUBLE_EQ(cdf.y[1], 1.0 / 3);
  EXPECT_DOUBLE_EQ(cdf.y[2], 2.0 / 3);
  EXPECT_DOUBLE_EQ(cdf.y[3], 1.0);
  EXPECT_TRUE(cdf_series("none", {}).x.empty());
}

TEST(ProgressLine, AddsRateAndTimeLeftAtThatRate) {
  // 25 of 100 in 10 s: 2.5 req/s, 75 left take 30 s.
  EXPECT_EQ(progress_line(25, 100, 10.0, 8), progress_bar(25, 100, 8) + "  2.5 req/s  ETA 30 s");
  EXPECT_EQ(progress_line(100, 100, 20.0, 8), progress_bar(100, 100, 8) + "  5.0 req/s  ETA 0 s");
  // Nothing ended yet: no rate to go by.
  EXPECT_EQ(progress_line(0, 100, 3.0, 8), progress_bar(0, 100, 8) + "  - req/s  ETA -");
  // Bounded by time only: a count, no bar, no ETA.
  EXPECT_EQ(progress_line(42, 0, 12.0, 8), "42 done  3.5 req/s");
}

TEST(ConversationReport, LineAndJsonCarryEachConversationsTotals) {
  std::vector<ConversationTotals> totals(3);
  totals[0] = {"c.jsonl:1", 3, 3, 0, 120, 45, 1.25, true};
  totals[1] = {"c.jsonl:2", 2, 1, 1, 40, 9, 0.5, false};
  totals[2] = {"c.jsonl:1", 2, 2, 0, 80, 30, 0.75, true};
  // 7 turns over 3 conversations: 2.3 mean; 2 of 3 finished.
  EXPECT_EQ(conversations_line(totals),
            "Conversations: 3 replayed, 2 finished; turns per conversation 2.3 mean\n");
  const nlohmann::json table = conversations_json(totals);
  ASSERT_EQ(table.size(), 3u);
  EXPECT_EQ(table[1], (nlohmann::json{{"where", "c.jsonl:2"}, {"turns", 2}, {"completed", 1},
                                     {"failed", 1}, {"prompt_tokens", 40}, {"output_tokens", 9},
                                     {"seconds", 0.5}, {"finished", false}}));
  EXPECT_EQ(table[2]["where"], "c.jsonl:1");
  EXPECT_EQ(conversations_line({}), "Conversations: 0 replayed, 0 finished; turns per conversation 0.0 mean\n");
}

}  // namespace
}  // namespace tandem::loadtest
