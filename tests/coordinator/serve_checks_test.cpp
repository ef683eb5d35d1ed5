// Tests of coordinator/config/serve_checks.h: what `tandem serve` would
// reject at start (an address it cannot bind, a model directory that is not
// there, a port out of range, an unset API key variable) is found before
// anything loads, naming the key and its line, or the flag that overrode it.
#include "coordinator/config/serve_checks.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>

#include "common/error.h"

namespace tandem {
namespace {

using ::testing::StartsWith;

namespace fs = std::filesystem;
const fs::path kSourceTree = TANDEM_SOURCE_DIR;
const std::string kTiny = (kSourceTree / "models/tiny").string();

// Lines 1-3: a target that exists (the tiny checkpoint, by absolute path).
std::string target() { return "models:\n  target:\n    path: " + kTiny + "/target\n"; }

// The message check_deployment_can_serve throws for yaml ("" when it passes).
std::string serve_error_of(const std::string& yaml) {
  const DeploymentConfig config = parse_deployment(yaml, "deploy.yaml");
  try {
    check_deployment_can_serve(config);
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::invalid_argument) << error.what();
    return error.what();
  }
  return "";
}

// A fresh directory under the temp dir holding the files named.
fs::path directory_with(const std::string& name, std::initializer_list<const char*> files) {
  const fs::path dir =
      fs::temp_directory_path() / ("tandem-serve-checks-" + std::to_string(getpid()) + "-" + name);
  fs::remove_all(dir);
  fs::create_directories(dir);
  for (const char* file : files) std::ofstream(dir / file) << "{}";
  return dir;
}

TEST(ServeChecks, TheTinyPairOnLoopbackCanServe) {
  EXPECT_EQ(serve_error_of(target() + "  draft:\n    path: " + kTiny + "/draft\n"), "");
  for (const char* host : {"127.0.0.1", "0.0.0.0", "::1", "::", "fe80::1"}) {
    EXPECT_EQ(serve_error_of(target() + "server:\n  host: \"" + host + "\"\n"), "") << host;
  }
}

TEST(ServeChecks, HostMustBeAnAddressNotAName) {
  EXPECT_EQ(serve_error_of(target() + "server:\n  port: 80\n  host: localhost\n"),
            "deploy.yaml:6: server.host: must be an IP address to listen on (IPv4 or IPv6, e.g. "
            "127.0.0.1, 0.0.0.0 or ::1); host names are not resolved, got \"localhost\"");
  for (const char* host : {"example.com", "256.1.1.1", "127.0.0.1:80", "[::1]"}) {
    EXPECT_THAT(serve_error_of(target() + "server:\n  host: \"" + host + "\"\n"),
                StartsWith("deploy.yaml:5: server.host: must be an IP address"))
        << host;
  }
}

TEST(ServeChecks, ModelDirectoriesMustExistAndHoldConfigJson) {
  EXPECT_EQ(serve_error_of("models:\n  target:\n    path: /no/such/model\n"),
            "deploy.yaml:3: models.target.path: /no/such/model is not a directory (a Hugging "
            "Face model directory: config.json, *.safetensors; relative paths start from the "
            "directory tandem runs in)");
  const fs::path empty = directory_with("empty", {});
  EXPECT_EQ(serve_error_of("models:\n  target:\n    path: " + empty.string() + "\n"),
            "deploy.yaml:3: models.target.path: " + empty.string() +
                " holds no config.json (a Hugging Face model directory: config.json, "
                "*.safetensors)");
  // The draft's directory is checked the same way, at its own line.
  EXPECT_THAT(serve_error_of(target() + "  draft:\n    path: missing/draft\n"),
              StartsWith("deploy.yaml:5: models.draft.path: missing/draft is not a directory"));
  fs::remove_all(empty);
}

TEST(ServeChecks, TheTokenizerDirectoryMustHoldTokenizerJson) {
  // Without a tokenizer key the model's own directory must hold it.
  const fs::path no_tokenizer = directory_with("no-tokenizer", {"config.json"});
  EXPECT_EQ(serve_error_of("models:\n  target:\n    path: " + no_tokenizer.string() + "\n"),
            "deploy.yaml:3: models.target.path: " + no_tokenizer.string() +
                " holds no tokenizer.json (the Hugging Face tokenizer file)");
  // With one, that key is named.
  EXPECT_THAT(serve_error_of(target() + "    tokenizer: " + no_tokenizer.string() + "\n"),
              StartsWith("deploy.yaml:4: models.target.tokenizer: " + no_tokenizer.string() +
                         " holds no tokenizer.json"));
  EXPECT_EQ(serve_error_of("models:\n  target:\n    path: " + no_tokenizer.string() +
                           "\n    tokenizer: " + kTiny + "/target\n"),
            "");
  fs::remove_all(no_tokenizer);
}

TEST(ServeChecks, DummyWeightsNeedOnlyTheirShape) {
  const std::string shapes = (kSourceTree / "configs/shapes").string();
  EXPECT_EQ(serve_error_of("models:\n  target:\n    load_format: dummy\n    shape: " + shapes +
                           "/bench-24m.json\n"),
            "");
  // A directory holding config.json is a shape too (as load_model reads it).
  EXPECT_EQ(serve_error_of("models:\n  target:\n    load_format: dummy\n    shape: " + kTiny +
                           "/target\n"),
            "");
  EXPECT_EQ(serve_error_of("models:\n  target:\n    load_format: dummy\n    shape: " + shapes +
                           "/no-such-shape.json\n"),
            "deploy.yaml:4: models.target.shape: " + shapes +
                "/no-such-shape.json is neither a config.json file nor a directory holding one "
                "(see configs/shapes/)");
  // A dummy model's tokenizer, when given, must still be one.
  EXPECT_THAT(serve_error_of("models:\n  target:\n    load_format: dummy\n    shape: " + shapes +
                             "/bench-24m.json\n    tokenizer: /no/such/tokenizer\n"),
              StartsWith("deploy.yaml:5: models.target.tokenizer: /no/such/tokenizer is not a "
                         "directory"));
}

TEST(ServeChecks, OverridesAreCheckedNamingTheFlag) {
  DeploymentConfig config = parse_deployment(target(), "deploy.yaml");
  try {
    override_port(config, 70000);
    ADD_FAILURE() << "--port 70000 must be refused";
  } catch (const Error& error) {
    EXPECT_EQ(std::string(error.what()), "--port: must be in [0, 65535], got 70000");
  }
  override_port(config, 0);
  EXPECT_EQ(config.server.port, 0);
  override_host(config, "localhost");
  try {
    check_deployment_can_serve(config);
    ADD_FAILURE() << "--host localhost must be refused";
  } catch (const Error& error) {
    EXPECT_THAT(std::string(error.what()),
                StartsWith("--host: must be an IP address to listen on"));
  }
  override_host(config, "::1");
  EXPECT_NO_THROW(check_deployment_can_serve(config));
  EXPECT_EQ(config.server.host, "::1");
}

TEST(ServeChecks, TheApiKeyVariableMustBeSet) {
  ::unsetenv("TANDEM_SERVE_CHECKS_UNSET_KEY");
  EXPECT_EQ(serve_error_of(target() + "server:\n  api_key_env: TANDEM_SERVE_CHECKS_UNSET_KEY\n"),
            "deploy.yaml:5: server.api_key_env: names TANDEM_SERVE_CHECKS_UNSET_KEY, but that "
            "environment variable is unset or empty (export it where tandem serve runs)");
  ::setenv("TANDEM_SERVE_CHECKS_SET_KEY", "k", 1);
  EXPECT_EQ(serve_error_of(target() + "server:\n  api_key_env: TANDEM_SERVE_CHECKS_SET_KEY\n"), "");
}

}  // namespace
}  // namespace tandem
