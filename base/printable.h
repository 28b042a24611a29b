// Text from a user's file, made safe to print on a terminal: error messages
// quote file content (a bad token, the parser's last read bytes), and a
// binary file given by mistake must not write raw bytes or terminal escape
// sequences.
#pragma once

#include <cstddef>
#include <string>

namespace pw {

// `text` with every byte that is not printable written as \xHH: control
// characters (0x00-0x1F except newline and tab, and 0x7F) and bytes that are
// not part of a well-formed UTF-8 sequence. Well-formed UTF-8 (accented
// names) is kept. Longer than `max_bytes` input bytes: the first `max_bytes`
// are kept and "... (N bytes)" appended. Never fails.
std::string EscapeForTerminal(const std::string& text, size_t max_bytes = 4096);

}  // namespace pw
