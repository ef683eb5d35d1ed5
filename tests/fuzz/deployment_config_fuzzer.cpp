// The deployment YAML (coordinator/config/deployment_config.*): arbitrary
// text parsed as a deployment. It is either accepted, and then described
// (`tandem serve --check-config`), or refused with Error(invalid_argument)
// whose message names the file first ("fuzz.yaml:LINE: key: ..." or
// "fuzz.yaml: ..."). Any other exception, yaml-cpp's own included, is a
// finding.
#include <cstdint>
#include <string>

#include "common/error.h"
#include "coordinator/config/deployment_config.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tandem::fuzz::fuzz_check;
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const tandem::DeploymentConfig config = tandem::parse_deployment(text, "fuzz.yaml");
    fuzz_check(!tandem::describe(config).empty(), "an accepted deployment describes as nothing");
  } catch (const tandem::Error& error) {
    const std::string message = error.what();
    fuzz_check(error.kind() == tandem::ErrorKind::invalid_argument,
               "a deployment refused with a kind other than invalid_argument: " + message);
    fuzz_check(message.starts_with("fuzz.yaml"), "a refusal that does not name the file: " + message);
  }
  return 0;
}
