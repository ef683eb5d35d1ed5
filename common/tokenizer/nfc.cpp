#include "common/tokenizer/nfc.h"

#include <algorithm>
#include <cstdint>
#include <unordered_map>
#include <vector>

#include "common/tokenizer/nfc_tables.h"
#include "common/tokenizer/utf8.h"

namespace tandem {
namespace {

using nfc_data::kCombiningClassCount;
using nfc_data::kCombiningClasses;
using nfc_data::kDecompositionCount;
using nfc_data::kDecompositions;

// Hangul syllable arithmetic (Unicode 3.12): S = SBase + (L*VCount + V)*TCount + T.
constexpr char32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr char32_t kLCount = 19, kVCount = 21, kTCount = 28;
constexpr char32_t kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

// The first code point that NFC can change or that blocks composition:
// everything below U+0300 is a starter with no canonical decomposition, and no
// character below it composes with a preceding one.
constexpr char32_t kFirstInteresting = 0x300;

int combining_class(char32_t c) {
  if (c < kFirstInteresting) return 0;
  const auto* end = kCombiningClasses + kCombiningClassCount;
  const auto* it =
      std::upper_bound(kCombiningClasses, end, c,
                       [](char32_t v, const nfc_data::NfcClassRange& r) { return v < r.first; });
  if (it == kCombiningClasses) return 0;
  --it;
  return c <= it->last ? static_cast<int>(it->ccc) : 0;
}

const nfc_data::NfcDecomposition* find_decomposition(char32_t c) {
  if (c < 0xC0) return nullptr;
  const auto* end = kDecompositions + kDecompositionCount;
  const auto* it = std::lower_bound(
      kDecompositions, end, c,
      [](const nfc_data::NfcDecomposition& d, char32_t v) { return d.code_point < v; });
  return it != end && it->code_point == c ? it : nullptr;
}

// Primary composites keyed by (first << 21 | second); code points fit in 21 bits.
const std::unordered_map<uint64_t, char32_t>& composition_table() {
  static const std::unordered_map<uint64_t, char32_t> table = [] {
    std::unordered_map<uint64_t, char32_t> t;
    for (size_t i = 0; i < kDecompositionCount; ++i) {
      const auto& d = kDecompositions[i];
      if (d.composes) t.emplace((uint64_t{d.first} << 21) | d.second, d.code_point);
    }
    return t;
  }();
  return table;
}

void decompose_into(char32_t c, std::vector<char32_t>& out) {
  if (c >= kSBase && c < kSBase + kSCount) {
    const char32_t s = c - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount != 0) out.push_back(kTBase + s % kTCount);
    return;
  }
  const auto* d = find_decomposition(c);
  if (d == nullptr) {
    out.push_back(c);
    return;
  }
  decompose_into(d->first, out);  // mappings nest (e.g. U+1E08 -> U+00C7 U+0301)
  if (d->second != 0) decompose_into(d->second, out);
}

// The composite of a starter and a following character, or 0 when none.
char32_t compose_pair(char32_t first, char32_t second) {
  if (first >= kLBase && first < kLBase + kLCount && second >= kVBase &&
      second < kVBase + kVCount) {
    return kSBase + ((first - kLBase) * kVCount + (second - kVBase)) * kTCount;
  }
  if (first >= kSBase && first < kSBase + kSCount && (first - kSBase) % kTCount == 0 &&
      second > kTBase && second < kTBase + kTCount) {
    return first + (second - kTBase);
  }
  const auto& table = composition_table();
  const auto it = table.find((uint64_t{first} << 21) | second);
  return it == table.end() ? 0 : it->second;
}

// Canonical ordering: stable-sort every run of non-starters by class.
void reorder(std::vector<char32_t>& cps, std::vector<int>& classes) {
  for (size_t i = 0; i < cps.size();) {
    if (classes[i] == 0) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < cps.size() && classes[j] != 0) ++j;
    if (j - i > 1) {
      std::vector<std::pair<int, char32_t>> run;
      for (size_t k = i; k < j; ++k) run.emplace_back(classes[k], cps[k]);
      std::stable_sort(run.begin(), run.end(),
                       [](const auto& a, const auto& b) { return a.first < b.first; });
      for (size_t k = i; k < j; ++k) std::tie(classes[k], cps[k]) = run[k - i];
    }
    i = j;
  }
}

// Canonical composition (UAX #15): a character joins the last starter unless
// something between them blocks it (a starter, or a mark of class >= its own).
std::vector<char32_t> compose(const std::vector<char32_t>& cps, const std::vector<int>& classes) {
  std::vector<char32_t> out;
  out.reserve(cps.size());
  size_t starter = SIZE_MAX;
  int last_class = -1;  // class of the last char kept after the starter; -1: adjacent
  for (size_t i = 0; i < cps.size(); ++i) {
    const int cc = classes[i];
    if (starter != SIZE_MAX) {
      const bool blocked = last_class != -1 && (last_class == 0 || last_class >= cc);
      if (!blocked) {
        if (char32_t composite = compose_pair(out[starter], cps[i]); composite != 0) {
          out[starter] = composite;
          continue;
        }
      }
    }
    if (cc == 0) {
      starter = out.size();
      last_class = -1;
    } else {
      last_class = cc;
    }
    out.push_back(cps[i]);
  }
  return out;
}

}  // namespace

bool is_trivially_nfc(std::string_view text) {
  return std::all_of(text.begin(), text.end(), [](char ch) {
    return static_cast<unsigned char>(ch) < 0xCC;  // lead bytes up to 0xCB: code points < U+0300
  });
}

std::string nfc_normalize(std::string_view text) {
  if (is_trivially_nfc(text)) return std::string(text);

  std::vector<char32_t> cps;
  cps.reserve(text.size());
  for (char32_t c : utf8::decode(text)) decompose_into(c, cps);
  std::vector<int> classes(cps.size());
  for (size_t i = 0; i < cps.size(); ++i) classes[i] = combining_class(cps[i]);
  reorder(cps, classes);

  std::string out;
  out.reserve(text.size());
  for (char32_t c : compose(cps, classes)) utf8::append_code_point(out, c);
  return out;
}

}  // namespace tandem
