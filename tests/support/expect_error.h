// expect_invalid: the check every "bad input gets a clear error" test makes.
#pragma once

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>

#include "common/error.h"

namespace tandem::test_support {

// Runs f, expecting Error(invalid_argument) whose message names `name`.
template <typename F>
void expect_invalid(F&& f, const std::string& name) {
  try {
    f();
    ADD_FAILURE() << "no error for " << name;
  } catch (const Error& e) {
    EXPECT_EQ(e.kind(), ErrorKind::invalid_argument);
    EXPECT_THAT(e.what(), testing::HasSubstr(name));
  }
}

}  // namespace tandem::test_support
