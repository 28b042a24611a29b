// Shared by the libFuzzer targets (tests/fuzz/README.md): the input as a
// string, and a check that aborts (a crash libFuzzer reports and saves)
// when a property every input must keep is broken.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>

namespace pw::fuzz {

inline std::string Text(const uint8_t* data, size_t size) {
  return std::string(reinterpret_cast<const char*>(data), size);
}

// Aborts with `what` when `ok` is false.
inline void Check(bool ok, const char* what, const std::string& detail = "") {
  if (ok) return;
  std::fprintf(stderr, "fuzz property broken: %s\n%s\n", what, detail.c_str());
  std::abort();
}

// Every error message a reader returns must be printable as it is (the CLI
// prints it): no NUL and no bytes of the input quoted raw beyond what
// EscapeForTerminal lets through.
void CheckPrintable(const std::string& message);

}  // namespace pw::fuzz
