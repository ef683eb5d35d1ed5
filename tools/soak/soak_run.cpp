#include "tools/soak/soak_run.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cstdio>
#include <memory>
#include <random>

#include "common/error.h"
#include "tools/loadtest/plain_request.h"
#include "tools/loadtest/server_metrics_scrape.h"
#include "tools/loadtest/stream_recorder.h"
#include "tools/soak/process_memory.h"

namespace tandem::soak {
namespace {

namespace asio = boost::asio;
using loadtest::Clock;

Clock::duration from_seconds(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

// The soak's state; every member is touched only from the io_context's one thread.
class Soak {
 public:
  Soak(const SoakOptions& options, const std::function<void(const std::string&)>& progress)
      : options_(options), progress_(progress), random_(options.seed) {
    addresses_ = loadtest::resolve(context_, options.endpoint);
    for (int pid : options.pids) result_.processes.push_back({pid, process_name(pid), {}});
    int total = 0;
    for (size_t i = 0; i < kAllKinds.size(); ++i)
      if (kAllKinds[i] != Kind::burst) total += options.weights[i];
    require(total > 0, ErrorKind::invalid_argument, "every request kind has weight 0: nothing to send");
    pick_kind_ = std::discrete_distribution<size_t>(options.weights.begin(), options.weights.end());
  }

  SoakResult run() {
    start_ = Clock::now();
    traffic_end_ = start_ + from_seconds(options_.duration_seconds);
    asio::co_spawn(context_, main_loop(), rethrow);
    context_.run();
    return std::move(result_);
  }

 private:
  static void rethrow(std::exception_ptr error) {
    if (error) std::rethrow_exception(error);
  }
  double now_seconds() const { return std::chrono::duration<double>(Clock::now() - start_).count(); }

  asio::awaitable<void> sleep_until(Clock::time_point when) {
    asio::steady_timer timer(context_, when);
    co_await timer.async_wait(asio::use_awaitable);
  }

  asio::awaitable<void> main_loop() {
    asio::co_spawn(context_, health_loop(), rethrow);
    asio::co_spawn(context_, rss_loop(), rethrow);
    for (int client = 0; client < options_.clients; ++client) {
      ++in_flight_;
      asio::co_spawn(context_, client_loop(), rethrow);
    }
    if (options_.burst_every_seconds > 0 && options_.burst_size > 0)
      asio::co_spawn(context_, burst_loop(), rethrow);
    co_await sleep_until(traffic_end_);
    // Answers still coming are each bounded by the client timeout.
    const auto last_answer = Clock::now() + from_seconds(options_.client_timeout_seconds + 5);
    while (in_flight_ > 0 && Clock::now() < last_answer)
      co_await sleep_until(Clock::now() + std::chrono::milliseconds(50));
    traffic_over_ = true;
    result_.traffic_seconds = now_seconds();
    co_await drain();
    sample_rss();  // the end of the series: the server idle again
    watching_over_ = true;
  }

  asio::awaitable<void> client_loop() {
    while (Clock::now() < traffic_end_ && sent_ < options_.max_requests) {
      const Kind kind = kAllKinds[pick_kind_(random_)];
      if (kind == Kind::burst) continue;  // weight 0 by construction; bursts have their own loop
      Request request = make_request(kind, options_.mix, random_);  // named: see send_and_leave
      const bool turned_away = co_await send(std::move(request));
      // Turned away (429, a 5xx but 504, or no answer at all): pause as a client
      // honouring Retry-After would, or the clients would spin on instant refusals.
      if (turned_away)
        co_await sleep_until(Clock::now() + from_seconds(std::uniform_real_distribution<double>(0.1, 0.5)(random_)));
    }
    --in_flight_;
  }

  asio::awaitable<void> burst_loop() {
    for (auto next = start_ + from_seconds(options_.burst_every_seconds); next < traffic_end_;
         next += from_seconds(options_.burst_every_seconds)) {
      co_await sleep_until(next);
      for (int i = 0; i < options_.burst_size && sent_ < options_.max_requests; ++i) {
        ++in_flight_;
        asio::co_spawn(context_, send_and_leave(make_request(Kind::burst, options_.mix, random_)), rethrow);
      }
    }
  }

  // Coroutine arguments are taken by value and temporaries kept out of
  // co_await expressions: the coroutine outlives the caller's statement.
  asio::awaitable<void> send_and_leave(Request request) {
    co_await send(std::move(request));
    --in_flight_;
  }

  // One request of the mix, its answer judged and counted; true when the
  // server turned it away (429, or a 5xx other than the deadline's 504) or
  // did not answer.
  asio::awaitable<bool> send(Request request) {
    ++sent_;
    loadtest::RequestRecord record;
    if (request.method == "POST") {
      loadtest::Endpoint endpoint = options_.endpoint;
      endpoint.path = request.path;
      auto call = std::make_shared<loadtest::CompletionCall>(
          context_.get_executor(), endpoint, addresses_, from_seconds(options_.client_timeout_seconds));
      asio::steady_timer cut(context_);
      if (request.disconnect_after > 0) {
        cut.expires_after(from_seconds(request.disconnect_after));
        cut.async_wait([call](const boost::system::error_code& ec) {
          if (!ec) call->cancel(kDisconnectedOnPurpose);
        });
      }
      record = co_await call->run(request.body, start_);
      cut.cancel();
    } else {
      const loadtest::PlainRequest plain{request.method, request.path, request.body};
      const loadtest::PlainResponse response = co_await loadtest::async_plain_request(
          context_.get_executor(), options_.endpoint, plain, from_seconds(options_.client_timeout_seconds));
      record.status = response.status;
      record.ok = response.status == 200;
      const auto body = nlohmann::json::parse(response.body, nullptr, false);
      record.error = response.status == 0 ? response.error : loadtest::error_message_in(body);
    }
    const Outcome outcome = tally(request.kind, record);
    const bool refused = record.status >= 500 && !outcome.timed_out;  // a 504 took its time already
    co_return outcome.overloaded || refused || (record.status == 0 && !outcome.disconnected);
  }

  Outcome tally(Kind kind, const loadtest::RequestRecord& record) {
    KindTally& counts = result_.kinds[static_cast<size_t>(kind)];
    const Outcome outcome = classify(kind, record);
    ++counts.sent;
    ++counts.statuses[record.status];
    ++counts.classes[status_class(record.status)];
    counts.timed_out += outcome.timed_out;
    counts.overloaded += outcome.overloaded;
    counts.disconnected += outcome.disconnected;
    if (outcome.expected) {
      ++counts.expected;
      return outcome;
    }
    ++counts.unexpected;
    if (record.status >= 500) ++counts.unexpected_5xx;
    ++result_.unexpected_total;
    if (result_.unexpected.size() < kMaxUnexpectedKept)
      result_.unexpected.push_back({kind, record.status, now_seconds(), outcome.why});
    return outcome;
  }

  asio::awaitable<void> health_loop() {
    auto next = Clock::now();
    while (!watching_over_) {
      const double at = now_seconds();
      const loadtest::PlainRequest probe{"GET", "/health", ""};
      const loadtest::PlainResponse response = co_await loadtest::async_plain_request(
          context_.get_executor(), options_.endpoint, probe, from_seconds(options_.health_timeout_seconds));
      result_.health.push_back({at, response.status, response.seconds});
      if (++probes_ % 10 == 0) report_progress();
      next += from_seconds(options_.health_every_seconds);
      if (next < Clock::now()) next = Clock::now();  // a slow probe: no catch-up storm
      co_await sleep_until(next);
    }
  }

  asio::awaitable<void> rss_loop() {
    auto next = Clock::now();
    while (!watching_over_) {
      if (!traffic_over_) sample_rss();  // after the traffic, main_loop takes the last one
      next += from_seconds(options_.rss_every_seconds);
      co_await sleep_until(next);
    }
  }

  void sample_rss() {
    const double at = now_seconds();
    for (ProcessSeries& series : result_.processes)
      if (const auto kb = read_rss_kb(series.pid)) series.samples.push_back({at, *kb});
  }

  // Polls /metrics until every idle series is 0, for at most drain_seconds.
  asio::awaitable<void> drain() {
    const auto drain_start = Clock::now();
    const auto give_up = drain_start + from_seconds(options_.drain_seconds);
    DrainState& state = result_.drain;
    for (;;) {
      const loadtest::PlainRequest scrape{"GET", "/metrics", ""};
      const loadtest::PlainResponse response = co_await loadtest::async_plain_request(
          context_.get_executor(), options_.endpoint, scrape, std::chrono::seconds(10));
      state.seconds = std::chrono::duration<double>(Clock::now() - drain_start).count();
      if (response.status == 200) {
        state.error.clear();
        try {
          const auto samples = loadtest::parse_prometheus(response.body);
          state.idle = true;
          for (const char* series : kIdleSeries) {
            const auto found = samples.find(series);
            if (found == samples.end()) {
              state.idle = false;
              state.error = std::string("/metrics has no ") + series;
              continue;
            }
            state.last[series] = found->second;
            if (found->second != 0) state.idle = false;
          }
        } catch (const Error& error) {
          state.idle = false;
          state.error = error.what();
        }
      } else {
        state.idle = false;
        state.error = "GET /metrics: " + (response.status == 0 ? response.error
                                                                : "HTTP " + std::to_string(response.status));
      }
      if (state.idle || Clock::now() >= give_up) co_return;
      co_await sleep_until(Clock::now() + std::chrono::milliseconds(250));
    }
  }

  void report_progress() {
    if (!progress_) return;
    size_t answered = 0;
    for (const KindTally& counts : result_.kinds) answered += counts.sent;
    double worst = 0;
    for (const HealthProbe& probe : result_.health) worst = std::max(worst, probe.seconds);
    long rss_kb = 0;
    for (const ProcessSeries& series : result_.processes)
      if (!series.samples.empty()) rss_kb += series.samples.back().kb;
    char line[256];
    std::snprintf(line, sizeof line,
                  "%5.0f s: %zu answered, %zu unexpected, /health worst %.3f s, RSS %.1f MiB",
                  now_seconds(), answered, result_.unexpected_total, worst, rss_kb / 1024.0);
    progress_(line);
  }

  const SoakOptions& options_;
  const std::function<void(const std::string&)>& progress_;
  asio::io_context context_;
  asio::ip::tcp::resolver::results_type addresses_;
  std::mt19937_64 random_;
  std::discrete_distribution<size_t> pick_kind_;
  Clock::time_point start_, traffic_end_;
  size_t sent_ = 0, in_flight_ = 0, probes_ = 0;
  bool traffic_over_ = false, watching_over_ = false;
  SoakResult result_;
};

}  // namespace

std::array<int, kAllKinds.size()> default_weights() {
  std::array<int, kAllKinds.size()> weights{};
  auto set = [&](Kind kind, int weight) { weights[static_cast<size_t>(kind)] = weight; };
  set(Kind::completion, 3);
  set(Kind::completion_stream, 3);
  set(Kind::chat, 2);
  set(Kind::chat_stream, 2);
  set(Kind::disconnect, 2);
  set(Kind::bad_json, 1);
  set(Kind::bad_parameter, 1);
  set(Kind::unknown_route, 1);
  set(Kind::timeout, 1);
  return weights;
}

SoakResult run_soak(const SoakOptions& options, const std::function<void(const std::string&)>& progress) {
  require(options.duration_seconds > 0, ErrorKind::invalid_argument, "the soak needs a duration > 0 s");
  require(options.clients >= 1, ErrorKind::invalid_argument, "the soak needs at least one client");
  require(!options.mix.prompts.empty(), ErrorKind::invalid_argument, "the soak needs at least one prompt");
  SoakOptions checked = options;
  checked.weights[static_cast<size_t>(Kind::burst)] = 0;  // bursts come from their own loop
  Soak soak(checked, progress);
  return soak.run();
}

}  // namespace tandem::soak
