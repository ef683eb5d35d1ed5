#include "common/tokenizer/tokenizer.h"

#include <fstream>
#include <sstream>
#include <system_error>

#include "common/error.h"
#include "common/tokenizer/byte_level.h"
#include "common/tokenizer/nfc.h"
#include "common/tokenizer/tokenizer_impl.h"
#include "common/tokenizer/utf8.h"

namespace tandem {
namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  require(in.good(), ErrorKind::not_found,
          "tokenizer: cannot open " + path.string() + " (hint: check the file's permissions)");
  std::ostringstream buffer;
  buffer << in.rdbuf();
  require(!in.bad(), ErrorKind::corrupt_data, "tokenizer: error reading " + path.string());
  return buffer.str();
}

}  // namespace

Tokenizer Tokenizer::load(const std::filesystem::path& model_dir) {
  std::error_code ec;
  require(std::filesystem::is_directory(model_dir, ec), ErrorKind::not_found,
          "tokenizer: model directory " + model_dir.string() +
              " does not exist or is not a directory (hint: pass the directory of a Hugging "
              "Face checkpoint)");
  const std::filesystem::path json_path = model_dir / "tokenizer.json";
  require(std::filesystem::is_regular_file(json_path, ec), ErrorKind::not_found,
          "tokenizer: no tokenizer.json in " + model_dir.string() +
              " (hint: Tandem needs the Hugging Face 'fast' tokenizer file; copy tokenizer.json "
              "from the model's repository into this directory)");
  const std::filesystem::path config_path = model_dir / "tokenizer_config.json";
  const std::string config =
      std::filesystem::is_regular_file(config_path, ec) ? read_file(config_path) : std::string();
  return from_json(read_file(json_path), config, json_path.string());
}

Tokenizer Tokenizer::from_json(const std::string& tokenizer_json,
                               const std::string& tokenizer_config_json,
                               const std::string& source_name) {
  return Tokenizer(build_tokenizer(tokenizer_json, tokenizer_config_json, source_name));
}

std::vector<int32_t> Tokenizer::encode(std::string_view text, bool add_special) const {
  const Impl& m = *impl_;
  if (const size_t bad = utf8::find_invalid(text); bad != std::string_view::npos) {
    throw Error(ErrorKind::invalid_argument,
                "tokenizer: text is not valid UTF-8 (first bad byte at offset " +
                    std::to_string(bad) + "; hint: send text encoded as UTF-8)");
  }
  std::vector<int32_t> ids;
  ids.reserve(text.size() / 3 + m.prefix.size() + m.suffix.size());
  if (add_special) ids.insert(ids.end(), m.prefix.begin(), m.prefix.end());

  std::vector<AddedTokenMatcher::Segment> segments;
  m.added_matcher->split(text, segments);
  std::vector<std::string_view> pieces;
  std::string normalized, prefixed;
  for (const auto& segment : segments) {
    if (segment.id >= 0) {
      ids.push_back(segment.id);
      continue;
    }
    std::string_view section = segment.text;  // never empty
    if (m.nfc && !is_trivially_nfc(section)) {
      normalized = nfc_normalize(section);
      section = normalized;
    }
    if (m.add_prefix_space && section.front() != ' ') {
      prefixed.assign(1, ' ');
      prefixed.append(section);
      section = prefixed;
    }
    m.pre_tokenizer.split(section, pieces);
    for (std::string_view piece : pieces) m.model->encode_word(piece, ids);
  }
  if (add_special) ids.insert(ids.end(), m.suffix.begin(), m.suffix.end());
  return ids;
}

void Tokenizer::append_token_bytes(int32_t id, std::string& out) const {
  const Impl& m = *impl_;
  if (id < 0 || static_cast<size_t>(id) >= m.tokens.size()) {
    throw Error(ErrorKind::invalid_argument,
                "tokenizer: token id " + std::to_string(id) + " is out of range [0, " +
                    std::to_string(m.tokens.size()) + ") for " + m.source_name +
                    " (hint: the ids come from a different model's vocabulary)");
  }
  const Impl::TokenEntry& entry = m.tokens[id];
  switch (entry.kind) {
    case Impl::TokenKind::unused:  // a hole in the id range decodes to nothing, as in HF
      return;
    case Impl::TokenKind::vocab:
      byte_level::append_decoded(out, entry.text);
      return;
    case Impl::TokenKind::added:  // added tokens are plain text, not byte-mapped
      out += entry.text;
      return;
  }
}

std::string Tokenizer::decode(std::span<const int32_t> ids, bool skip_special) const {
  std::string bytes;
  for (const int32_t id : ids) {
    if (skip_special && is_special(id)) continue;
    append_token_bytes(id, bytes);
  }
  std::string text;
  text.reserve(bytes.size());
  utf8::append_lossy(text, bytes);
  return text;
}

int Tokenizer::vocab_size() const { return static_cast<int>(impl_->tokens.size()); }
std::optional<int32_t> Tokenizer::bos_id() const { return impl_->bos; }
std::optional<int32_t> Tokenizer::eos_id() const { return impl_->eos; }
const std::string& Tokenizer::source_name() const { return impl_->source_name; }

std::optional<int32_t> Tokenizer::token_id(std::string_view token) const {
  const Impl& m = *impl_;
  if (const auto it = m.added_ids.find(token); it != m.added_ids.end()) return it->second;
  if (const auto it = m.model->vocab().find(token); it != m.model->vocab().end()) return it->second;
  return std::nullopt;
}

std::string Tokenizer::token_text(int32_t id) const {
  const Impl& m = *impl_;
  if (id < 0 || static_cast<size_t>(id) >= m.tokens.size() ||
      m.tokens[id].kind == Impl::TokenKind::unused) {
    throw Error(ErrorKind::invalid_argument,
                "tokenizer: no token has id " + std::to_string(id) + " in " + m.source_name);
  }
  return m.tokens[id].text;
}

bool Tokenizer::is_special(int32_t id) const {
  const Impl& m = *impl_;
  if (id < 0 || static_cast<size_t>(id) >= m.tokens.size()) return false;
  return m.tokens[id].special || id == m.bos || id == m.eos;
}

}  // namespace tandem
