// Every wire message (cluster/wire/messages.*): arbitrary bytes decoded as
// each kind in turn. A decoder either refuses with Error(corrupt_data) or
// returns a message; a returned message encodes to bytes that decode to a
// message encoding to the very same bytes (decode and encode agree), and,
// since decode refuses anything but the one encoding of a message (trailing
// bytes, bools other than 0 and 1, ...), those bytes are the input itself.
#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>

#include "cluster/wire/messages.h"
#include "common/error.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using tandem::fuzz::fuzz_check;
using ByteView = std::span<const std::byte>;

template <class Decode>
void round_trip(const char* kind, ByteView input, Decode decode) {
  using tandem::wire::encode;
  try {
    const auto message = decode(input);
    const tandem::Bytes encoded = encode(message);
    const tandem::Bytes again = encode(decode(ByteView(encoded)));
    fuzz_check(again == encoded, std::string(kind) + ": decode(encode(m)) encodes differently from m");
    fuzz_check(std::equal(input.begin(), input.end(), encoded.begin(), encoded.end()),
               std::string(kind) + ": decoded from bytes other than its encoding");
  } catch (const tandem::Error& error) {
    fuzz_check(error.kind() == tandem::ErrorKind::corrupt_data,
               std::string(kind) + ": refused with a kind other than corrupt_data: " + error.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace wire = tandem::wire;
  const ByteView input(reinterpret_cast<const std::byte*>(data), size);
  try {
    (void)wire::peek_type(input);
  } catch (const tandem::Error& error) {
    fuzz_check(error.kind() == tandem::ErrorKind::corrupt_data,
               std::string("peek_type refused with a kind other than corrupt_data: ") + error.what());
  }
  round_trip("DraftStep", input, wire::decode_draft_step);
  round_trip("DraftReply", input, wire::decode_draft_reply);
  round_trip("QRows", input, wire::decode_q_rows);
  round_trip("TargetStep", input, wire::decode_target_step);
  round_trip("TargetResult", input, wire::decode_target_result);
  round_trip("Shutdown", input, wire::decode_shutdown);
  round_trip("WorkerReady", input, wire::decode_worker_ready);
  return 0;
}
