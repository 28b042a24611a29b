// The engine of Hugging Face tokenizer.json tokenizers: the typed description
// that hf_tokenizer_json.cc reads, compiled (PCRE2 patterns, byte-level
// tables, added tokens by first byte) and run: encode (added tokens,
// normalizer, pre-tokenizer, BPE with a word cache, post-processor ids) and
// decode (the decoder steps).
#include "executor/data/hf_tokenizer.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <queue>
#include <tuple>
#include <unordered_map>

#include "base/utf8.h"
#include "executor/data/hf_tokenizer_json.h"

namespace pw::exec {

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

std::string ByteLevelChar(unsigned char b) { return Utf8Encode(ByteToCodePoint()[b]); }

// The description read from the file (whose fields the engine reads as its
// own) and what the engine derives from it at load.
struct HfTokenizer::Impl : HfTokenizerSpec {
  std::string shown;                                    // --tokenizer as given
  std::vector<std::shared_ptr<Regex>> regexes;          // by pre-tokenizer step; null: the step has no pattern
  std::array<int, 256> byte_id{};                       // byte-level: id of each byte's character, -1 if none
  std::unordered_map<std::string, int> raw_word_to_id;  // byte-level: vocabulary keyed by raw bytes
  // Added tokens, matched longest first at the leftmost position: `added`
  // (HfTokenizerSpec) sorted by length, longest first, and by first byte.
  std::array<std::vector<int>, 256> added_by_first;  // first byte -> indices into `added`
  std::vector<bool> is_special;                      // by id
  pcre2_match_data* match_data = nullptr;
  // Word cache (words up to 64 bytes).
  mutable std::mutex cache_mu;
  mutable std::unordered_map<std::string, std::vector<int>> cache;

  ~Impl() {
    if (match_data) pcre2_match_data_free(match_data);
  }

  Status Error(const std::string& field, const std::string& why) const {
    return Status::InvalidArgument("--tokenizer " + shown + ": " + field + ": " + why);
  }

  // Derives the engine's tables from the description (after it is assigned).
  Status Build();
  StatusOr<std::shared_ptr<Regex>> Compile(const std::string& pattern, bool literal, const std::string& field);

  void Bpe(const std::string& word, std::vector<int>& out) const;
  void BpeUncached(const std::string& word, std::vector<int>& out) const;
  void Segment(std::string text, bool at_start, bool prefix, std::vector<int>& out) const;
  void SplitRegex(const Regex& re, const std::string& s, bool removed, std::vector<std::string>& out) const;
};

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
      pos = b + Utf8CharLength(s, b);
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
    const size_t n = Utf8CharLength(word, i);
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
  for (size_t k = 0; k < pres.size(); ++k) {
    const Pre& p = pres[k];
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
      } else if (regexes[k]) {
        SplitRegex(*regexes[k], s, p.removed, next);
      } else {
        next.push_back(std::move(s));
      }
    }
    pieces.swap(next);
  }
  for (const std::string& w : pieces) Bpe(w, out);
}

Status HfTokenizer::Impl::Build() {
  std::stable_sort(added.begin(), added.end(),
                   [](const Added& x, const Added& y) { return x.content.size() > y.content.size(); });
  for (size_t i = 0; i < added.size(); ++i)
    added_by_first[static_cast<unsigned char>(added[i].content[0])].push_back(static_cast<int>(i));
  is_special.assign(id_to_token.size(), false);
  for (const Added& ad : added) is_special[static_cast<size_t>(ad.id)] = ad.special;
  for (const Pre& p : pres) {
    regexes.emplace_back();
    if (p.kind == Pre::kSplit || !p.pattern.empty()) {
      PW_ASSIGN_OR_RETURN(regexes.back(), Compile(p.pattern, p.literal, p.field));
    }
  }
  if (byte_level) {
    const auto& cp = ByteToCodePoint();
    std::unordered_map<uint32_t, int> byte_of;
    for (int b = 0; b < 256; ++b) byte_of[cp[b]] = b;
    for (int b = 0; b < 256; ++b) {
      auto it = token_to_id.find(Utf8Encode(cp[b]));
      byte_id[b] = it == token_to_id.end() ? -1 : it->second;
    }
    // The vocabulary keyed by raw bytes (for ignore_merges); tokens with a
    // character outside the byte map never match a byte-level word.
    for (const auto& [tok, id] : token_to_id) {
      std::string raw;
      bool ok = true;
      for (size_t i = 0; ok && i < tok.size();) {
        const size_t n = Utf8CharLength(tok, i);
        auto it = byte_of.find(Utf8Decode(tok, i, n));
        if (it == byte_of.end())
          ok = false;
        else
          raw.push_back(static_cast<char>(it->second));
        i += n;
      }
      if (ok) raw_word_to_id.emplace(std::move(raw), id);
    }
  }
  match_data = pcre2_match_data_create(4, nullptr);
  return Status::Ok();
}

HfTokenizer::HfTokenizer() : impl_(std::make_unique<Impl>()) {}
HfTokenizer::~HfTokenizer() = default;

StatusOr<std::unique_ptr<HfTokenizer>> HfTokenizer::Load(const std::string& json_path, const std::string& shown) {
  PW_ASSIGN_OR_RETURN(HfTokenizerSpec spec, ReadTokenizerJson(json_path, shown));
  std::unique_ptr<HfTokenizer> t(new HfTokenizer());
  t->path_ = shown;
  Impl& m = *t->impl_;
  static_cast<HfTokenizerSpec&>(m) = std::move(spec);
  m.shown = shown;
  PW_RETURN_IF_ERROR(m.Build());
  return t;
}

int64_t HfTokenizer::vocab_size() const { return static_cast<int64_t>(impl_->id_to_token.size()); }
int HfTokenizer::end_of_text_id() const { return impl_->end_of_text_id; }

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
    while (b > 0 && Utf8IsContinuation(static_cast<unsigned char>(text[b])) && p - b < 4) --b;
    const size_t n = Utf8CharLength(text, b);
    if (b + n != p) continue;
    if (IsUnicodeSpace(Utf8Decode(text, b, n))) continue;
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
            const size_t n = Utf8CharLength(t, i);
            auto it = byte_of.find(Utf8Decode(t, i, n));
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
            const size_t n = Utf8CharLength(bytes, i);
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
