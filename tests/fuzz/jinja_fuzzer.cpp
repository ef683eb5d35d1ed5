// The chat-template engine (common/jinja/): arbitrary template text parsed,
// then rendered under Limits with an arbitrary JSON context. The input is
// the template, a NUL byte, then the context as JSON; a context that is not
// a JSON object is given to the template as `value` beside a small chat.
// Both steps either succeed or throw tandem::Error (never of kind
// internal); the rendered text never passes max_output_bytes.
#include <cstdint>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/jinja/template.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using Json = nlohmann::ordered_json;
using tandem::Error;
using tandem::ErrorKind;
using tandem::fuzz::fuzz_check;

// Lower than the server's (template.h), so that one input stays well under
// a second even when it spends its whole budget; what the limits guard is
// the same.
tandem::jinja::Limits fuzz_limits() {
  tandem::jinja::Limits limits;
  limits.max_output_bytes = 64 << 10;
  limits.max_steps = 100'000;
  limits.max_call_depth = 32;
  return limits;
}

Json context_from(std::string_view text) {
  Json parsed = Json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (parsed.is_object()) return parsed;
  Json context = {{"messages", Json::array({{{"role", "user"}, {"content", "hi"}}})},
                  {"add_generation_prompt", true},
                  {"bos_token", "<s>"}};
  if (!parsed.is_discarded()) context["value"] = std::move(parsed);
  return context;
}

void check_error(const Error& error) {
  fuzz_check(error.kind() != ErrorKind::internal,
             std::string("the engine reported an internal error: ") + error.what());
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  const size_t split = input.find('\0');
  const std::string_view source = input.substr(0, split);
  const Json context =
      context_from(split == std::string_view::npos ? std::string_view() : input.substr(split + 1));
  const tandem::jinja::Limits limits = fuzz_limits();
  try {
    const tandem::jinja::Template parsed = tandem::jinja::Template::parse(source);
    const std::string text = parsed.render(context, limits, {.now_seconds = 1.7e9});
    fuzz_check(text.size() <= limits.max_output_bytes, "the rendering passed max_output_bytes");
  } catch (const Error& error) {
    check_error(error);
  }
  return 0;
}
