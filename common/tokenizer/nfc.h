// Unicode Normalization Form C (canonical decomposition, then canonical
// composition), for tokenizers whose normalizer is {"type": "NFC"} (Qwen 2/3).
//
// Data comes from nfc_tables.cpp (generated from Python's unicodedata, see
// tools/tokenizer_fixtures/gen_nfc_tables.py); Hangul is handled arithmetically.
// Thread-safe: the lookup tables are built once, on first use.
#pragma once

#include <string>
#include <string_view>

namespace tandem {

// True when text is certainly NFC already: every code point is below U+0300
// (no combining marks, nothing that decomposes). A byte scan, no lookups.
bool is_trivially_nfc(std::string_view utf8);

// NFC of valid UTF-8 (validate first with utf8::find_invalid).
std::string nfc_normalize(std::string_view valid_utf8);

}  // namespace tandem
