#include "executor/data/hf_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <queue>
#include <sstream>
#include <tuple>
#include <unordered_map>

namespace pw::exec {

using json = nlohmann::json;

namespace {

// GPT-2's byte -> code point table (see ByteLevelChar).
const std::array<uint32_t, 256>& ByteToCodePoint() {
  static const std::array<uint32_t, 256> table = [] {
    std::array<uint32_t, 256> t{};
    uint32_t next = 256;
    for (int b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      t[b] = printable ? static_cast<uint32_t>(b) : next++;
    }
    return t;
  }();
  return table;
}

std::string Utf8(uint32_t cp) {
  std::string s;
  if (cp < 0x80) {
    s.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    s.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    s.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
  return s;
}

// Length of the UTF-8 character starting at s[i] (1 for an invalid byte or
// a truncated sequence: such bytes are characters of their own).
size_t CharLen(const std::string& s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
  if (i + n > s.size()) return 1;
  for (size_t k = 1; k < n; ++k)
    if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return 1;
  return n;
}

// Code point of the UTF-8 character s[i, i+len).
uint32_t CodePoint(const std::string& s, size_t i, size_t len) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (len == 1) return c;
  uint32_t cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
  for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return cp;
}

bool IsUnicodeSpace(uint32_t cp) {
  return cp == ' ' || (cp >= 0x09 && cp <= 0x0D) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F || cp == 0x3000;
}

void ReplaceAll(std::string& s, const std::string& from, const std::string& to) {
  if (from.empty()) return;
  std::string out;
  out.reserve(s.size());
  size_t pos = 0;
  for (size_t hit; (hit = s.find(from, pos)) != std::string::npos; pos = hit + from.size()) {
    out.append(s, pos, hit - pos);
    out += to;
  }
  out.append(s, pos, std::string::npos);
  s.swap(out);
}

// A compiled PCRE2 pattern (JIT when available), owned.
struct Regex {
  pcre2_code* code = nullptr;
  ~Regex() {
    if (code) pcre2_code_free(code);
  }
};

}  // namespace

std::string ByteLevelChar(unsigned char b) { return Utf8(ByteToCodePoint()[b]); }

struct HfTokenizer::Impl {
  std::string shown;  // --tokenizer as given
  // Model.
  std::unordered_map<std::string, int> token_to_id;          // the model's vocabulary, as written in the file
  std::vector<std::string> id_to_token;                      // every id (model and added tokens); "" where unused
  std::unordered_map<uint64_t, std::pair<int, int>> merges;  // (left id, right id) -> (rank, merged id)
  bool byte_level = false;         // a ByteLevel pre-tokenizer: pieces are raw bytes, symbols start as bytes
  std::array<int, 256> byte_id{};  // byte-level: id of each byte's character, -1 if none
  std::unordered_map<std::string, int> raw_word_to_id;  // byte-level: vocabulary keyed by raw bytes
  bool byte_fallback = false, fuse_unk = false, ignore_merges = false;
  int unk_id = -1;
  std::array<int, 256> fallback_id{};  // <0xNN> ids, -1 if absent
  // Added tokens, matched longest first at the leftmost position.
  struct Added {
    std::string content;
    int id;
    bool special;
  };
  std::vector<Added> added;                          // sorted by length, longest first
  std::array<std::vector<int>, 256> added_by_first;  // first byte -> indices into `added`
  std::vector<bool> is_special;                      // by id
  // Normalizer: Prepend / Replace steps in order.
  struct Norm {
    bool prepend;
    std::string a, b;  // prepend: a; replace: a -> b
  };
  std::vector<Norm> norms;
  // Pre-tokenizer steps in order.
  struct Pre {
    enum Kind { kSplit, kByteLevel, kMetaspace } kind;
    std::shared_ptr<Regex> regex;  // kSplit; kByteLevel with use_regex
    bool removed = false;          // kSplit: behavior Removed (else Isolated)
    std::string replacement;       // kMetaspace
    int prepend = 0;               // kMetaspace: 0 never, 1 first, 2 always
    bool split = true;             // kMetaspace
  };
  std::vector<Pre> pres;
  pcre2_match_data* match_data = nullptr;
  // Post-processor: ids before and after the sequence.
  std::vector<int> prefix_ids, suffix_ids;
  // Decoder steps.
  struct Dec {
    enum Kind { kByteLevel, kReplace, kByteFallback, kFuse, kStrip, kMetaspace } kind;
    std::string a, b;  // kReplace a -> b; kStrip/kMetaspace: a = the character
    int start = 0, stop = 0;
    int prepend = 0;  // kMetaspace
  };
  std::vector<Dec> decs;
  bool has_decoder = false;
  int eot = -1;
  // Word cache (words up to 64 bytes).
  mutable std::mutex cache_mu;
  mutable std::unordered_map<std::string, std::vector<int>> cache;

  ~Impl() {
    if (match_data) pcre2_match_data_free(match_data);
  }

  Status Error(const std::string& field, const std::string& why) const {
    return Status::InvalidArgument("--tokenizer " + shown + ": " + field + ": " + why);
  }

