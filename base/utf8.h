// UTF-8: the one set of encode / decode helpers (RFC 3629) for the
// tokenizers, the streaming text reader and the terminal escaping. Two
// readings of bytes coexist on purpose: the lenient one of the tokenizers
// (Utf8CharLength: a byte that starts no complete sequence is a character of
// its own, as in Hugging Face tokenizers' byte handling) and the strict one
// of Utf8WellFormedLength (no overlong forms, no surrogates, nothing above
// U+10FFFF), for deciding what may be printed as is. Positions and lengths
// are byte offsets. Torch-free; the per-character helpers are inline (the
// tokenizers call them once per character).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace pw {

// True for a continuation byte (10xxxxxx): one that never starts a character.
inline bool Utf8IsContinuation(unsigned char c) { return (c & 0xC0) == 0x80; }

// Length in bytes (1 to 4) of the character starting at s[i], by its lead
// byte, lenient: 1 for a byte that is not a lead byte, and for a sequence
// cut short by the end of `s` or by a byte that is not a continuation byte.
// Does not reject overlong forms or surrogates. REQUIRES: i < s.size().
inline size_t Utf8CharLength(std::string_view s, size_t i) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  const size_t n = c < 0x80 ? 1 : (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 1;
  if (i + n > s.size()) return 1;
  for (size_t k = 1; k < n; ++k)
    if (!Utf8IsContinuation(static_cast<unsigned char>(s[i + k]))) return 1;
  return n;
}

// Code point of the character s[i, i + len), `len` as Utf8CharLength gives
// it (a lone byte of length 1 decodes to its own value, 0x00-0xFF).
inline uint32_t Utf8Decode(std::string_view s, size_t i, size_t len) {
  const unsigned char c = static_cast<unsigned char>(s[i]);
  if (len == 1) return c;
  uint32_t cp = c & (len == 2 ? 0x1F : len == 3 ? 0x0F : 0x07);
  for (size_t k = 1; k < len; ++k) cp = (cp << 6) | (static_cast<unsigned char>(s[i + k]) & 0x3F);
  return cp;
}

// The UTF-8 bytes (1 to 4) of code point `cp`. REQUIRES: cp <= 0x10FFFF
// (surrogates are encoded as any other value).
std::string Utf8Encode(uint32_t cp);

// Length in bytes (2 to 4) of the well-formed multi-byte sequence starting
// at s[i], or 0 when there is none (an ASCII byte, a stray or invalid byte,
// an overlong form, a surrogate, a value above U+10FFFF, a sequence cut
// short). REQUIRES: i < s.size().
size_t Utf8WellFormedLength(std::string_view s, size_t i);

// Length of the longest prefix of s[0, n) that ends on a character boundary
// (n itself when s[n] is not a continuation byte, or n >= s.size()); n again
// when no boundary is found before it (nothing but continuation bytes), so
// the result is 0 only for n == 0.
inline size_t Utf8Cut(std::string_view s, size_t n) {
  size_t cut = n;
  while (cut > 0 && cut < s.size() && Utf8IsContinuation(static_cast<unsigned char>(s[cut]))) --cut;
  return cut == 0 ? n : cut;
}

}  // namespace pw
