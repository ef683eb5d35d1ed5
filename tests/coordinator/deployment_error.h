// error_of: what the deployment tests (config and placement) check when a
// YAML document must be refused.
#pragma once

#include <gtest/gtest.h>

#include <string>

#include "common/error.h"
#include "coordinator/config/deployment_config.h"

namespace tandem::test_support {

// The message of the Error that parsing yaml (as "deploy.yaml") raises;
// fails the test when yaml is accepted or the error is of another kind.
inline std::string error_of(const std::string& yaml) {
  try {
    parse_deployment(yaml, "deploy.yaml");
  } catch (const Error& error) {
    EXPECT_EQ(error.kind(), ErrorKind::invalid_argument) << error.what();
    return error.what();
  }
  ADD_FAILURE() << "accepted a bad deployment:\n" << yaml;
  return "";
}

}  // namespace tandem::test_support