  Status LoadModel(const json& m);
  Status LoadAdded(const json& a);
  Status LoadNormalizer(const json& n, const std::string& field);
  Status LoadPre(const json& p, const std::string& field);
  Status LoadPost(const json& p, const std::string& field);
  Status LoadDecoder(const json& d, const std::string& field);
  StatusOr<std::shared_ptr<Regex>> Compile(const std::string& pattern, bool literal, const std::string& field);

  void Bpe(const std::string& word, std::vector<int>& out) const;
  void BpeUncached(const std::string& word, std::vector<int>& out) const;
  void Segment(std::string text, bool at_start, bool prefix, std::vector<int>& out) const;
  void SplitRegex(const Regex& re, const std::string& s, bool removed, std::vector<std::string>& out) const;
};

namespace {

const json* Member(const json& j, const char* key) {
  if (!j.is_object()) return nullptr;
  auto it = j.find(key);
  return it == j.end() || it->is_null() ? nullptr : &*it;
}

std::string TypeOf(const json& j) {
  const json* t = Member(j, "type");
  return t && t->is_string() ? t->get<std::string>() : "";
}

}  // namespace

StatusOr<std::shared_ptr<Regex>> HfTokenizer::Impl::Compile(const std::string& pattern, bool literal,
                                                            const std::string& field) {
  int err = 0;
  PCRE2_SIZE off = 0;
  auto re = std::make_shared<Regex>();
  re->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(),
                           PCRE2_UTF | PCRE2_UCP | PCRE2_MATCH_INVALID_UTF | (literal ? PCRE2_LITERAL : 0), &err, &off,
                           nullptr);
  if (re->code == nullptr) {
    PCRE2_UCHAR msg[256];
    pcre2_get_error_message(err, msg, sizeof msg);
    return Error(field, "PCRE2 cannot compile the pattern at offset " + std::to_string(off) + ": " +
                            reinterpret_cast<char*>(msg));
  }
  pcre2_jit_compile(re->code, PCRE2_JIT_COMPLETE);  // falls back to the interpreter if JIT is unavailable
  return re;
}

Status HfTokenizer::Impl::LoadModel(const json& m) {
  if (!m.is_object()) return Error("model", "missing or not an object");
  const std::string type = TypeOf(m);
  if (type != "BPE" && !(type.empty() && Member(m, "merges")))
    return Error("model.type", "'" + type + "' is not supported (only BPE)");
  if (const json* d = Member(m, "dropout"); d && !(d->is_number() && d->get<double>() == 0.0))
    return Error("model.dropout", "BPE dropout is not supported (it makes encoding random)");
  for (const char* k : {"continuing_subword_prefix", "end_of_word_suffix"})
    if (const json* s = Member(m, k); s && !(s->is_string() && s->get<std::string>().empty()))
      return Error(std::string("model.") + k, "is not supported (only null)");
  const json* vocab = Member(m, "vocab");
  if (!vocab || !vocab->is_object()) return Error("model.vocab", "missing or not an object");
  int max_id = -1;
  for (auto it = vocab->begin(); it != vocab->end(); ++it) {
    if (!it.value().is_number_integer() || it.value().get<int64_t>() < 0 || it.value().get<int64_t>() > (1 << 30))
      return Error("model.vocab['" + it.key() + "']", "not an id (an integer >= 0)");
    const int id = it.value().get<int>();
    token_to_id[it.key()] = id;
    max_id = std::max(max_id, id);
  }
  id_to_token.assign(static_cast<size_t>(max_id + 1), "");
  for (const auto& [tok, id] : token_to_id) id_to_token[static_cast<size_t>(id)] = tok;
  if (const json* b = Member(m, "byte_fallback")) byte_fallback = b->is_boolean() && b->get<bool>();
  if (const json* b = Member(m, "fuse_unk")) fuse_unk = b->is_boolean() && b->get<bool>();
  if (const json* b = Member(m, "ignore_merges")) ignore_merges = b->is_boolean() && b->get<bool>();
  if (const json* u = Member(m, "unk_token")) {
    if (!u->is_string()) return Error("model.unk_token", "not a string");
    auto it = token_to_id.find(u->get<std::string>());
    if (it == token_to_id.end())
      return Error("model.unk_token", "'" + u->get<std::string>() + "' is not in model.vocab");
    unk_id = it->second;
  }
  for (int b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    auto it = token_to_id.find(name);
    fallback_id[b] = it == token_to_id.end() ? -1 : it->second;
  }
  const json* ms = Member(m, "merges");
  if (!ms || !ms->is_array()) return Error("model.merges", "missing or not an array");
  merges.reserve(ms->size() * 2);
  for (size_t r = 0; r < ms->size(); ++r) {
    const json& e = (*ms)[r];
    const std::string field = "model.merges[" + std::to_string(r) + "]";
    std::string a, b;
    if (e.is_string()) {  // "a b"
      const std::string s = e.get<std::string>();
      const size_t sp = s.find(' ');
      if (sp == std::string::npos || s.find(' ', sp + 1) != std::string::npos)
        return Error(field, "'" + s + "' is not two tokens separated by one space");
      a = s.substr(0, sp);
      b = s.substr(sp + 1);
    } else if (e.is_array() && e.size() == 2 && e[0].is_string() && e[1].is_string()) {  // ["a", "b"]
      a = e[0].get<std::string>();
      b = e[1].get<std::string>();
    } else {
      return Error(field, "neither \"a b\" nor [\"a\", \"b\"]");
    }
    auto ia = token_to_id.find(a), ib = token_to_id.find(b), iab = token_to_id.find(a + b);
    if (ia == token_to_id.end() || ib == token_to_id.end())
      return Error(field, "'" + (ia == token_to_id.end() ? a : b) + "' is not in model.vocab");
    if (iab == token_to_id.end()) return Error(field, "the merged token '" + a + b + "' is not in model.vocab");
    const uint64_t key = (static_cast<uint64_t>(ia->second) << 32) | static_cast<uint32_t>(ib->second);
    merges[key] = std::make_pair(static_cast<int>(r), iab->second);  // a repeated pair: the last rank, as HF's map
  }
  return Status::Ok();
}

