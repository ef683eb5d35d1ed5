// The TEST-ONLY link delay's setting and model: which ranks are on other
// hosts and how many one-way delays each operation between them costs.
//
// TANDEM_TEST_LINK_DELAY_MS (milliseconds, 0 to 1000, e.g. 0.1) makes the
// world communicator hold every message between ranks on DIFFERENT hosts
// for that one-way delay (DelayedCommunicator, delayed_communicator.h). It
// exists because the testbed's kernel has no `tc qdisc ... netem` to delay
// a link; it emulates an interconnect's latency for the latency benchmark
// (docs/benchmarks.md, "Across hosts: link latency") and is never for
// measuring a real link. Unset means no delay and no wrapper at all.
//
// The model, kept simple on purpose:
//   * a rank's host is its host name (gethostname: a testbed host's own
//     UTS name); ranks with the same name share memory and are never held;
//   * a point-to-point message to another host arrives one delay after it
//     was sent;
//   * a collective over members on more than one host costs
//     collective_rounds(p) = ceil(log2(p)) delays: the rounds of recursive
//     doubling (all-reduce, all-gather) or of a binomial tree (gather,
//     broadcast) that MPI uses for small messages; 1 for p = 2. Bandwidth
//     is not modelled (a ring all-reduce of a large buffer needs 2(p - 1)
//     rounds; Tandem's activations are small).
#pragma once

#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace tandem {

inline constexpr const char* kLinkDelayVariable = "TANDEM_TEST_LINK_DELAY_MS";
inline constexpr double kMaxLinkDelayMs = 1000;

// The variable's value in milliseconds: a plain decimal number from 0 to
// kMaxLinkDelayMs. Anything else (empty, a unit, negative, nan, too large)
// throws Error(invalid_argument) naming the variable and the value.
double parse_link_delay_ms(std::string_view text);

// One-way delays a collective over `members` ranks on several hosts costs:
// ceil(log2(members)); 0 for one member.
int collective_rounds(int members);

// Each rank's host, in the ranks' order.
class LinkMap {
 public:
  explicit LinkMap(std::vector<std::string> hosts);
  int size() const { return static_cast<int>(hosts_.size()); }
  const std::string& host(int rank) const;
  // Ranks a and b are on different hosts.
  bool remote(int a, int b) const;
  // The ranks are on more than one host (a collective crosses a link).
  bool spans_hosts() const { return spans_; }
  // The map of a sub-communicator over `ranks` (numbered 0.. in that order).
  LinkMap subset(std::span<const int> ranks) const;

 private:
  std::vector<std::string> hosts_;
  bool spans_ = false;
};

// What one rank reports at world creation: its host, its machine's boot id
// (the held messages carry send times read from one clock, so every rank
// must be on one machine) and its variable's raw value (nullopt: unset).
struct LinkDelayReport {
  std::string host;
  std::string boot_id;
  std::optional<std::string> value;
};

// The one-way delay in seconds every rank agreed on, or nullopt when no
// rank set the variable. Every rank calls it with the same reports and
// decides alike. Throws Error(invalid_argument) when the ranks' values
// differ (the variable did not reach every rank: mpirun -x), when a value
// is bad, or when the ranks are on different machines (boot ids differ).
std::optional<double> agreed_link_delay(std::span<const LinkDelayReport> reports);

}  // namespace tandem
