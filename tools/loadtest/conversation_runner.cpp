#include "tools/loadtest/conversation_runner.h"

#include <algorithm>
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

#include "common/error.h"
#include "tools/loadtest/load_runner.h"

namespace tandem::loadtest {
namespace {

Clock::duration to_duration(double seconds) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double>(seconds));
}

void check_run(const ConversationShape& shape, size_t conversations, const ChatBodySpec& body) {
  require(conversations > 0, ErrorKind::invalid_argument, "no conversations to replay");
  // Checked here, not when a user builds a body: an error thrown inside a
  // user's coroutine would be lost with it.
  require(body.overrides.is_object() || body.overrides.is_null(), ErrorKind::invalid_argument,
          "request overrides must be a JSON object, e.g. {\"ignore_eos\": true}");
  require(shape.concurrency >= 1, ErrorKind::invalid_argument,
          "a conversation run needs concurrency >= 1 (simulated users at once)");
  require(shape.max_turns >= 0, ErrorKind::invalid_argument, "--max-turns must be >= 0");
  require(shape.max_requests > 0 || shape.max_seconds > 0, ErrorKind::invalid_argument,
          "a conversation run needs a bound: set max_requests, max_seconds or both");
  require(shape.max_seconds >= 0 && std::isfinite(shape.max_seconds), ErrorKind::invalid_argument,
          "max_seconds must be a finite number >= 0");
  require(shape.request_timeout_seconds > 0, ErrorKind::invalid_argument,
          "request_timeout_seconds must be > 0");
}

// One run's state, on the one thread that runs io_: no locks.
class Replay {
 public:
  Replay(const Endpoint& endpoint, const std::vector<Conversation>& conversations,
         const ConversationShape& shape, const ChatBodySpec& body,
         std::function<void(size_t, size_t)> progress)
      : endpoint_(endpoint), conversations_(conversations), shape_(shape), body_(body),
        progress_(std::move(progress)) {
    addresses_ = resolve(io_, endpoint_);
  }

  ConversationRun run() {
    start_ = Clock::now();
    users_left_ = shape_.concurrency;
    for (int user = 0; user < shape_.concurrency; ++user)
      asio::co_spawn(io_, simulate_user(), asio::detached);
    if (shape_.max_seconds > 0) asio::co_spawn(io_, watch_deadline(), asio::detached);
    io_.run();
    ConversationRun out;
    out.records.assign(std::make_move_iterator(records_.begin()),
                       std::make_move_iterator(records_.end()));
    out.conversations = std::move(started_);
    out.duration_seconds = std::chrono::duration<double>(end_ - start_).count();
    return out;
  }

 private:
  bool may_send() const {
    return !stopping_ && (shape_.max_requests == 0 || sent_ < shape_.max_requests);
  }

  // One simulated user: conversation after conversation until the run ends.
  asio::awaitable<void> simulate_user() {
    while (may_send()) {
      const size_t which = next_conversation_++ % conversations_.size();
      const size_t slot = started_.size();
      started_.push_back({which, {}, false});
      const Conversation& conversation = conversations_[which];
      size_t turns = conversation.turns.size();
      if (shape_.max_turns > 0) turns = std::min(turns, static_cast<size_t>(shape_.max_turns));
      const int max_tokens = conversation.max_tokens.value_or(body_.max_tokens);

      std::vector<ChatMessage> history = conversation.preamble;
      size_t answered = 0;
      for (size_t t = 0; t < turns && may_send(); ++t) {
        const ConversationTurn& turn = conversation.turns[t];
        history.insert(history.end(), turn.said.begin(), turn.said.end());
        const std::string request = streaming_body(
            chat_request_body(history, max_tokens, nullptr, body_.model, body_.overrides));
        const size_t index = sent_++;
        records_.emplace_back();
        started_[slot].turns.push_back(index);
        auto call = std::make_shared<CompletionCall>(io_.get_executor(), endpoint_, addresses_,
                                                     to_duration(shape_.request_timeout_seconds));
        in_flight_.emplace(index, call);
        records_[index] = co_await call->run(request, start_);
        fail_empty_completion(records_[index]);
        in_flight_.erase(index);
        ++finished_;
        if (progress_) progress_(finished_, shape_.max_requests);
        if (!records_[index].ok) break;  // no reply to build the next turn on
        ++answered;
        const bool recorded = shape_.history == History::recorded && turn.recorded_reply;
        history.push_back({"assistant", recorded ? *turn.recorded_reply : records_[index].text});
      }
      started_[slot].finished = answered == turns;
    }
    if (--users_left_ == 0) {
      end_ = Clock::now();
      finished_all_ = true;
      deadline_.cancel();  // an early finish: the deadline watch has nothing to do
    }
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
  }

  const Endpoint endpoint_;
  const std::vector<Conversation>& conversations_;
  const ConversationShape shape_;
  const ChatBodySpec body_;
  std::function<void(size_t, size_t)> progress_;
  asio::io_context io_;
  asio::ip::tcp::resolver::results_type addresses_;
  asio::steady_timer deadline_{io_};
  Clock::time_point start_;
  Clock::time_point end_;
  std::deque<RequestRecord> records_;  // in send order; a deque keeps them in place as it grows
  std::vector<ConversationRecord> started_;
  std::map<size_t, std::shared_ptr<CompletionCall>> in_flight_;
  size_t next_conversation_ = 0;
  size_t sent_ = 0;
  size_t finished_ = 0;
  int users_left_ = 0;
  bool stopping_ = false;
  bool finished_all_ = false;
};

}  // namespace

History parse_history(const std::string& name) {
  if (name == "live") return History::live;
  if (name == "recorded") return History::recorded;
  throw Error(ErrorKind::invalid_argument,
              "--history must be \"live\" or \"recorded\", not \"" + name + "\"");
}

ConversationRun run_conversations(const Endpoint& endpoint,
                                  const std::vector<Conversation>& conversations,
                                  const ConversationShape& shape, const ChatBodySpec& body,
                                  std::function<void(size_t done, size_t total)> progress) {
  check_run(shape, conversations.size(), body);
  Replay replay(endpoint, conversations, shape, body, std::move(progress));
  return replay.run();
}

std::vector<ConversationTotals> conversation_totals(const ConversationRun& run,
                                                    const std::vector<Conversation>& conversations) {
  std::vector<ConversationTotals> out;
  for (const ConversationRecord& replayed : run.conversations) {
    ConversationTotals totals;
    totals.where = conversations.at(replayed.conversation).where;
    totals.turns = replayed.turns.size();
    totals.finished = replayed.finished;
    double first = 0, last = 0;
    for (size_t n = 0; n < replayed.turns.size(); ++n) {
      const RequestRecord& record = run.records.at(replayed.turns[n]);
      if (n == 0) first = record.start;
      last = std::max(last, record.start + record.latency);
      if (!record.ok) {
        ++totals.failed;
        continue;
      }
      ++totals.completed;
      totals.prompt_tokens += record.prompt_tokens;
      totals.output_tokens += record.output_tokens;
    }
    totals.seconds = replayed.turns.empty() ? 0 : last - first;
    out.push_back(std::move(totals));
  }
  return out;
}

}  // namespace tandem::loadtest
