// Reads tokenizer.json (+ tokenizer_config.json) into Tokenizer::Impl,
// checking every field Tandem relies on so a damaged or unsupported file
// fails at load with a message naming the file and the JSON path.
#include <algorithm>
#include <limits>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/tokenizer/tokenizer_impl.h"

namespace tandem {
namespace {

using json = nlohmann::json;
using Impl = Tokenizer::Impl;

constexpr char kDamagedHint[] =
    " (hint: the file is damaged or was edited by hand; download it again from the model's "
    "repository)";
constexpr char kUnsupportedHint[] =
    " (hint: Tandem reads byte-level BPE tokenizers, the kind GPT-2, Llama 3 and Qwen 2/3 ship)";

// Error reporting bound to one file.
struct Source {
  std::string name;

  [[noreturn]] void corrupt(const std::string& where, const std::string& what) const {
    throw Error(ErrorKind::corrupt_data, name + ": " + where + ": " + what + kDamagedHint);
  }
  [[noreturn]] void unsupported(const std::string& where, const std::string& what) const {
    throw Error(ErrorKind::unsupported, name + ": " + where + ": " + what + kUnsupportedHint);
  }

  const json& member(const json& object, const char* key, const std::string& where) const {
    if (!object.is_object()) corrupt(where, "expected a JSON object");
    const auto it = object.find(key);
    if (it == object.end()) corrupt(where, std::string("missing field \"") + key + "\"");
    return *it;
  }
  std::string string_at(const json& object, const char* key, const std::string& where) const {
    const json& value = member(object, key, where);
    if (!value.is_string()) corrupt(where + "." + key, "expected a string");
    return value.get<std::string>();
  }
  bool bool_or(const json& object, const char* key, bool fallback, const std::string& where) const {
    const auto it = object.find(key);
    if (it == object.end() || it->is_null()) return fallback;
    if (!it->is_boolean()) corrupt(where + "." + key, "expected true or false");
    return it->get<bool>();
  }
  int32_t id_of(const json& value, const std::string& where) const {
    if (!value.is_number_integer() || value.get<int64_t>() < 0 ||
        value.get<int64_t>() >= std::numeric_limits<int32_t>::max()) {
      corrupt(where, "expected a token id (an integer >= 0), got " + value.dump());
    }
    return static_cast<int32_t>(value.get<int64_t>());
  }
  // "type" of a component; a missing type reads as "".
  std::string type_of(const json& component, const std::string& where) const {
    if (!component.is_object()) corrupt(where, "expected a JSON object");
    const auto it = component.find("type");
    if (it == component.end()) return "";
    if (!it->is_string()) corrupt(where + ".type", "expected a string");
    return it->get<std::string>();
  }
};

json parse_json(const std::string& text, const std::string& name) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw Error(ErrorKind::corrupt_data, name + ": not valid JSON: " + e.what() +
                                             " (hint: the file may be truncated or an HTML "
                                             "error page; download it again)");
  }
}