Status HfTokenizer::Impl::LoadAdded(const json& a) {
  if (!a.is_array()) return Error("added_tokens", "not an array");
  for (size_t i = 0; i < a.size(); ++i) {
    const json& t = a[i];
    const std::string field = "added_tokens[" + std::to_string(i) + "]";
    const json* content = Member(t, "content");
    const json* id = Member(t, "id");
    if (!content || !content->is_string() || content->get<std::string>().empty())
      return Error(field + ".content", "missing or not a non-empty string");
    if (!id || !id->is_number_integer() || id->get<int64_t>() < 0 || id->get<int64_t>() > (1 << 30))
      return Error(field + ".id", "missing or not an id");
    for (const char* k : {"single_word", "lstrip", "rstrip"})
      if (const json* f = Member(t, k); f && f->is_boolean() && f->get<bool>())
        return Error(field + "." + k, "true is not supported");
    const json* sp = Member(t, "special");
    Added ad{content->get<std::string>(), id->get<int>(), sp && sp->is_boolean() && sp->get<bool>()};
    if (static_cast<size_t>(ad.id) >= id_to_token.size()) id_to_token.resize(static_cast<size_t>(ad.id) + 1);
    id_to_token[static_cast<size_t>(ad.id)] = ad.content;
    added.push_back(ad);
  }
  std::stable_sort(added.begin(), added.end(),
                   [](const Added& x, const Added& y) { return x.content.size() > y.content.size(); });
  for (size_t i = 0; i < added.size(); ++i)
    added_by_first[static_cast<unsigned char>(added[i].content[0])].push_back(static_cast<int>(i));
  is_special.assign(id_to_token.size(), false);
  for (const Added& ad : added) is_special[static_cast<size_t>(ad.id)] = ad.special;
  for (const char* name : {"<|endoftext|>", "<|end_of_text|>", "</s>", "<eos>", "<|im_end|>"}) {
    for (const Added& ad : added)
      if (ad.special && ad.content == name) eot = ad.id;
    if (eot >= 0) break;
  }
  return Status::Ok();
}

Status HfTokenizer::Impl::LoadNormalizer(const json& n, const std::string& field) {
  const std::string type = TypeOf(n);
  if (type == "Sequence") {
    const json* list = Member(n, "normalizers");
    if (!list || !list->is_array()) return Error(field + ".normalizers", "missing or not an array");
    for (size_t i = 0; i < list->size(); ++i)
      PW_RETURN_IF_ERROR(LoadNormalizer((*list)[i], field + ".normalizers[" + std::to_string(i) + "]"));
    return Status::Ok();
  }
  if (type == "Prepend") {
    const json* p = Member(n, "prepend");
    if (!p || !p->is_string()) return Error(field + ".prepend", "missing or not a string");
    norms.push_back({true, p->get<std::string>(), ""});
    return Status::Ok();
  }
  if (type == "Replace") {
    const json* pat = Member(n, "pattern");
    const json* s = pat ? Member(*pat, "String") : nullptr;
    if (!s || !s->is_string()) return Error(field + ".pattern", "only {\"String\": ...} patterns are supported");
    const json* c = Member(n, "content");
    if (!c || !c->is_string()) return Error(field + ".content", "missing or not a string");
    norms.push_back({false, s->get<std::string>(), c->get<std::string>()});
    return Status::Ok();
  }
  return Error(field + ".type", "'" + type +
                                    "' is not supported (supported: Prepend, Replace with a String "
                                    "pattern, a Sequence of these; no Unicode normalization such as NFC)");
}

