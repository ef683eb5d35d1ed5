// The Unicode data behind NFC (nfc.cpp), generated into nfc_tables.cpp by
// tools/tokenizer_fixtures/gen_nfc_tables.py so no Unicode library is needed.
#pragma once

#include <cstddef>
#include <cstdint>

namespace tandem::nfc_data {

// One canonical decomposition: code_point -> first [second]; second is 0 for a
// singleton. composes: the pair composes back to code_point under NFC (it is a
// primary composite, not a composition exclusion).
struct NfcDecomposition {
  uint32_t code_point;
  uint32_t first;
  uint32_t second;
  uint32_t composes;
};

// Code points first..last (inclusive) have canonical combining class ccc.
struct NfcClassRange {
  uint32_t first;
  uint32_t last;
  uint32_t ccc;
};

extern const NfcDecomposition kDecompositions[];  // sorted by code_point
extern const size_t kDecompositionCount;
extern const NfcClassRange kCombiningClasses[];  // sorted, disjoint
extern const size_t kCombiningClassCount;
extern const char kUnicodeVersion[];

}  // namespace tandem::nfc_data
