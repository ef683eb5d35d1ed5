// expect_invalid: the check every "bad input gets a clear error" test makes;
// error_from: the Error a call throws, for tests that look at more of it.
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
    EXPECT_THAT(e.what(), ::testing::HasSubstr(name));
  }
}

// The Error f() throws; fails the test (and returns an empty internal
// Error) if it throws none.
template <typename F>
Error error_from(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e;
  }
  ADD_FAILURE() << "expected an Error";
  return Error(ErrorKind::internal, "");
}

}  // namespace tandem::test_support