std::unique_ptr<BpeModel> parse_model(const json& model, const Source& src,
                                      std::vector<Impl::TokenEntry>& tokens) {
  const std::string type = src.type_of(model, "model");
  if (type != "BPE" && !(type.empty() && model.contains("merges"))) {
    src.unsupported("model.type", "model type '" + type + "' is not supported (only BPE is)");
  }
  if (src.bool_or(model, "byte_fallback", false, "model")) {
    src.unsupported("model.byte_fallback",
                    "byte_fallback BPE (SentencePiece style) is not supported");
  }
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const auto it = model.find(key);
    if (it != model.end() && !it->is_null() &&
        !(it->is_string() && it->get<std::string>().empty())) {
      src.unsupported(std::string("model.") + key, "a non-empty value is not supported");
    }
  }
  if (const auto it = model.find("dropout"); it != model.end() && !it->is_null()) {
    if (!it->is_number() || it->get<double>() != 0.0) {
      src.unsupported("model.dropout", "BPE dropout (random merges) is not supported");
    }
  }

  const json& vocab_json = src.member(model, "vocab", "model");
  if (!vocab_json.is_object()) src.corrupt("model.vocab", "expected an object of token -> id");
  StringMap<int32_t> vocab;
  vocab.reserve(vocab_json.size());
  for (const auto& [token, id_json] : vocab_json.items()) {
    const int32_t id = src.id_of(id_json, "model.vocab[\"" + token + "\"]");
    vocab.emplace(token, id);
    if (static_cast<size_t>(id) >= tokens.size()) tokens.resize(id + size_t{1});
    tokens[id] = {token, Impl::TokenKind::vocab, false};
  }

  const json& merges_json = src.member(model, "merges", "model");
  if (!merges_json.is_array()) src.corrupt("model.merges", "expected an array");
  std::vector<std::pair<std::string, std::string>> merges;
  merges.reserve(merges_json.size());
  for (size_t i = 0; i < merges_json.size(); ++i) {
    const json& m = merges_json[i];
    const std::string where = "model.merges[" + std::to_string(i) + "]";
    if (m.is_string()) {  // "left right": the format before tokenizers 0.20
      const std::string s = m.get<std::string>();
      const size_t space = s.find(' ');
      if (space == std::string::npos || s.find(' ', space + 1) != std::string::npos) {
        src.corrupt(where, "merge \"" + s + "\" is not two tokens separated by one space");
      }
      merges.emplace_back(s.substr(0, space), s.substr(space + 1));
    } else if (m.is_array() && m.size() == 2 && m[0].is_string() && m[1].is_string()) {
      merges.emplace_back(m[0].get<std::string>(), m[1].get<std::string>());
    } else {
      src.corrupt(where, "expected \"left right\" or [\"left\", \"right\"], got " + m.dump());
    }
  }

  BpeOptions options;
  options.ignore_merges = src.bool_or(model, "ignore_merges", false, "model");
  options.fuse_unk = src.bool_or(model, "fuse_unk", false, "model");
  if (const auto it = model.find("unk_token"); it != model.end() && !it->is_null()) {
    if (!it->is_string()) src.corrupt("model.unk_token", "expected a string or null");
    const auto found = vocab.find(it->get<std::string>());
    if (found == vocab.end()) {
      src.corrupt("model.unk_token", "'" + it->get<std::string>() + "' is not in model.vocab");
    }
    options.unk_id = found->second;
  }
  return std::make_unique<BpeModel>(std::move(vocab), merges, options, src.name);
}

struct PreTokenizerState {
  bool byte_level = false;
  bool add_prefix_space = false;
  int steps = 0;
};

void parse_pre_tokenizer(const json& p, const std::string& where, const Source& src,
                         PreTokenizer& out, PreTokenizerState& state) {
  const std::string type = src.type_of(p, where);
  if (type == "Sequence") {
    const json& list = src.member(p, "pretokenizers", where);
    if (!list.is_array()) src.corrupt(where + ".pretokenizers", "expected an array");
    for (size_t i = 0; i < list.size(); ++i) {
      parse_pre_tokenizer(list[i], where + ".pretokenizers[" + std::to_string(i) + "]", src, out,
                          state);
    }
    return;
  }
  // Splits run on raw text and the byte mapping happens in BpeModel, which is
  // only equivalent when ByteLevel comes last.
  if (state.byte_level) src.unsupported(where, "a pre-tokenizer after ByteLevel is not supported");
  if (type == "Split") {
    const json& pattern = src.member(p, "pattern", where);
    std::string text;
    bool literal = false;
    if (pattern.is_object() && pattern.contains("Regex")) {
      text = src.string_at(pattern, "Regex", where + ".pattern");
    } else if (pattern.is_object() && pattern.contains("String")) {
      text = src.string_at(pattern, "String", where + ".pattern");
      literal = true;
    } else {
      src.corrupt(where + ".pattern", "expected {\"Regex\": ...} or {\"String\": ...}");
    }
    if (src.bool_or(p, "invert", false, where)) {
      src.unsupported(where + ".invert", "inverted Split patterns are not supported");
    }
    const std::string behavior = src.string_at(p, "behavior", where);
    RegexSplit::Behavior b = RegexSplit::Behavior::isolated;
    if (behavior == "Removed") {
      b = RegexSplit::Behavior::removed;
    } else if (behavior != "Isolated") {
      src.unsupported(where + ".behavior", "Split behavior '" + behavior +
                                               "' is not supported (Isolated and Removed are)");
    }
    out.add_step(RegexSplit(text, literal, b, src.name + ": " + where));
    ++state.steps;
  } else if (type == "ByteLevel") {
    state.byte_level = true;
    // Hugging Face's defaults for fields an older file may leave out.
    state.add_prefix_space = src.bool_or(p, "add_prefix_space", true, where);
    if (state.add_prefix_space && state.steps > 0) {
      src.unsupported(where + ".add_prefix_space",
                      "add_prefix_space after a Split is not supported");
    }
    if (src.bool_or(p, "use_regex", true, where)) {
      out.add_step(RegexSplit(kGpt2SplitPattern, false, RegexSplit::Behavior::isolated,
                              src.name + ": " + where));
    }
  } else {
    src.unsupported(where, "pre-tokenizer type '" + type + "' is not supported");
  }
}

