// write_temp_file: a file holding given text, for tests that read files.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

namespace tandem::test_support {

// A file under the test's temporary directory holding `content`. ctest runs
// every case as its own process, in parallel: names carry the pid.
inline std::filesystem::path write_temp_file(const std::string& name, const std::string& content) {
  const std::filesystem::path path =
      std::filesystem::path(::testing::TempDir()) / (std::to_string(::getpid()) + "_" + name);
  std::ofstream(path) << content;
  return path;
}

}  // namespace tandem::test_support
