#include "tools/loadtest/load_runner.h"

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <cmath>
#include <deque>
#include <map>
#include <memory>
#include <random>

#include "common/error.h"

namespace tandem::loadtest {
namespace {

Clock::duration to_duration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

void check_shape(const LoadShape& shape, size_t bodies) {
  require(bodies > 0, ErrorKind::invalid_argument, "no request bodies to send");
  require(shape.max_requests > 0 || shape.max_seconds > 0, ErrorKind::invalid_argument,
          "a load run needs a bound: set max_requests, max_seconds or both");
  require(shape.max_seconds >= 0 && std::isfinite(shape.max_seconds), ErrorKind::invalid_argument,
          "max_seconds must be a finite number >= 0");
  require(shape.request_timeout_seconds > 0, ErrorKind::invalid_argument,
          "request_timeout_seconds must be > 0");
  switch (shape.kind) {
    case LoadShape::closed_loop:
      require(shape.concurrency >= 1, ErrorKind::invalid_argument,
              "a closed-loop run needs concurrency >= 1");
      return;
    case LoadShape::open_loop:
      require(shape.request_rate > 0, ErrorKind::invalid_argument,
              "an open-loop run needs request_rate > 0 (infinity sends all at once)");
      require(shape.burstiness > 0 && std::isfinite(shape.burstiness), ErrorKind::invalid_argument,
              "burstiness must be a finite number > 0 (1 = Poisson arrivals)");
      require(shape.concurrency >= 0, ErrorKind::invalid_argument,
              "concurrency must be >= 0 in an open loop (0 = no cap)");
      require(std::isfinite(shape.request_rate) || shape.max_requests > 0 || shape.concurrency > 0,
              ErrorKind::invalid_argument,
              "an infinite request rate needs max_requests or a concurrency cap: otherwise it "
              "sends without end");
      return;
  }
}

// One run's state. Everything happens on the one thread that runs io_, so
// nothing here needs a lock.
class LoadRun {
 public:
  LoadRun(const Endpoint& endpoint, const std::vector<std::string>& bodies, const LoadShape& shape,
          std::function<void(size_t, size_t)> progress)
      : endpoint_(endpoint), shape_(shape), progress_(std::move(progress)) {
    bodies_.reserve(bodies.size());
    for (const std::string& body : bodies) bodies_.push_back(streaming_body(body));
    addresses_ = resolve(io_, endpoint_);
  }

  std::vector<RequestRecord> run(double& duration_seconds) {
    start_ = Clock::now();
    asio::co_spawn(io_, send_all(), asio::detached);
    if (shape_.max_seconds > 0) asio::co_spawn(io_, watch_deadline(), asio::detached);
    io_.run();
    duration_seconds = std::chrono::duration<double>(end_ - start_).count();
    return {std::make_move_iterator(records_.begin()), std::make_move_iterator(records_.end())};
  }

 private:
  bool may_send() const {
    return !stopping_ && (shape_.max_requests == 0 || sent_ < shape_.max_requests);
  }
  size_t in_flight_cap() const {
    return static_cast<size_t>(shape_.concurrency);  // 0 in an open loop: no cap
  }

  // Sends on the shape's schedule, then waits for the last answers.
  asio::awaitable<void> send_all() {
    std::mt19937_64 rng(shape_.seed);
    std::gamma_distribution<double> gap(shape_.burstiness,
                                        1.0 / (shape_.request_rate * shape_.burstiness));
    const bool scheduled = shape_.kind == LoadShape::open_loop && std::isfinite(shape_.request_rate);
    Clock::time_point arrival = start_;  // of the next open-loop request; the first at once
    while (may_send()) {
      if (scheduled) co_await wait_until(arrival);
      while (!stopping_ && in_flight_cap() > 0 && in_flight_.size() >= in_flight_cap())
        co_await wait_for_news();
      if (stopping_) break;
      launch();
      // Arrivals keep their own clock: a cap delays sends, not the schedule.
      if (scheduled) arrival += to_duration(gap(rng));
    }
    while (!in_flight_.empty()) co_await wait_for_news();
    end_ = Clock::now();
    finished_all_ = true;
    deadline_.cancel();  // an early finish: the deadline watch has nothing to do
  }

  void launch() {
    const size_t index = sent_++;
    records_.emplace_back();
    auto call = std::make_shared<CompletionCall>(io_.get_executor(), endpoint_, addresses_,
                                                 to_duration(shape_.request_timeout_seconds));
    in_flight_.emplace(index, call);
    asio::co_spawn(io_, run_one(call, index), asio::detached);
  }

  asio::awaitable<void> run_one(std::shared_ptr<CompletionCall> call, size_t index) {
    records_[index] = co_await call->run(bodies_[index % bodies_.size()], start_);
    fail_empty_completion(records_[index]);
    in_flight_.erase(index);
    ++finished_;
    if (progress_) progress_(finished_, shape_.max_requests);
    news_.cancel();
  }

  // At max_seconds: send no more, cancel what is in flight.
  asio::awaitable<void> watch_deadline() {
    if (finished_all_) co_return;
    deadline_.expires_at(start_ + to_duration(shape_.max_seconds));
    boost::system::error_code ec;
    co_await deadline_.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return;  // cancelled: the run ended first
    stopping_ = true;
    for (auto& [index, call] : in_flight_) call->cancel(kCancelledAtEnd);
    news_.cancel();
  }

  // news_ works as a condition variable: a request's end or the deadline
  // cancels its wait. No wake-up is lost, as one thread checks the state and
  // starts the wait without anything running in between.
  asio::awaitable<void> wait_for_news() {
    news_.expires_at(Clock::time_point::max());
    boost::system::error_code ignored;
    co_await news_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
  }

  asio::awaitable<void> wait_until(Clock::time_point when) {
    while (!stopping_ && Clock::now() < when) {
      news_.expires_at(when);
      boost::system::error_code ignored;
      co_await news_.async_wait(asio::redirect_error(asio::use_awaitable, ignored));
    }
  }

  const Endpoint endpoint_;
  const LoadShape shape_;
  std::function<void(size_t, size_t)> progress_;
  std::vector<std::string> bodies_;
  asio::io_context io_;
  asio::ip::tcp::resolver::results_type addresses_;
  asio::steady_timer news_{io_};
  asio::steady_timer deadline_{io_};
  Clock::time_point start_;
  Clock::time_point end_;
  std::deque<RequestRecord> records_;  // in send order; a deque keeps them in place as it grows
  std::map<size_t, std::shared_ptr<CompletionCall>> in_flight_;
  size_t sent_ = 0;
  size_t finished_ = 0;
  bool stopping_ = false;      // the deadline passed: send no more
  bool finished_all_ = false;  // every request sent has ended
};

}  // namespace

std::vector<RequestRecord> run_load(const Endpoint& endpoint,
                                    const std::vector<std::string>& request_bodies,
                                    const LoadShape& shape,
                                    std::function<void(size_t done, size_t total)> progress,
                                    double& duration_seconds) {
  check_shape(shape, request_bodies.size());
  LoadRun run(endpoint, request_bodies, shape, std::move(progress));
  return run.run(duration_seconds);
}

}  // namespace tandem::loadtest
