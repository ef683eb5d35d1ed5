// ReferenceFiles: what one of the NumPy references in tests/reference/
// writes, run once per test process into a directory of its own (ctest runs
// test cases as parallel processes) and removed when the process ends.
// `dir` is empty when the script failed (the caller's test then fails).
// Needs TANDEM_PYTHON, TANDEM_SOURCE_DIR and TANDEM_BINARY_DIR defined by
// the test target.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <system_error>

namespace tandem {

struct ReferenceFiles {
  std::filesystem::path dir;
  // script: the file name in tests/reference/, e.g. "llama_reference.py".
  explicit ReferenceFiles(const std::string& script) {
    const std::string stem = std::filesystem::path(script).stem().string();
    dir = std::filesystem::path(TANDEM_BINARY_DIR) / "test-data" /
          (stem + "-" + std::to_string(getpid()));
    const std::string command = std::string(TANDEM_PYTHON) + " " + TANDEM_SOURCE_DIR +
                                "/tests/reference/" + script + " " + dir.string();
    if (std::system(command.c_str()) != 0) dir.clear();
  }
  ~ReferenceFiles() {
    std::error_code ignored;
    if (!dir.empty()) std::filesystem::remove_all(dir, ignored);
  }
  ReferenceFiles(const ReferenceFiles&) = delete;
  ReferenceFiles& operator=(const ReferenceFiles&) = delete;
};

}  // namespace tandem
