#include "base/printable.h"

#include <cstdio>

#include "base/utf8.h"

namespace pw {

std::string EscapeForTerminal(const std::string& text, size_t max_bytes) {
  const size_t end = text.size() < max_bytes ? text.size() : max_bytes;
  std::string out;
  out.reserve(end + 16);
  for (size_t i = 0; i < end;) {
    const unsigned char c = static_cast<unsigned char>(text[i]);
    if (c == '\n' || c == '\t' || (c >= 0x20 && c < 0x7F)) {
      out += static_cast<char>(c);
      ++i;
      continue;
    }
    const size_t n = c >= 0x80 ? Utf8WellFormedLength(text, i) : 0;
    if (n > 0 && i + n <= end) {
      out.append(text, i, n);
      i += n;
      continue;
    }
    char hex[5];
    std::snprintf(hex, sizeof hex, "\\x%02X", c);
    out += hex;
    ++i;
  }
  if (end < text.size()) out += "... (" + std::to_string(text.size()) + " bytes)";
  return out;
}

}  // namespace pw
