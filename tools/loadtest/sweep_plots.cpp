// The sweep's SVG charts: see sweep_plots.h.
#include "tools/loadtest/sweep_plots.h"

#include <algorithm>
#include <ctime>
#include <fstream>

#include "common/error.h"

namespace tandem::loadtest {
namespace {

// The dash of a variant's n-th load point in a CDF chart: solid first.
constexpr const char* kDashes[] = {"", "6 3", "2 3", "10 3 2 3", "1 6"};

std::vector<double> ok_ms(const std::vector<RequestRecord>& records, bool ttft) {
  std::vector<double> out;
  for (const RequestRecord& r : records)
    if (r.ok) out.push_back(1e3 * (ttft ? r.ttft : r.latency));
  return out;
}

void write_file(const std::filesystem::path& path, const std::string& text) {
  std::ofstream out(path);
  require(out.good(), ErrorKind::not_found, "cannot write " + path.string());
  out << text;
}

}  // namespace

std::string SweepPlots::colour(const std::string& variant) const {
  const auto at = std::find(variants_.begin(), variants_.end(), variant);
  return palette_colour(static_cast<size_t>(at - variants_.begin()));
}

void SweepPlots::add_run(const std::string& variant, size_t point_index,
                         const std::string& point_label, double load, const RunSummary& summary,
                         const std::vector<RequestRecord>& records) {
  std::vector<Series>& series = sweep_[variant];
  if (series.empty()) series.assign(3, Series{variant, {}, {}, colour(variant), ""});
  const double y[3] = {summary.output_throughput, 1e3 * summary.ttft.p99, 1e3 * summary.tpot.p99};
  for (size_t i = 0; i < 3; ++i) {
    series[i].x.push_back(load);
    series[i].y.push_back(y[i]);
  }
  const std::string dash = kDashes[point_index % std::size(kDashes)];
  const std::string name = variant + ", " + point_label;
  for (bool ttft : {true, false}) {
    Series cdf = cdf_series(name, ok_ms(records, ttft));
    cdf.colour = colour(variant);
    cdf.dash = dash;
    (ttft ? ttft_cdfs_ : e2e_cdfs_).push_back(std::move(cdf));
  }
}

void SweepPlots::write(const std::filesystem::path& dir, bool closed_loop, size_t load_points,
                       const std::string& caption) const {
  std::filesystem::create_directories(dir);
  const char* names[3] = {"output throughput (tokens/s)", "p99 TTFT (ms)", "p99 TPOT (ms)"};
  const char* files[3] = {"throughput.svg", "p99_ttft.svg", "p99_tpot.svg"};
  for (size_t i = 0; i < 3; ++i) {
    Chart chart;
    chart.title = std::string(names[i]) + " against load";
    chart.x_label = closed_loop ? "concurrency (requests in flight)" : "offered rate (requests/s)";
    chart.y_label = names[i];
    chart.log_x = load_points > 2;
    chart.integer_x = closed_loop;
    chart.markers = true;
    chart.caption = caption;
    for (const std::string& variant : variants_)
      if (auto found = sweep_.find(variant); found != sweep_.end())
        chart.series.push_back(found->second[i]);
    write_file(dir / files[i], render_svg(chart));
  }
  auto cdf_chart = [&](std::string title, std::string x_label, std::vector<Series> series) {
    Chart chart;
    chart.title = std::move(title);
    chart.x_label = std::move(x_label);
    chart.y_label = "fraction of requests";
    chart.series = std::move(series);
    chart.step = true;
    chart.caption = caption;
    return chart;
  };
  write_file(dir / "ttft_cdf.svg",
             render_svg(cdf_chart("TTFT distribution", "TTFT (ms)", ttft_cdfs_)));
  write_file(dir / "e2e_cdf.svg", render_svg(cdf_chart("End-to-end latency distribution",
                                                       "latency (ms)", e2e_cdfs_)));
}

std::string plot_caption(size_t requests, size_t failed, long long now, const std::string& url) {
  const auto seconds = static_cast<std::time_t>(now);
  std::tm utc{};
  gmtime_r(&seconds, &utc);
  char date[32];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M UTC", &utc);
  return std::to_string(requests) + " requests (" + std::to_string(failed) + " failed), " + date +
         ", " + url;
}

}  // namespace tandem::loadtest
