// The tokenizer (common/tokenizer/) with the tiny model's tokenizer.json,
// which has no normalizer, so for it the round trip is exact:
//   - text that is valid UTF-8 encodes (with and without the special-token
//     wrapping) to ids inside the vocabulary, and decode(encode(text)) ==
//     text byte for byte; text that is not valid UTF-8 is refused with
//     Error(invalid_argument), never encoded;
//   - the same input read as token ids (4 bytes each, some outside the
//     vocabulary on purpose): decode refuses an out-of-range id with
//     Error(invalid_argument), and otherwise gives valid UTF-8 that a
//     StreamingDecoder fed one id at a time reproduces exactly, with and
//     without skip_special, and that round-trips through encode/decode.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "common/error.h"
#include "common/tokenizer/tokenizer.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

using tandem::Error;
using tandem::ErrorKind;
using tandem::Tokenizer;
using tandem::fuzz::fuzz_check;
using tandem::fuzz::is_valid_utf8;

const Tokenizer& tiny_tokenizer() {
  static const Tokenizer tokenizer = Tokenizer::load(TANDEM_SOURCE_DIR "/models/tiny/target");
  return tokenizer;
}

void check_text(const Tokenizer& tokenizer, std::string_view text) {
  const bool valid = is_valid_utf8(text);
  for (const bool add_special : {false, true}) {
    std::vector<int32_t> ids;
    try {
      ids = tokenizer.encode(text, add_special);
    } catch (const Error& error) {
      fuzz_check(!valid, std::string("valid UTF-8 refused by encode: ") + error.what());
      fuzz_check(error.kind() == ErrorKind::invalid_argument,
                 std::string("encode refused with a kind other than invalid_argument: ") +
                     error.what());
      continue;
    }
    fuzz_check(valid, "encode accepted text that is not valid UTF-8");
    for (const int32_t id : ids)
      fuzz_check(id >= 0 && id < tokenizer.vocab_size(), "encode gave an id outside the vocabulary");
    // Without special tokens around it, decode must give back every byte.
    if (!add_special) fuzz_check(tokenizer.decode(ids) == text, "decode(encode(text)) != text");
  }
}

// Decoding one id at a time, as the server streams, must give decode()'s text.
std::string decode_streaming(const Tokenizer& tokenizer, const std::vector<int32_t>& ids,
                             bool skip_special) {
  tandem::StreamingDecoder decoder(tokenizer, skip_special);
  std::string text;
  for (const int32_t id : ids) text += decoder.push(id);
  return text + decoder.flush();
}

void check_ids(const Tokenizer& tokenizer, const uint8_t* data, size_t size) {
  const int32_t vocab = tokenizer.vocab_size();
  std::vector<int32_t> ids;
  bool in_range = true;
  for (size_t i = 0; i + 4 <= size; i += 4) {
    uint32_t raw;
    std::memcpy(&raw, data + i, 4);
    // Mostly ids of the vocabulary, now and then one just outside it.
    const int32_t id = static_cast<int32_t>(raw % static_cast<uint32_t>(vocab + 4)) - 2;
    in_range = in_range && id >= 0 && id < vocab;
    ids.push_back(id);
  }
  for (const bool skip_special : {false, true}) {
    std::string text;
    try {
      text = tokenizer.decode(ids, skip_special);
    } catch (const Error& error) {
      fuzz_check(!in_range, std::string("decode refused ids of the vocabulary: ") + error.what());
      fuzz_check(error.kind() == ErrorKind::invalid_argument,
                 std::string("decode refused with a kind other than invalid_argument: ") +
                     error.what());
      continue;
    }
    fuzz_check(in_range, "decode accepted an id outside the vocabulary");
    fuzz_check(is_valid_utf8(text), "decode gave text that is not valid UTF-8");
    fuzz_check(decode_streaming(tokenizer, ids, skip_special) == text,
               "StreamingDecoder's chunks differ from decode()");
    fuzz_check(tokenizer.decode(tokenizer.encode(text, false)) == text,
               "decoded text does not round-trip through encode/decode");
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const Tokenizer& tokenizer = tiny_tokenizer();
  check_text(tokenizer, std::string_view(reinterpret_cast<const char*>(data), size));
  check_ids(tokenizer, data, size);
  return 0;
}
