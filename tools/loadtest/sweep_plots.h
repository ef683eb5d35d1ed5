// SweepPlots: the SVG charts of a sweep (--plots DIR): output throughput,
// p99 TTFT and p99 TPOT against load, one line per variant with a marker at
// each load measured, and the TTFT and end-to-end latency CDFs (step lines),
// one per run. A variant has one colour in every chart (its place in
// --variants); in the CDFs the load points of a variant differ by dash.
// Every chart's caption gives the request count, the date and the URL.
#pragma once

#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "tools/loadtest/request_record.h"
#include "tools/loadtest/statistics.h"
#include "tools/loadtest/svg_plot.h"

namespace tandem::loadtest {

class SweepPlots {
 public:
  // variants: their names in the order given, which fixes their colours.
  explicit SweepPlots(std::vector<std::string> variants) : variants_(std::move(variants)) {}

  // One run: variant at the load point_index-th load (x = load).
  void add_run(const std::string& variant, size_t point_index, const std::string& point_label,
               double load, const RunSummary& summary, const std::vector<RequestRecord>& records);

  // Writes throughput.svg, p99_ttft.svg, p99_tpot.svg, ttft_cdf.svg and
  // e2e_cdf.svg into dir (created). closed_loop: the load is a concurrency
  // (whole-number ticks), else a rate. caption ends every chart.
  void write(const std::filesystem::path& dir, bool closed_loop, size_t load_points,
             const std::string& caption) const;

 private:
  std::string colour(const std::string& variant) const;

  std::vector<std::string> variants_;
  // Per variant: output throughput, p99 TTFT (ms), p99 TPOT (ms) against load.
  std::map<std::string, std::vector<Series>> sweep_;
  std::vector<Series> ttft_cdfs_, e2e_cdfs_;
};

// "N requests (F failed), YYYY-MM-DD HH:MM UTC, URL": what a chart shows,
// when and of what server. now: seconds since the epoch.
std::string plot_caption(size_t requests, size_t failed, long long now, const std::string& url);

}  // namespace tandem::loadtest
