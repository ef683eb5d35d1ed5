// Tests of tools/soak/process_memory.h on made-up /proc texts and on this
// test process itself (its RSS, and the socket it listens on).
#include "tools/soak/process_memory.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>

#include "common/error.h"

namespace tandem::soak {
namespace {

TEST(ParseVmRss, ReadsTheKilobytes) {
  const std::string status =
      "Name:\ttandem\nVmPeak:\t  999999 kB\nVmRSS:\t  254012 kB\nRssAnon:\t  200000 kB\nThreads:\t9\n";
  EXPECT_EQ(parse_vm_rss_kb(status), 254012);
}

TEST(ParseVmRss, NoneWithoutTheLine) {
  EXPECT_EQ(parse_vm_rss_kb("Name:\tkthreadd\nState:\tS (sleeping)\n"), std::nullopt);
  EXPECT_EQ(parse_vm_rss_kb("VmRSS:\tlots kB\n"), std::nullopt);
  EXPECT_EQ(parse_vm_rss_kb(""), std::nullopt);
}

TEST(ReadRss, OfThisProcessIsPositiveAndOfNoProcessNone) {
  const auto mine = read_rss_kb(getpid());
  ASSERT_TRUE(mine.has_value());
  EXPECT_GT(*mine, 0);
  EXPECT_EQ(read_rss_kb(-5), std::nullopt);
}

TEST(ListeningInode, FindsTheListeningLineOfThePort) {
  // Port 8080 is 1F90; state 0A is LISTEN, 01 ESTABLISHED.
  const std::string tcp =
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode\n"
      "   0: 0100007F:1F90 0100007F:D431 01 00000000:00000000 00:00000000 00000000     0        0 111 1\n"
      "   1: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 222 1\n"
      "   2: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 333 1\n";
  EXPECT_EQ(listening_inode(tcp, 8080), 222u);
  EXPECT_EQ(listening_inode(tcp, 8081), 333u);
  EXPECT_EQ(listening_inode(tcp, 9999), std::nullopt);
}

TEST(FindServerProcesses, FindsThisProcessFromItsListeningSocket) {
  boost::asio::io_context context;
  boost::asio::ip::tcp::acceptor acceptor(context, {boost::asio::ip::make_address("127.0.0.1"), 0});
  const int port = acceptor.local_endpoint().port();
  EXPECT_EQ(find_server_processes(port), std::vector<int>{getpid()});
  acceptor.close();
  EXPECT_THROW(find_server_processes(port), Error);
}

}  // namespace
}  // namespace tandem::soak