bool parse_normalizer(const json& n, const std::string& where, const Source& src) {
  if (n.is_null()) return false;
  const std::string type = src.type_of(n, where);
  if (type == "NFC") return true;
  if (type == "Sequence") {
    const json& list = src.member(n, "normalizers", where);
    if (!list.is_array()) src.corrupt(where + ".normalizers", "expected an array");
    bool nfc = false;
    for (size_t i = 0; i < list.size(); ++i) {
      nfc =
          parse_normalizer(list[i], where + ".normalizers[" + std::to_string(i) + "]", src) || nfc;
    }
    return nfc;
  }
  src.unsupported(where, "normalizer type '" + type + "' is not supported (null and NFC are)");
}

void check_decoder(const json& d, const std::string& where, const Source& src) {
  if (d.is_null()) return;
  const std::string type = src.type_of(d, where);
  if (type == "ByteLevel") return;
  if (type == "Sequence") {
    const json& list = src.member(d, "decoders", where);
    if (!list.is_array()) src.corrupt(where + ".decoders", "expected an array");
    for (size_t i = 0; i < list.size(); ++i) {
      check_decoder(list[i], where + ".decoders[" + std::to_string(i) + "]", src);
    }
    return;
  }
  src.unsupported(where, "decoder type '" + type + "' is not supported (ByteLevel is)");
}

std::optional<int32_t> lookup(const Impl& impl, const std::string& token) {
  if (const auto it = impl.added_ids.find(token); it != impl.added_ids.end()) return it->second;
  if (const auto it = impl.model->vocab().find(token); it != impl.model->vocab().end()) {
    return it->second;
  }
  return std::nullopt;
}

// TemplateProcessing.single: special tokens before sequence "A" form the
// prefix, those after it the suffix.
void parse_template(const json& t, const std::string& where, const Source& src, Impl& impl) {
  const json& single = src.member(t, "single", where);
  if (!single.is_array()) src.corrupt(where + ".single", "expected an array");
  const json* specials = t.contains("special_tokens") ? &t["special_tokens"] : nullptr;
  bool seen_sequence = false;
  for (size_t i = 0; i < single.size(); ++i) {
    const std::string item_where = where + ".single[" + std::to_string(i) + "]";
    const json& item = single[i];
    if (item.is_object() && item.contains("Sequence")) {
      seen_sequence = true;
      continue;
    }
    if (!item.is_object() || !item.contains("SpecialToken")) {
      src.corrupt(item_where, "expected {\"SpecialToken\": ...} or {\"Sequence\": ...}");
    }
    const std::string name =
        src.string_at(item["SpecialToken"], "id", item_where + ".SpecialToken");
    std::vector<int32_t> ids;
    if (specials != nullptr && specials->is_object() && specials->contains(name)) {
      const json& entry_ids =
          src.member((*specials)[name], "ids", where + ".special_tokens." + name);
      if (!entry_ids.is_array())
        src.corrupt(where + ".special_tokens." + name, "ids: expected an array");
      for (const json& id : entry_ids)
        ids.push_back(src.id_of(id, where + ".special_tokens." + name));
    } else if (const auto id = lookup(impl, name)) {
      ids.push_back(*id);
    } else {
      src.corrupt(item_where, "special token '" + name +
                                  "' is neither in special_tokens nor in the vocabulary");
    }
    auto& target = seen_sequence ? impl.suffix : impl.prefix;
    target.insert(target.end(), ids.begin(), ids.end());
  }
}

