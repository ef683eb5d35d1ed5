// GPT-2's byte-to-unicode mapping, which byte-level BPE vocabularies are
// written in: every byte gets a printable character (bytes that are already
// printable map to themselves; the rest go to U+0100 and up), so a token is
// a plain string and a space shows as 'Ġ' (U+0120).
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <string_view>

namespace tandem::byte_level {

// UTF-8 of the character that stands for `byte` in vocabulary strings.
const std::string& char_of_byte(uint8_t byte);

// Appends to `out` the vocabulary spelling of raw bytes.
void append_encoded(std::string& out, std::string_view raw);

// Appends the raw bytes a vocabulary string stands for. A string with a
// character outside the mapping (an added token such as "<|im_start|>" is
// fine, but one with a plain space is not) is appended as is, as Hugging
// Face's ByteLevel decoder does.
void append_decoded(std::string& out, std::string_view token);

}  // namespace tandem::byte_level