Status HfTokenizer::Impl::LoadPre(const json& p, const std::string& field) {
  const std::string type = TypeOf(p);
  if (!pres.empty() && pres.back().kind == Pre::kByteLevel)
    return Error(field, "a pre-tokenizer after ByteLevel is not supported");
  if (type == "Sequence") {
    const json* list = Member(p, "pretokenizers");
    if (!list || !list->is_array()) return Error(field + ".pretokenizers", "missing or not an array");
    for (size_t i = 0; i < list->size(); ++i)
      PW_RETURN_IF_ERROR(LoadPre((*list)[i], field + ".pretokenizers[" + std::to_string(i) + "]"));
    return Status::Ok();
  }
  Pre pre{};
  if (type == "Split") {
    pre.kind = Pre::kSplit;
    const json* pat = Member(p, "pattern");
    const json* re = pat ? Member(*pat, "Regex") : nullptr;
    const json* str = pat ? Member(*pat, "String") : nullptr;
    if (!(re && re->is_string()) && !(str && str->is_string()))
      return Error(field + ".pattern", "missing, or neither {\"Regex\": ...} nor {\"String\": ...}");
    PW_ASSIGN_OR_RETURN(
        pre.regex, Compile(re ? re->get<std::string>() : str->get<std::string>(), re == nullptr, field + ".pattern"));
    const json* beh = Member(p, "behavior");
    const std::string b = beh && beh->is_string() ? beh->get<std::string>() : "";
    if (b != "Isolated" && b != "Removed")
      return Error(field + ".behavior", "'" + b + "' is not supported (Isolated, Removed)");
    pre.removed = b == "Removed";
    if (const json* inv = Member(p, "invert"); inv && inv->is_boolean() && inv->get<bool>())
      return Error(field + ".invert", "true is not supported");
  } else if (type == "ByteLevel") {
    pre.kind = Pre::kByteLevel;
    if (const json* a = Member(p, "add_prefix_space"); a && a->is_boolean() && a->get<bool>())
      return Error(field + ".add_prefix_space", "true is not supported");
    const json* ur = Member(p, "use_regex");
    if (!ur || (ur->is_boolean() && ur->get<bool>())) {  // GPT-2's pattern (OpenAI's encoder.py; HF's default)
      PW_ASSIGN_OR_RETURN(
          pre.regex,
          Compile(R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)", false, field));
    }
    for (const Pre& q : pres)
      if (q.kind == Pre::kMetaspace) return Error(field, "ByteLevel after Metaspace is not supported");
    byte_level = true;
  } else if (type == "Metaspace") {
    pre.kind = Pre::kMetaspace;
    const json* r = Member(p, "replacement");
    pre.replacement = r && r->is_string() ? r->get<std::string>() : "\xE2\x96\x81";
    if (pre.replacement.empty()) return Error(field + ".replacement", "empty");
    pre.prepend = 2;
    if (const json* s = Member(p, "prepend_scheme")) {
      const std::string v = s->is_string() ? s->get<std::string>() : "";
      if (v == "always")
        pre.prepend = 2;
      else if (v == "first")
        pre.prepend = 1;
      else if (v == "never")
        pre.prepend = 0;
      else
        return Error(field + ".prepend_scheme", "'" + v + "' is not always, first or never");
    } else if (const json* a = Member(p, "add_prefix_space"); a && a->is_boolean()) {
      pre.prepend = a->get<bool>() ? 2 : 0;
    }
    if (const json* s = Member(p, "split"); s && s->is_boolean()) pre.split = s->get<bool>();
  } else {
    return Error(field + ".type", "'" + type +
                                      "' is not supported (supported: Split, ByteLevel, Metaspace, "
                                      "a Sequence of these)");
  }
  pres.push_back(std::move(pre));
  return Status::Ok();
}

Status HfTokenizer::Impl::LoadPost(const json& p, const std::string& field) {
  const std::string type = TypeOf(p);
  if (type == "ByteLevel") return Status::Ok();  // offsets only: no effect on ids
  if (type == "Sequence") {
    const json* list = Member(p, "processors");
    if (!list || !list->is_array()) return Error(field + ".processors", "missing or not an array");
    for (size_t i = 0; i < list->size(); ++i)
      PW_RETURN_IF_ERROR(LoadPost((*list)[i], field + ".processors[" + std::to_string(i) + "]"));
    return Status::Ok();
  }
  if (type != "TemplateProcessing")
    return Error(field + ".type", "'" + type +
                                      "' is not supported (supported: ByteLevel, TemplateProcessing, "
                                      "a Sequence of these)");
  if (!prefix_ids.empty() || !suffix_ids.empty()) return Error(field, "a second TemplateProcessing is not supported");
  const json* single = Member(p, "single");
  const json* specials = Member(p, "special_tokens");
  if (!single || !single->is_array()) return Error(field + ".single", "missing or not an array");
  int sequences = 0;
  for (size_t i = 0; i < single->size(); ++i) {
    const json& item = (*single)[i];
    const std::string f = field + ".single[" + std::to_string(i) + "]";
    if (const json* seq = Member(item, "Sequence")) {
      const json* id = Member(*seq, "id");
      if (!id || !id->is_string() || id->get<std::string>() != "A")
        return Error(f, "only the sequence $A is supported");
      ++sequences;
    } else if (const json* st = Member(item, "SpecialToken")) {
      const json* name = Member(*st, "id");
      if (!name || !name->is_string()) return Error(f + ".SpecialToken.id", "missing or not a string");
      const json* entry = specials ? Member(*specials, name->get<std::string>().c_str()) : nullptr;
      const json* ids = entry ? Member(*entry, "ids") : nullptr;
      if (!ids || !ids->is_array())
        return Error(field + ".special_tokens['" + name->get<std::string>() + "'].ids", "missing or not an array");
      for (const json& v : *ids) {
        if (!v.is_number_integer() || v.get<int64_t>() < 0 ||
            v.get<int64_t>() >= static_cast<int64_t>(id_to_token.size()))
          return Error(field + ".special_tokens['" + name->get<std::string>() + "'].ids",
                       "an id out of the vocabulary");
        (sequences == 0 ? prefix_ids : suffix_ids).push_back(v.get<int>());
      }
    } else {
      return Error(f, "neither a Sequence nor a SpecialToken");
    }
  }
  if (sequences != 1) return Error(field + ".single", "must hold the sequence $A exactly once");
  return Status::Ok();
}

Status HfTokenizer::Impl::LoadDecoder(const json& d, const std::string& field) {
  const std::string type = TypeOf(d);
  Dec dec{};
  if (type == "Sequence") {
    const json* list = Member(d, "decoders");
    if (!list || !list->is_array()) return Error(field + ".decoders", "missing or not an array");
    for (size_t i = 0; i < list->size(); ++i)
      PW_RETURN_IF_ERROR(LoadDecoder((*list)[i], field + ".decoders[" + std::to_string(i) + "]"));
    return Status::Ok();
  } else if (type == "ByteLevel") {
    dec.kind = Dec::kByteLevel;
  } else if (type == "ByteFallback") {
    dec.kind = Dec::kByteFallback;
  } else if (type == "Fuse") {
    dec.kind = Dec::kFuse;
  } else if (type == "Replace") {
    dec.kind = Dec::kReplace;
    const json* pat = Member(d, "pattern");
    const json* s = pat ? Member(*pat, "String") : nullptr;
    const json* c = Member(d, "content");
    if (!s || !s->is_string()) return Error(field + ".pattern", "only {\"String\": ...} patterns are supported");
    if (!c || !c->is_string()) return Error(field + ".content", "missing or not a string");
    dec.a = s->get<std::string>();
    dec.b = c->get<std::string>();
  } else if (type == "Strip") {
    dec.kind = Dec::kStrip;
    const json* c = Member(d, "content");
    if (!c || !c->is_string() || c->get<std::string>().empty()) return Error(field + ".content", "missing or empty");
    dec.a = c->get<std::string>();
    const json* s0 = Member(d, "start");
    const json* s1 = Member(d, "stop");
    dec.start = s0 && s0->is_number_integer() ? s0->get<int>() : 0;
    dec.stop = s1 && s1->is_number_integer() ? s1->get<int>() : 0;
  } else if (type == "Metaspace") {
    dec.kind = Dec::kMetaspace;
    const json* r = Member(d, "replacement");
    dec.a = r && r->is_string() ? r->get<std::string>() : "\xE2\x96\x81";
    dec.prepend = 2;
    if (const json* s = Member(d, "prepend_scheme"); s && s->is_string() && s->get<std::string>() == "never")
      dec.prepend = 0;
    if (const json* a = Member(d, "add_prefix_space");
        a && a->is_boolean() && !a->get<bool>() && !Member(d, "prepend_scheme"))
      dec.prepend = 0;
  } else {
    return Error(field + ".type", "'" + type +
                                      "' is not supported (supported: ByteLevel, Metaspace, Replace, "
                                      "ByteFallback, Fuse, Strip, a Sequence of these)");
  }
  decs.push_back(dec);
  return Status::Ok();
}

// ------------------------------------------------------------- encoding ---

void HfTokenizer::Impl::SplitRegex(const Regex& re, const std::string& s, bool removed,
                                   std::vector<std::string>& out) const {
  size_t pos = 0, gap = 0;
  while (pos <= s.size()) {
    const int rc = pcre2_match(re.code, reinterpret_cast<PCRE2_SPTR>(s.data()), s.size(), pos, 0, match_data, nullptr);
    if (rc < 0) break;
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(match_data);
    const size_t b = ov[0], e = ov[1];
    if (e == b) {  // an empty match: no piece; go on after the next character
      if (b >= s.size()) break;
      pos = b + CharLen(s, b);
      continue;
    }
    if (b > gap) out.push_back(s.substr(gap, b - gap));
    if (!removed) out.push_back(s.substr(b, e - b));
    gap = pos = e;
  }
  if (gap < s.size()) out.push_back(s.substr(gap));
}

// HF's BPE::merge_word: symbols start as characters (bytes for byte-level),
// then the adjacent pair of lowest merge rank, leftmost first, is merged
// until no pair has a merge.
void HfTokenizer::Impl::BpeUncached(const std::string& word, std::vector<int>& out) const {
  if (ignore_merges) {
    const auto& table = byte_level ? raw_word_to_id : token_to_id;
    if (auto it = table.find(word); it != table.end()) {
      out.push_back(it->second);
      return;
    }
  }
  std::vector<int> sym;
  sym.reserve(word.size());
  bool last_unk = false;
  auto push_unk = [&] {
    if (unk_id < 0) return;
    if (fuse_unk && last_unk) return;
    sym.push_back(unk_id);
    last_unk = true;
  };
  for (size_t i = 0; i < word.size();) {
    if (byte_level) {
      const int id = byte_id[static_cast<unsigned char>(word[i])];
      ++i;
      if (id >= 0) {
        sym.push_back(id);
        last_unk = false;
      } else {
        push_unk();
      }
      continue;
    }
    const size_t n = CharLen(word, i);
    auto it = token_to_id.find(word.substr(i, n));
    if (it != token_to_id.end()) {
      sym.push_back(it->second);
      last_unk = false;
    } else {
      bool all = byte_fallback;
      for (size_t k = 0; all && k < n; ++k) all = fallback_id[static_cast<unsigned char>(word[i + k])] >= 0;
      if (all) {
        for (size_t k = 0; k < n; ++k) sym.push_back(fallback_id[static_cast<unsigned char>(word[i + k])]);
        last_unk = false;
      } else {
        push_unk();
      }
    }
    i += n;
  }
  const int n = static_cast<int>(sym.size());
  if (n <= 1) {
    out.insert(out.end(), sym.begin(), sym.end());
    return;
  }
  std::vector<int> prev(n), next(n);
  std::vector<bool> alive(n, true);
  for (int i = 0; i < n; ++i) {
    prev[i] = i - 1;
    next[i] = i + 1 < n ? i + 1 : -1;
  }
  // (rank, position, merged id); the smallest rank, then position, first.
  using Item = std::tuple<int, int, int>;
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> heap;
  auto lookup = [&](int a, int b) -> const std::pair<int, int>* {
    auto it = merges.find((static_cast<uint64_t>(sym[a]) << 32) | static_cast<uint32_t>(sym[b]));
    return it == merges.end() ? nullptr : &it->second;
  };
  for (int i = 0; i + 1 < n; ++i)
    if (const auto* m = lookup(i, i + 1)) heap.emplace(m->first, i, m->second);
  while (!heap.empty()) {
    const auto [rank, pos, merged] = heap.top();
    heap.pop();
    if (!alive[pos] || next[pos] < 0) continue;
    const int right = next[pos];
    const auto* m = lookup(pos, right);
    if (m == nullptr || m->first != rank || m->second != merged) continue;  // stale
    sym[pos] = merged;
    alive[right] = false;
    next[pos] = next[right];
    if (next[right] >= 0) prev[next[right]] = pos;
    if (prev[pos] >= 0)
      if (const auto* pm = lookup(prev[pos], pos)) heap.emplace(pm->first, prev[pos], pm->second);
    if (next[pos] >= 0)
      if (const auto* nm = lookup(pos, next[pos])) heap.emplace(nm->first, pos, nm->second);
  }
  for (int i = 0; i >= 0; i = next[i]) out.push_back(sym[i]);
}

void HfTokenizer::Impl::Bpe(const std::string& word, std::vector<int>& out) const {
  if (word.empty()) return;
  if (word.size() > 64) {
    BpeUncached(word, out);
    return;
  }
  {
    std::lock_guard<std::mutex> lock(cache_mu);
    if (auto it = cache.find(word); it != cache.end()) {
      out.insert(out.end(), it->second.begin(), it->second.end());
      return;
    }
  }
  std::vector<int> ids;
  BpeUncached(word, ids);
  out.insert(out.end(), ids.begin(), ids.end());
  std::lock_guard<std::mutex> lock(cache_mu);
  if (cache.size() > 200000) cache.clear();
  cache.emplace(word, std::move(ids));
}

// One segment of text between added tokens: normalizer, pre-tokenizer, BPE.
// `at_start`: the segment starts the text (Metaspace "first"); `prefix`:
// Prepend / Metaspace may add the word-start prefix.
void HfTokenizer::Impl::Segment(std::string text, bool at_start, bool prefix, std::vector<int>& out) const {
  for (const Norm& n : norms) {
    if (n.prepend) {
      if (prefix && !text.empty()) text = n.a + text;
    } else {
      ReplaceAll(text, n.a, n.b);
    }
  }
  std::vector<std::string> pieces{std::move(text)}, next;
  for (const Pre& p : pres) {
    next.clear();
    for (std::string& s : pieces) {
      if (p.kind == Pre::kMetaspace) {
        ReplaceAll(s, " ", p.replacement);
        const bool starts = s.compare(0, p.replacement.size(), p.replacement) == 0;
        if (prefix && !starts && (p.prepend == 2 || (p.prepend == 1 && at_start))) s = p.replacement + s;
        if (!p.split) {
          next.push_back(std::move(s));
          continue;
        }
        // MergedWithNext: each replacement character starts a new piece.
        size_t begin = 0;
        for (size_t hit = s.find(p.replacement, 1); hit != std::string::npos;
             hit = s.find(p.replacement, hit + p.replacement.size())) {
          if (hit > begin) next.push_back(s.substr(begin, hit - begin));
          begin = hit;
        }
        if (begin < s.size()) next.push_back(s.substr(begin));
      } else if (p.regex) {
        SplitRegex(*p.regex, s, p.removed, next);
      } else {
        next.push_back(std::move(s));
      }
    }
    pieces.swap(next);
  }
  for (const std::string& w : pieces) Bpe(w, out);
}

HfTokenizer::HfTokenizer() : impl_(std::make_unique<Impl>()) {}
HfTokenizer::~HfTokenizer() = default;

StatusOr<std::unique_ptr<HfTokenizer>> HfTokenizer::Load(const std::string& json_path, const std::string& shown) {
  std::ifstream in(json_path, std::ios::binary);
  if (!in) return Status::NotFound("--tokenizer " + shown + ": cannot open " + json_path);
  std::stringstream ss;
  ss << in.rdbuf();
  json j = json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object())
    return Status::InvalidArgument("--tokenizer " + shown + ": " + json_path +
                                   " is not a JSON object (tokenizer.json)");
  std::unique_ptr<HfTokenizer> t(new HfTokenizer());
  t->path_ = shown;
  Impl& m = *t->impl_;
  m.shown = shown;
  // "truncation" and "padding" (options of HF's batch API) are not applied.
  const json* model = Member(j, "model");
  PW_RETURN_IF_ERROR(m.LoadModel(model ? *model : json()));
  if (const json* a = Member(j, "added_tokens"))
    PW_RETURN_IF_ERROR(m.LoadAdded(*a));
  else
    m.is_special.assign(m.id_to_token.size(), false);
  if (const json* n = Member(j, "normalizer")) PW_RETURN_IF_ERROR(m.LoadNormalizer(*n, "normalizer"));
  if (const json* p = Member(j, "pre_tokenizer")) PW_RETURN_IF_ERROR(m.LoadPre(*p, "pre_tokenizer"));
  if (const json* p = Member(j, "post_processor")) PW_RETURN_IF_ERROR(m.LoadPost(*p, "post_processor"));
  if (const json* d = Member(j, "decoder")) {
    m.has_decoder = true;
    PW_RETURN_IF_ERROR(m.LoadDecoder(*d, "decoder"));
  }
  if (m.byte_level) {
    const auto& cp = ByteToCodePoint();
    std::unordered_map<uint32_t, int> byte_of;
    for (int b = 0; b < 256; ++b) byte_of[cp[b]] = b;
    for (int b = 0; b < 256; ++b) {
      auto it = m.token_to_id.find(Utf8(cp[b]));
      m.byte_id[b] = it == m.token_to_id.end() ? -1 : it->second;
    }
    // The vocabulary keyed by raw bytes (for ignore_merges); tokens with a
    // character outside the byte map never match a byte-level word.
    for (const auto& [tok, id] : m.token_to_id) {
      std::string raw;
      bool ok = true;
      for (size_t i = 0; ok && i < tok.size();) {
        const size_t n = CharLen(tok, i);
        auto it = byte_of.find(CodePoint(tok, i, n));
        if (it == byte_of.end())
          ok = false;
        else
          raw.push_back(static_cast<char>(it->second));
        i += n;
      }
      if (ok) m.raw_word_to_id.emplace(std::move(raw), id);
    }
  }
  m.match_data = pcre2_match_data_create(4, nullptr);
  return t;
}