void parse_post_processor(const json& p, const std::string& where, const Source& src, Impl& impl) {
  if (p.is_null()) return;
  const std::string type = src.type_of(p, where);
  if (type == "ByteLevel") return;  // only adjusts offsets, which Tandem does not report
  if (type == "TemplateProcessing") {
    parse_template(p, where, src, impl);
  } else if (type == "Sequence") {
    const json& list = src.member(p, "processors", where);
    if (!list.is_array()) src.corrupt(where + ".processors", "expected an array");
    for (size_t i = 0; i < list.size(); ++i) {
      parse_post_processor(list[i], where + ".processors[" + std::to_string(i) + "]", src, impl);
    }
  } else {
    src.unsupported(where, "post-processor type '" + type + "' is not supported");
  }
}

void parse_added_tokens(const json& list, const Source& src, Impl& impl) {
  if (list.is_null()) return;
  if (!list.is_array()) src.corrupt("added_tokens", "expected an array");
  std::vector<AddedToken> added;
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string where = "added_tokens[" + std::to_string(i) + "]";
    AddedToken t;
    t.id = src.id_of(src.member(list[i], "id", where), where + ".id");
    t.content = src.string_at(list[i], "content", where);
    t.special = src.bool_or(list[i], "special", false, where);
    t.lstrip = src.bool_or(list[i], "lstrip", false, where);
    t.rstrip = src.bool_or(list[i], "rstrip", false, where);
    t.normalized = src.bool_or(list[i], "normalized", !t.special, where);
    t.single_word = src.bool_or(list[i], "single_word", false, where);
    if (t.content.empty()) src.corrupt(where + ".content", "an added token cannot be empty");
    if (static_cast<size_t>(t.id) >= impl.tokens.size()) impl.tokens.resize(t.id + size_t{1});
    impl.tokens[t.id] = {t.content, Impl::TokenKind::added, t.special};
    impl.added_ids.emplace(t.content, t.id);
    added.push_back(std::move(t));
  }
  impl.added_matcher = std::make_unique<AddedTokenMatcher>(added);
}

// tokenizer_config.json's bos_token / eos_token: a string, null, or an
// AddedToken object {"content": ...}. Absent and null both read as nullopt.
std::optional<std::string> config_token(const json& config, const char* key, const Source& src) {
  const auto it = config.find(key);
  if (it == config.end() || it->is_null()) return std::nullopt;
  if (it->is_string()) return it->get<std::string>();
  if (it->is_object()) return src.string_at(*it, "content", key);
  src.corrupt(key, "expected a token string, null or {\"content\": ...}");
}

