// DelayedCommunicator, the test-only link delay (see delayed_communicator.h).
#include "transport/delayed_communicator.h"

#include <sys/prctl.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <fstream>
#include <iostream>
#include <thread>

#include "common/error.h"
#include "common/log_line.h"
#include "transport/wire_format.h"

namespace tandem {
namespace {

using Clock = std::chrono::steady_clock;
constexpr size_t kStampBytes = sizeof(int64_t);
constexpr double kForever = 1e9;  // seconds, as MpiCommunicator reads timeouts

// Waits until `due`: sleeps while it is far, then yields for the last
// stretch, because a sleep overshoots by the timer slack (50 µs by
// default), half of the smallest delay the benchmark emulates.
void hold_until(Clock::time_point due) {
  constexpr auto kYieldWindow = std::chrono::microseconds(100);
  const Clock::time_point now = Clock::now();
  if (due - now > kYieldWindow) std::this_thread::sleep_until(due - kYieldWindow);
  while (Clock::now() < due) std::this_thread::yield();
}

int64_t ticks(Clock::time_point time) { return time.time_since_epoch().count(); }

std::string this_host() {
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  return host;
}

std::string this_boot_id() {
  std::string boot_id;
  std::ifstream("/proc/sys/kernel/random/boot_id") >> boot_id;
  return boot_id;
}

// Every rank's report, on every rank: each rank in turn broadcasts its own.
std::vector<LinkDelayReport> exchange_reports(Communicator& world) {
  const char* value = std::getenv(kLinkDelayVariable);
  std::vector<LinkDelayReport> reports;
  for (int root = 0; root < world.size(); ++root) {
    Bytes bytes;
    if (world.rank() == root) {
      wire::ByteWriter writer;
      writer.string(this_host());
      writer.string(this_boot_id());
      writer.boolean(value != nullptr);
      writer.string(value != nullptr ? value : "");
      bytes = writer.take();
    }
    world.broadcast(bytes, root);
    wire::ByteReader reader(bytes, "link delay report");
    LinkDelayReport report;
    report.host = reader.string("host");
    report.boot_id = reader.string("boot_id");
    const bool set = reader.boolean("set");
    std::string text = reader.string("value");
    if (set) report.value = std::move(text);
    reader.expect_end();
    reports.push_back(std::move(report));
  }
  return reports;
}

}  // namespace

DelayedCommunicator::DelayedCommunicator(std::unique_ptr<Communicator> inner, LinkMap links,
                                         double one_way_seconds)
    : inner_(std::move(inner)),
      links_(std::move(links)),
      one_way_seconds_(one_way_seconds),
      one_way_(std::chrono::duration_cast<Clock::duration>(
          std::chrono::duration<double>(one_way_seconds))) {
  require(inner_ != nullptr && links_.size() == inner_->size(), ErrorKind::internal,
          "DelayedCommunicator: the link map must name the host of every rank");
  require(one_way_seconds >= 0, ErrorKind::internal, "DelayedCommunicator: a negative delay");
}

void DelayedCommunicator::hold_collective(bool receives) {
  if (!receives || !links_.spans_hosts()) return;
  const int rounds = collective_rounds(size());
  modelled_seconds_ += rounds * one_way_seconds_;
  hold_until(Clock::now() + rounds * one_way_);
}

void DelayedCommunicator::all_reduce_sum(std::span<float> data) {
  inner_->all_reduce_sum(data);
  hold_collective(true);
}

void DelayedCommunicator::all_gather(std::span<const float> mine, std::span<float> all) {
  inner_->all_gather(mine, all);
  hold_collective(true);
}

void DelayedCommunicator::gather(std::span<const float> mine, std::span<float> all, int root) {
  inner_->gather(mine, all, root);
  hold_collective(rank() == root);
}

void DelayedCommunicator::broadcast(Bytes& bytes, int root) {
  inner_->broadcast(bytes, root);
  hold_collective(rank() != root);
}

void DelayedCommunicator::send(std::span<const std::byte> bytes, int to, int tag) {
  if (!links_.remote(rank(), to)) return inner_->send(bytes, to, tag);
  inner_->send(stamped(bytes), to, tag);
}

bool DelayedCommunicator::send_within(std::span<const std::byte> bytes, int to, int tag,
                                      double timeout_seconds) {
  if (!links_.remote(rank(), to)) return inner_->send_within(bytes, to, tag, timeout_seconds);
  return inner_->send_within(stamped(bytes), to, tag, timeout_seconds);
}

Bytes DelayedCommunicator::stamped(std::span<const std::byte> bytes) {
  Bytes message(kStampBytes + bytes.size());
  const int64_t sent = ticks(Clock::now());
  std::memcpy(message.data(), &sent, kStampBytes);
  if (!bytes.empty()) std::memcpy(message.data() + kStampBytes, bytes.data(), bytes.size());
  return message;
}

std::optional<Bytes> DelayedCommunicator::receive(int from, int tag, double timeout_seconds) {
  if (!links_.remote(rank(), from)) return inner_->receive(from, tag, timeout_seconds);
  const bool forever = !(timeout_seconds >= 0) || timeout_seconds > kForever;
  const Clock::time_point deadline =
      Clock::now() + std::chrono::duration_cast<Clock::duration>(
                         std::chrono::duration<double>(forever ? 0.0 : timeout_seconds));
  const auto key = std::make_pair(from, tag);
  auto held = held_.find(key);
  if (held == held_.end()) {
    std::optional<Bytes> stamped = inner_->receive(from, tag, timeout_seconds);
    if (!stamped) return std::nullopt;
    require(stamped->size() >= kStampBytes, ErrorKind::internal, [&] {
      return "a message from rank " + std::to_string(from) +
             " has no link delay stamp (does every rank have " + kLinkDelayVariable + "?)";
    });
    int64_t sent = 0;
    std::memcpy(&sent, stamped->data(), kStampBytes);
    Held message{Clock::time_point(Clock::duration(sent)) + one_way_,
                 Bytes(stamped->begin() + kStampBytes, stamped->end())};
    held = held_.emplace(key, std::move(message)).first;
  }
  if (!forever && held->second.due > deadline) {
    hold_until(deadline);
    return std::nullopt;  // still on the wire: the next receive gets it
  }
  hold_until(held->second.due);
  Bytes payload = std::move(held->second.payload);
  held_.erase(held);
  modelled_seconds_ += one_way_seconds_;
  return payload;
}

std::unique_ptr<Communicator> DelayedCommunicator::split(std::span<const int> ranks) {
  std::unique_ptr<Communicator> sub = inner_->split(ranks);
  if (sub == nullptr) return nullptr;
  return std::make_unique<DelayedCommunicator>(std::move(sub), links_.subset(ranks),
                                               one_way_seconds_);
}

void DelayedCommunicator::abort_job(int exit_code) {
  inner_->abort_job(exit_code);
  std::_Exit(exit_code);  // not reached: abort_job does not return
}

std::unique_ptr<Communicator> with_test_link_delay(std::unique_ptr<Communicator> world) {
  const std::vector<LinkDelayReport> reports = exchange_reports(*world);
  const std::optional<double> delay = agreed_link_delay(reports);
  if (!delay || *delay <= 0) return world;
  std::vector<std::string> hosts;
  for (const LinkDelayReport& report : reports) hosts.push_back(report.host);
  LinkMap links(std::move(hosts));
  if (world->rank() == 0) {
    std::string map;
    for (int rank = 0; rank < links.size(); ++rank)
      map += (rank > 0 ? ", " : "") + std::to_string(rank) + "@" + links.host(rank);
    log_line(std::cerr, "TEST-ONLY link delay active (", kLinkDelayVariable, "): messages ",
             "between ranks on different hosts are held ", *delay * 1000, " ms one way; ",
             "never benchmark a real interconnect with it; ranks: ", map);
  }
  // Threads started from here on (the engine's) inherit a 1 ns timer slack,
  // so the holds' sleeps end when asked rather than up to 50 µs later.
  prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
  return std::make_unique<DelayedCommunicator>(std::move(world), std::move(links), *delay);
}

}  // namespace tandem