int64_t HfTokenizer::vocab_size() const { return static_cast<int64_t>(impl_->id_to_token.size()); }
int HfTokenizer::end_of_text_id() const { return impl_->eot; }

std::vector<int> HfTokenizer::EncodePart(const std::string& text, bool starts_document, bool ends_document) const {
  const Impl& m = *impl_;
  std::vector<int> out;
  if (starts_document) out = m.prefix_ids;
  // Added tokens first: at each position the longest that matches.
  size_t seg = 0;
  auto flush = [&](size_t end) {
    if (end > seg) m.Segment(text.substr(seg, end - seg), seg == 0, seg != 0 || starts_document, out);
  };
  for (size_t i = 0; i < text.size();) {
    const auto& cands = m.added_by_first[static_cast<unsigned char>(text[i])];
    int hit = -1;
    for (int c : cands) {
      const std::string& s = m.added[static_cast<size_t>(c)].content;
      if (text.compare(i, s.size(), s) == 0) {
        hit = c;
        break;
      }
    }
    if (hit < 0) {
      ++i;
      continue;
    }
    flush(i);
    out.push_back(m.added[static_cast<size_t>(hit)].id);
    i += m.added[static_cast<size_t>(hit)].content.size();
    seg = i;
  }
  flush(text.size());
  if (ends_document) out.insert(out.end(), m.suffix_ids.begin(), m.suffix_ids.end());
  return out;
}

