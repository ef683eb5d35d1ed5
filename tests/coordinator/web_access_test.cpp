// Tests of coordinator/config/web_access: how Host headers and browser
// origins compare with server.allowed_hosts and server.cors_origins, and how
// the loader checks those keys.
#include "coordinator/config/web_access.h"

#include <gtest/gtest.h>

#include "coordinator/config/deployment_config.h"
#include "tests/coordinator/deployment_error.h"
#include "tests/coordinator/target_only_yaml.h"

namespace tandem::web {
namespace {

using test_support::error_of;

const std::vector<std::string> kLoopback = default_allowed_hosts("127.0.0.1");

TEST(WebAccess, HostHeadersLoseTheirPortAndCase) {
  EXPECT_EQ(host_of("LocalHost:8080"), "localhost");
  EXPECT_EQ(host_of("127.0.0.1"), "127.0.0.1");
  EXPECT_EQ(host_of("[::1]:8080"), "[::1]");
  EXPECT_EQ(host_of("[FE80::1]"), "[fe80::1]");
  EXPECT_EQ(host_of("example.com:"), "example.com");  // an empty port is allowed (RFC 3986)
  for (const char* malformed : {"", ":8080", "::1", "[::1", "[]", "a b", "a/b", "x:80:80", "x:port",
                                "evil.com@localhost", "[::1]x", "x:123456"})
    EXPECT_EQ(host_of(malformed), std::nullopt) << malformed;
}

TEST(WebAccess, DefaultHostsAreTheBindAddressAndLoopback) {
  EXPECT_EQ(kLoopback, (std::vector<std::string>{"127.0.0.1", "localhost", "[::1]"}));
  EXPECT_EQ(default_allowed_hosts("10.0.0.5"),
            (std::vector<std::string>{"10.0.0.5", "localhost", "127.0.0.1", "[::1]"}));
  EXPECT_EQ(default_allowed_hosts("::1"), (std::vector<std::string>{"[::1]", "localhost", "127.0.0.1"}));
  // A wildcard address is no name a client uses.
  EXPECT_EQ(default_allowed_hosts("0.0.0.0"), (std::vector<std::string>{"localhost", "127.0.0.1", "[::1]"}));
  EXPECT_EQ(default_allowed_hosts("::"), (std::vector<std::string>{"localhost", "127.0.0.1", "[::1]"}));
  EXPECT_TRUE(is_wildcard_address("0.0.0.0"));
  EXPECT_TRUE(is_wildcard_address("::"));
  EXPECT_FALSE(is_wildcard_address("127.0.0.1"));
  EXPECT_FALSE(is_wildcard_address("localhost"));
}

TEST(WebAccess, ListeningEverywhereLogsWhichHostsAreAnswered) {
  EXPECT_EQ(wildcard_note("0.0.0.0", std::nullopt),
            "listening on every interface, answering requests whose Host header names localhost, 127.0.0.1, "
            "[::1]: remote clients need the names they use listed in server.allowed_hosts");
  EXPECT_EQ(wildcard_note("::", std::vector<std::string>{"tandem.example"}),
            "listening on every interface, answering requests whose Host header names tandem.example "
            "(server.allowed_hosts)");
  EXPECT_EQ(wildcard_note("0.0.0.0", std::vector<std::string>{"*"}), std::nullopt);
  EXPECT_EQ(wildcard_note("127.0.0.1", std::nullopt), std::nullopt);
  EXPECT_EQ(wildcard_note("10.0.0.5", std::nullopt), std::nullopt);
}

TEST(WebAccess, HostAllowedComparesTheHostOnly) {
  EXPECT_TRUE(host_allowed("localhost:8080", kLoopback));
  EXPECT_TRUE(host_allowed("LOCALHOST", kLoopback));
  EXPECT_TRUE(host_allowed("127.0.0.1:1", kLoopback));
  EXPECT_TRUE(host_allowed("[::1]:8080", kLoopback));
  // DNS rebinding: the page's own name, now resolving to this machine.
  EXPECT_FALSE(host_allowed("attacker.example:8080", kLoopback));
  EXPECT_FALSE(host_allowed("localhost.attacker.example", kLoopback));
  EXPECT_FALSE(host_allowed("127.0.0.1.nip.io", kLoopback));
  EXPECT_FALSE(host_allowed("", kLoopback));
  EXPECT_FALSE(host_allowed("::1", kLoopback));  // an IPv6 Host must be bracketed
  EXPECT_TRUE(host_allowed("anything.example", {"*"}));
  EXPECT_TRUE(host_allowed("", {"*"}));
}

TEST(WebAccess, AllowedHostEntriesAreNormalizedOrRefused) {
  std::string problem;
  EXPECT_EQ(allowed_host_entry("Tandem.Example.com", problem), "tandem.example.com");
  EXPECT_EQ(allowed_host_entry("::1", problem), "[::1]");
  EXPECT_EQ(allowed_host_entry("[::1]", problem), "[::1]");
  EXPECT_EQ(allowed_host_entry("*", problem), "*");
  EXPECT_EQ(allowed_host_entry("example.com:8080", problem), std::nullopt);
  EXPECT_NE(problem.find("without a port"), std::string::npos) << problem;
  EXPECT_EQ(allowed_host_entry("http://example.com", problem), std::nullopt);
  EXPECT_NE(problem.find("without a scheme"), std::string::npos) << problem;
  EXPECT_EQ(allowed_host_entry("exa mple", problem), std::nullopt);
}

TEST(WebAccess, OriginsNormalizeAndCompareWithTheHost) {
  EXPECT_EQ(normalized_origin("HTTP://LocalHost:80"), "http://localhost");
  EXPECT_EQ(normalized_origin("https://ui.example:443"), "https://ui.example");
  EXPECT_EQ(normalized_origin("http://localhost:3000"), "http://localhost:3000");
  EXPECT_EQ(normalized_origin("null"), std::nullopt);
  EXPECT_EQ(normalized_origin("http://x/path"), std::nullopt);

  EXPECT_TRUE(same_origin("http://127.0.0.1:8080", "127.0.0.1:8080"));
  EXPECT_TRUE(same_origin("http://LOCALHOST", "localhost:80"));
  EXPECT_TRUE(same_origin("https://tandem.example", "tandem.example"));
  EXPECT_FALSE(same_origin("http://localhost:3000", "localhost:8080"));
  EXPECT_FALSE(same_origin("http://attacker.example", "localhost:8080"));
  EXPECT_FALSE(same_origin("https://tandem.example", "tandem.example:80"));
  EXPECT_FALSE(same_origin("null", "localhost"));

  const std::vector<std::string> listed = {"http://localhost:3000"};
  EXPECT_TRUE(origin_listed("http://LocalHost:3000", listed));
  EXPECT_FALSE(origin_listed("http://localhost:3001", listed));
  EXPECT_FALSE(origin_listed("null", listed));
  EXPECT_TRUE(origin_listed("null", {"*"}));
}

using test_support::kTargetOnlyYaml;

TEST(WebAccess, TheLoaderReadsBothKeysInTheGatesForm) {
  const DeploymentConfig defaults = parse_deployment(kTargetOnlyYaml, "deploy.yaml");
  EXPECT_EQ(defaults.server.allowed_hosts, std::nullopt);
  EXPECT_TRUE(defaults.server.cors_origins.empty());
  const DeploymentConfig config = parse_deployment(
      "server:\n  allowed_hosts: [Tandem.Example, \"::1\", \"*\"]\n"
      "  cors_origins:\n    - HTTP://LocalHost:3000\n    - https://ui.example:443\n" + kTargetOnlyYaml,
      "deploy.yaml");
  EXPECT_EQ(config.server.allowed_hosts, (std::vector<std::string>{"tandem.example", "[::1]", "*"}));
  EXPECT_EQ(config.server.cors_origins,
            (std::vector<std::string>{"http://localhost:3000", "https://ui.example"}));
}

TEST(WebAccess, TheLoaderNamesTheKeyTheLineAndTheEntry) {
  EXPECT_EQ(error_of("server:\n  allowed_hosts: [a.example, \"b.example:8080\"]\n" + kTargetOnlyYaml),
            "deploy.yaml:2: server.allowed_hosts: allowed_hosts[1]: write \"b.example\" without a port: "
            "the port is not compared, got \"b.example:8080\"");
  EXPECT_NE(error_of("server:\n  allowed_hosts: []\n" + kTargetOnlyYaml).find("deploy.yaml:2: server.allowed_hosts: must list"),
            std::string::npos);
  EXPECT_NE(error_of("server:\n  allowed_hosts: localhost\n" + kTargetOnlyYaml).find("expected a list"),
            std::string::npos);
  EXPECT_NE(error_of("server:\n  cors_origins: [\"http://ui.example/app\"]\n" + kTargetOnlyYaml)
                .find("deploy.yaml:2: server.cors_origins: cors_origins[0]: expected an origin"),
            std::string::npos);
  EXPECT_NE(error_of("server:\n  cors_origins: [localhost:3000]\n" + kTargetOnlyYaml).find("scheme://host[:port]"),
            std::string::npos);
}

}  // namespace
}  // namespace tandem::web
