#include "common/tokenizer/added_tokens.h"

#include "common/tokenizer/utf8.h"

namespace tandem {
namespace {

// Length of the run of whitespace that ends at `end` and starts no earlier than `floor`.
size_t whitespace_before(std::string_view text, size_t end, size_t floor) {
  size_t start = end;
  while (start > floor) {
    size_t lead = start - 1;
    while (lead > floor && (static_cast<unsigned char>(text[lead]) & 0xC0) == 0x80) --lead;
    const utf8::Step s = utf8::step(text, lead);
    if (!s.valid || lead + s.length != start || !utf8::is_white_space(s.code_point)) break;
    start = lead;
  }
  return end - start;
}

size_t whitespace_after(std::string_view text, size_t begin) {
  size_t end = begin;
  while (end < text.size()) {
    const utf8::Step s = utf8::step(text, end);
    if (!s.valid || !utf8::is_white_space(s.code_point)) break;
    end += s.length;
  }
  return end - begin;
}

}  // namespace

AddedTokenMatcher::AddedTokenMatcher(const std::vector<AddedToken>& tokens) : tokens_(tokens) {
  trie_.emplace_back();
  for (size_t t = 0; t < tokens_.size(); ++t) {
    const std::string& content = tokens_[t].content;
    if (content.empty()) continue;  // an empty token would match everywhere
    first_bytes_.set(static_cast<unsigned char>(content[0]));
    int32_t node = 0;
    for (char ch : content) {
      const auto byte = static_cast<unsigned char>(ch);
      int32_t next = child(node, byte);
      if (next < 0) {
        next = static_cast<int32_t>(trie_.size());
        trie_[node].edges.emplace_back(byte, next);
        trie_.emplace_back();
      }
      node = next;
    }
    // The same content twice: the first entry wins, like a map insert in HF.
    if (trie_[node].token < 0) trie_[node].token = static_cast<int32_t>(t);
  }
}

int32_t AddedTokenMatcher::child(int32_t node, unsigned char byte) const {
  for (const auto& [b, next] : trie_[node].edges) {
    if (b == byte) return next;
  }
  return -1;
}

std::pair<int32_t, size_t> AddedTokenMatcher::longest_at(std::string_view text, size_t at) const {
  std::pair<int32_t, size_t> best{-1, 0};
  int32_t node = 0;
  for (size_t i = at; i < text.size(); ++i) {
    node = child(node, static_cast<unsigned char>(text[i]));
    if (node < 0) break;
    if (trie_[node].token >= 0) best = {trie_[node].token, i + 1 - at};
  }
  return best;
}

void AddedTokenMatcher::split(std::string_view text, std::vector<Segment>& segments) const {
  segments.clear();
  size_t plain_start = 0;  // start of text not yet assigned to a segment
  size_t at = 0;
  while (at < text.size()) {
    if (!first_bytes_.test(static_cast<unsigned char>(text[at]))) {
      ++at;
      continue;
    }
    const auto [token, length] = longest_at(text, at);
    if (token < 0) {
      ++at;
      continue;
    }
    const AddedToken& added = tokens_[token];
    size_t plain_end = at;
    if (added.lstrip) plain_end -= whitespace_before(text, at, plain_start);
    if (plain_end > plain_start) {
      segments.push_back({text.substr(plain_start, plain_end - plain_start), -1});
    }
    segments.push_back({text.substr(at, length), added.id});
    at += length;
    if (added.rstrip) at += whitespace_after(text, at);
    plain_start = at;
  }
  if (plain_start < text.size()) segments.push_back({text.substr(plain_start), -1});
}

}  // namespace tandem