std::vector<int> HfTokenizer::Encode(const std::string& text) const { return EncodePart(text, true, true); }

size_t HfTokenizer::SafeCut(const std::string& text) const {
  for (size_t p = text.rfind(' '); p != std::string::npos && p > 0; p = text.rfind(' ', p - 1)) {
    // The character before the space must not be whitespace.
    size_t b = p - 1;
    while (b > 0 && (static_cast<unsigned char>(text[b]) & 0xC0) == 0x80 && p - b < 4) --b;
    const size_t n = CharLen(text, b);
    if (b + n != p) continue;
    if (IsUnicodeSpace(CodePoint(text, b, n))) continue;
    // Not inside an added token.
    bool inside = false;
    for (const Impl::Added& a : impl_->added) {
      const size_t len = a.content.size();
      const size_t from = p >= len ? p - len + 1 : 0;
      for (size_t q = text.find(a.content, from); !inside && q != std::string::npos && q < p;
           q = text.find(a.content, q + 1))
        inside = q + len > p;
      if (inside) break;
    }
    if (!inside) return p;
  }
  return 0;
}

// ------------------------------------------------------------- decoding ---

std::string HfTokenizer::Decode(const std::vector<int>& ids) const {
  const Impl& m = *impl_;
  std::vector<std::string> toks;
  for (int id : ids) {
    if (id < 0 || static_cast<size_t>(id) >= m.id_to_token.size()) continue;
    if (m.is_special[static_cast<size_t>(id)]) continue;
    toks.push_back(m.id_to_token[static_cast<size_t>(id)]);
  }
  if (!m.has_decoder) {  // HF: the tokens joined by spaces
    std::string out;
    for (size_t i = 0; i < toks.size(); ++i) out += (i ? " " : "") + toks[i];
    return out;
  }
  static const std::unordered_map<uint32_t, unsigned char> byte_of = [] {
    std::unordered_map<uint32_t, unsigned char> r;
    for (int b = 0; b < 256; ++b) r[ByteToCodePoint()[b]] = static_cast<unsigned char>(b);
    return r;
  }();
  for (const Impl::Dec& d : m.decs) {
    std::vector<std::string> next;
    switch (d.kind) {
      case Impl::Dec::kByteLevel: {  // every character back to its byte (a token with another character: as is)
        std::string all;
        for (const std::string& t : toks) {
          std::string raw;
          bool ok = true;
          for (size_t i = 0; ok && i < t.size();) {
            const size_t n = CharLen(t, i);
            auto it = byte_of.find(CodePoint(t, i, n));
            if (it == byte_of.end())
              ok = false;
            else
              raw.push_back(static_cast<char>(it->second));
            i += n;
          }
          all += ok ? raw : t;
        }
        next.push_back(std::move(all));
        break;
      }
      case Impl::Dec::kReplace:
        for (std::string t : toks) {
          ReplaceAll(t, d.a, d.b);
          next.push_back(std::move(t));
        }
        break;
      case Impl::Dec::kByteFallback: {  // runs of <0xNN>: their bytes if valid UTF-8, else U+FFFD per byte
        std::string bytes;
        auto flush = [&] {
          if (bytes.empty()) return;
          bool valid = true;
          for (size_t i = 0; valid && i < bytes.size();) {
            const size_t n = CharLen(bytes, i);
            valid = !(n == 1 && static_cast<unsigned char>(bytes[i]) >= 0x80);
            i += n;
          }
          if (valid)
            next.push_back(bytes);
          else
            for (size_t i = 0; i < bytes.size(); ++i) next.push_back("\xEF\xBF\xBD");
          bytes.clear();
        };
        for (const std::string& t : toks) {
          unsigned v = 0;
          if (t.size() == 6 && t.compare(0, 3, "<0x") == 0 && t[5] == '>' &&
              std::isxdigit(static_cast<unsigned char>(t[3])) && std::isxdigit(static_cast<unsigned char>(t[4])) &&
              std::sscanf(t.c_str() + 3, "%2x", &v) == 1) {
            bytes.push_back(static_cast<char>(v));
          } else {
            flush();
            next.push_back(t);
          }
        }
        flush();
        break;
      }
      case Impl::Dec::kFuse: {
        std::string all;
        for (const std::string& t : toks) all += t;
        next.push_back(std::move(all));
        break;
      }
      case Impl::Dec::kStrip:
        for (std::string t : toks) {
          for (int k = 0; k < d.start && t.compare(0, d.a.size(), d.a) == 0; ++k) t.erase(0, d.a.size());
          for (int k = 0;
               k < d.stop && t.size() >= d.a.size() && t.compare(t.size() - d.a.size(), d.a.size(), d.a) == 0; ++k)
            t.erase(t.size() - d.a.size());
          next.push_back(std::move(t));
        }
        break;
      case Impl::Dec::kMetaspace:
        for (size_t i = 0; i < toks.size(); ++i) {
          std::string t = toks[i];
          ReplaceAll(t, d.a, (i == 0 && d.prepend != 0) ? "" : " ");
          next.push_back(std::move(t));
        }
        break;
    }
    toks.swap(next);
  }
  std::string out;
  for (const std::string& t : toks) out += t;
  return out;
}

}  // namespace pw::exec
