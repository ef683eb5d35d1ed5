// POST /v1/completions' body (coordinator/api/completion_request.*) as the
// route reads it: parsed with the default deployment's limits, then its
// prompt tokenized (route_checks.h says what must hold).
#include <cstdint>
#include <string_view>

#include "tests/fuzz/route_checks.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const tandem::fuzz::ServedModel& served = tandem::fuzz::served_model();
  tandem::fuzz::completion_route(std::string_view(reinterpret_cast<const char*>(data), size), served);
  return 0;
}
