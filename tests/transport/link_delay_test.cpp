// The test-only link delay's setting and model (transport/link_delay.h):
// which values are accepted, which peers are remote, how many delays a
// collective costs, and what ranks that disagree are told. The holding
// itself is a matter of time and is not unit-tested (the MPI suite checks
// what the model charges; docs/benchmarks.md has what it does to a job).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <cstdlib>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "transport/link_delay.h"
#include "transport/world_communicator.h"

namespace tandem {
namespace {

using ::testing::AllOf;
using ::testing::HasSubstr;

std::string error_of(const std::string& text) {
  try {
    parse_link_delay_ms(text);
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::invalid_argument);
    return error.what();
  }
  return "<accepted>";
}

TEST(LinkDelay, ParsesMilliseconds) {
  EXPECT_DOUBLE_EQ(parse_link_delay_ms("0"), 0.0);
  EXPECT_DOUBLE_EQ(parse_link_delay_ms("0.1"), 0.1);
  EXPECT_DOUBLE_EQ(parse_link_delay_ms("5"), 5.0);
  EXPECT_DOUBLE_EQ(parse_link_delay_ms("1000"), 1000.0);
}

TEST(LinkDelay, BadValuesAreRejectedNamingTheVariable) {
  for (const std::string text : {"", "abc", "1ms", " 1", "1 ", "-1", "+1", "1e-3", "nan", "inf",
                                 "1000.5", "1,5"}) {
    EXPECT_THAT(error_of(text),
                AllOf(HasSubstr("TANDEM_TEST_LINK_DELAY_MS='" + text + "'"),
                      HasSubstr("milliseconds")))
        << text;
  }
  EXPECT_THAT(error_of("-1"), HasSubstr("negative"));
  EXPECT_THAT(error_of("2000"), HasSubstr("more than a second"));
}

TEST(LinkDelay, CollectiveRoundsAreCeilLog2) {
  EXPECT_EQ(collective_rounds(1), 0);
  EXPECT_EQ(collective_rounds(2), 1);
  EXPECT_EQ(collective_rounds(3), 2);
  EXPECT_EQ(collective_rounds(4), 2);
  EXPECT_EQ(collective_rounds(5), 3);
  EXPECT_EQ(collective_rounds(8), 3);
  EXPECT_EQ(collective_rounds(9), 4);
}

TEST(LinkDelay, PeersOnOtherHostsAreRemote) {
  // The benchmark's layout: coordinator, draft, and the TP-2 target apart,
  // plus a fifth rank sharing the coordinator's host.
  const LinkMap links({"h1", "h2", "h3", "h4", "h1"});
  EXPECT_TRUE(links.spans_hosts());
  EXPECT_FALSE(links.remote(0, 0));
  EXPECT_FALSE(links.remote(0, 4));
  EXPECT_TRUE(links.remote(0, 1));
  EXPECT_TRUE(links.remote(2, 3));
  EXPECT_THROW(links.remote(0, 5), Error);
}

TEST(LinkDelay, SubsetsKeepTheirMembersHosts) {
  const LinkMap links({"h1", "h2", "h3", "h4", "h1"});
  const int target[] = {2, 3};
  const LinkMap tp = links.subset(target);
  ASSERT_EQ(tp.size(), 2);
  EXPECT_EQ(tp.host(0), "h3");
  EXPECT_TRUE(tp.remote(0, 1));
  EXPECT_TRUE(tp.spans_hosts());
  const int together[] = {4, 0};  // renumbered in the order given
  const LinkMap same = links.subset(together);
  EXPECT_EQ(same.host(0), "h1");
  EXPECT_FALSE(same.remote(0, 1));
  EXPECT_FALSE(same.spans_hosts());
}

TEST(LinkDelay, RanksAgreeOnOneDelay) {
  std::vector<LinkDelayReport> reports = {{"h1", "boot", "1.5"}, {"h2", "boot", "1.5"}};
  EXPECT_EQ(agreed_link_delay(reports), std::optional<double>(0.0015));
  reports = {{"h1", "boot", std::nullopt}, {"h2", "other", std::nullopt}};
  EXPECT_EQ(agreed_link_delay(reports), std::nullopt);  // unset: no checks at all
}

TEST(LinkDelay, RanksThatDisagreeAreToldWhichAndHow) {
  const std::vector<LinkDelayReport> reports = {
      {"h1", "boot", "1"}, {"h2", "boot", "1"}, {"h3", "boot", std::nullopt}};
  try {
    agreed_link_delay(reports);
    FAIL() << "ranks that disagree were accepted";
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::invalid_argument);
    EXPECT_THAT(error.what(), AllOf(HasSubstr("rank 0 on h1 has '1'"),
                                    HasSubstr("rank 2 on h3 has unset"),
                                    HasSubstr("mpirun -x TANDEM_TEST_LINK_DELAY_MS")));
  }
}

TEST(LinkDelay, EveryRankRejectsABadValueAlike) {
  const std::vector<LinkDelayReport> reports = {{"h1", "boot", "fast"}, {"h2", "boot", "fast"}};
  EXPECT_THROW(agreed_link_delay(reports), Error);
}

TEST(LinkDelay, RanksOnDifferentMachinesAreRefused) {
  const std::vector<LinkDelayReport> reports = {{"h1", "boot-a", "1"}, {"h2", "boot-b", "1"}};
  try {
    agreed_link_delay(reports);
    FAIL() << "ranks on two machines were accepted";
  } catch (const Error& error) {
    EXPECT_THAT(error.what(), AllOf(HasSubstr("one machine"), HasSubstr("rank 1 on h2")));
  }
}

TEST(LinkDelay, OneProcessRejectsABadValueToo) {
  // Started directly (no launcher): no MPI, but the setting is still read.
  ASSERT_EQ(setenv(kLinkDelayVariable, "slow", 1), 0);
  std::optional<MpiRuntime> runtime;
  EXPECT_THROW(make_world_communicator(runtime), Error);
  ASSERT_EQ(setenv(kLinkDelayVariable, "0.5", 1), 0);
  EXPECT_EQ(make_world_communicator(runtime)->size(), 1);
  unsetenv(kLinkDelayVariable);
}

}  // namespace
}  // namespace tandem
