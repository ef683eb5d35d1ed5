// The test-only link delay's setting and model (see link_delay.h).
#include "transport/link_delay.h"

#include <charconv>
#include <cmath>
#include <set>

#include "common/error.h"

namespace tandem {
namespace {

std::string quoted(const std::optional<std::string>& value) {
  return value ? "'" + *value + "'" : std::string("unset");
}

std::string rank_on_host(size_t rank, const LinkDelayReport& report) {
  return "rank " + std::to_string(rank) + " on " + report.host;
}

}  // namespace

double parse_link_delay_ms(std::string_view text) {
  const auto bad = [&](const std::string& why) {
    return Error(ErrorKind::invalid_argument,
                 std::string(kLinkDelayVariable) + "='" + std::string(text) + "': " + why +
                     "; give the one-way delay in milliseconds, 0 to " +
                     std::to_string(static_cast<int>(kMaxLinkDelayMs)) + " (e.g. 0.1)");
  };
  double ms = 0;
  // from_chars reads no sign, space or unit it is not asked for; the whole
  // text must be the number.
  const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), ms,
                                            std::chars_format::fixed);
  if (text.empty() || error != std::errc() || end != text.data() + text.size())
    throw bad("not a number of milliseconds");
  if (!std::isfinite(ms) || ms < 0) throw bad("the delay cannot be negative");
  if (ms > kMaxLinkDelayMs) throw bad("more than a second is no link to emulate");
  return ms;
}

int collective_rounds(int members) {
  int rounds = 0;
  for (int reach = 1; reach < members; reach *= 2) ++rounds;
  return rounds;
}

LinkMap::LinkMap(std::vector<std::string> hosts) : hosts_(std::move(hosts)) {
  spans_ = std::set<std::string>(hosts_.begin(), hosts_.end()).size() > 1;
}

const std::string& LinkMap::host(int rank) const {
  require(rank >= 0 && rank < size(), ErrorKind::internal, [&] {
    return "LinkMap: rank " + std::to_string(rank) + " is not one of " + std::to_string(size());
  });
  return hosts_[static_cast<size_t>(rank)];
}

bool LinkMap::remote(int a, int b) const { return host(a) != host(b); }

LinkMap LinkMap::subset(std::span<const int> ranks) const {
  std::vector<std::string> hosts;
  hosts.reserve(ranks.size());
  for (int rank : ranks) hosts.push_back(host(rank));
  return LinkMap(std::move(hosts));
}

std::optional<double> agreed_link_delay(std::span<const LinkDelayReport> reports) {
  if (reports.empty()) return std::nullopt;
  const LinkDelayReport& first = reports.front();
  for (size_t rank = 1; rank < reports.size(); ++rank) {
    const LinkDelayReport& other = reports[rank];
    if (other.value != first.value) {
      throw Error(ErrorKind::invalid_argument,
                  std::string(kLinkDelayVariable) + " differs between ranks: " +
                      rank_on_host(0, first) + " has " + quoted(first.value) + ", " +
                      rank_on_host(rank, other) + " has " + quoted(other.value) +
                      "; give every rank the same value (mpirun -x " + kLinkDelayVariable + ")");
    }
  }
  if (!first.value) return std::nullopt;
  const double ms = parse_link_delay_ms(*first.value);
  for (size_t rank = 1; rank < reports.size(); ++rank) {
    if (reports[rank].boot_id != first.boot_id) {
      throw Error(ErrorKind::invalid_argument,
                  std::string(kLinkDelayVariable) + " is for test hosts on one machine (held " +
                      "messages carry that machine's clock), but " + rank_on_host(0, first) +
                      " and " + rank_on_host(rank, reports[rank]) +
                      " run on different machines; unset it");
    }
  }
  return ms / 1000.0;
}

}  // namespace tandem