// Applies tokenizer_config.json: BOS/EOS identities and add_bos_token /
// add_eos_token, which (like transformers' Llama tokenizers) override whether
// the template's BOS/EOS is added.
void apply_config(const std::string& text, const std::string& source_name, Impl& impl) {
  // Errors name the config file: tokenizer_config.json beside tokenizer.json.
  const std::string suffix = "tokenizer.json";
  const bool is_path =
      source_name.size() >= suffix.size() &&
      source_name.compare(source_name.size() - suffix.size(), suffix.size(), suffix) == 0;
  const Source src{is_path ? source_name.substr(0, source_name.size() - suffix.size()) +
                                 "tokenizer_config.json"
                           : source_name + " (tokenizer_config.json)"};
  std::optional<std::string> bos_name, eos_name;
  std::optional<bool> add_bos, add_eos;
  if (!text.empty()) {
    const json config = parse_json(text, src.name);
    if (!config.is_object()) src.corrupt("(top level)", "expected a JSON object");
    bos_name = config_token(config, "bos_token", src);
    eos_name = config_token(config, "eos_token", src);
    auto flag = [&](const char* key) -> std::optional<bool> {
      const auto it = config.find(key);
      if (it == config.end() || it->is_null()) return std::nullopt;
      if (!it->is_boolean()) src.corrupt(key, "expected true or false");
      return it->get<bool>();
    };
    add_bos = flag("add_bos_token");
    add_eos = flag("add_eos_token");
  }
  auto resolve = [&](const std::optional<std::string>& name,
                     const char* key) -> std::optional<int32_t> {
    if (!name) return std::nullopt;
    const auto id = lookup(impl, *name);
    if (!id) src.corrupt(key, "'" + *name + "' is not a token of tokenizer.json");
    return id;
  };
  impl.bos = resolve(bos_name, "bos_token");
  impl.eos = resolve(eos_name, "eos_token");
  if (!impl.bos && !bos_name && !impl.prefix.empty()) impl.bos = impl.prefix.front();

  if (add_bos && impl.bos) {
    const bool has = !impl.prefix.empty() && impl.prefix.front() == *impl.bos;
    if (*add_bos && !has) impl.prefix.insert(impl.prefix.begin(), *impl.bos);
    if (!*add_bos && has) impl.prefix.erase(impl.prefix.begin());
  }
  if (add_eos && impl.eos) {
    const bool has = !impl.suffix.empty() && impl.suffix.back() == *impl.eos;
    if (*add_eos && !has) impl.suffix.push_back(*impl.eos);
    if (!*add_eos && has) impl.suffix.pop_back();
  }
}

std::shared_ptr<Impl> build(const std::string& tokenizer_json, const std::string& config_json,
                            const std::string& source_name) {
  const Source src{source_name};
  const json root = parse_json(tokenizer_json, source_name);
  if (!root.is_object()) src.corrupt("(top level)", "expected a JSON object");
  auto impl = std::make_shared<Impl>();
  impl->source_name = source_name;
  impl->model = parse_model(src.member(root, "model", "(top level)"), src, impl->tokens);
  parse_added_tokens(root.value("added_tokens", json()), src, *impl);
  if (!impl->added_matcher)
    impl->added_matcher = std::make_unique<AddedTokenMatcher>(std::vector<AddedToken>{});
  impl->nfc = parse_normalizer(root.value("normalizer", json()), "normalizer", src);

  const json pre = root.value("pre_tokenizer", json());
  if (pre.is_null()) src.unsupported("pre_tokenizer", "null (byte-level BPE needs ByteLevel)");
  PreTokenizerState state;
  parse_pre_tokenizer(pre, "pre_tokenizer", src, impl->pre_tokenizer, state);
  if (!state.byte_level)
    src.unsupported("pre_tokenizer", "no ByteLevel step (only byte-level BPE is supported)");
  impl->add_prefix_space = state.add_prefix_space;

  check_decoder(root.value("decoder", json()), "decoder", src);
  parse_post_processor(root.value("post_processor", json()), "post_processor", src, *impl);
  apply_config(config_json, source_name, *impl);
  if (impl->tokens.empty()) src.corrupt("model.vocab", "the vocabulary is empty");
  return impl;
}

}  // namespace

std::shared_ptr<const Tokenizer::Impl> build_tokenizer(const std::string& tokenizer_json,
                                                       const std::string& tokenizer_config_json,
                                                       const std::string& source_name) {
  try {
    return build(tokenizer_json, tokenizer_config_json, source_name);
  } catch (const json::exception& e) {
    // A field of an unexpected JSON type that no check above caught.
    throw Error(ErrorKind::corrupt_data,
                source_name + ": unexpected JSON content: " + e.what() + kDamagedHint);
  }
}

}  // namespace tandem
