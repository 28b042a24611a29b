// Numbers and byte sizes as pipewright prints and reads them: one formatter
// per style, shared by every layer (messages, tables, reports), and the one
// parser of sizes as users write them (--memory-limit 80GiB).
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"

namespace pw {

// printf into a std::string of whatever length the result needs. Never fails
// (an encoding error gives "").
std::string StrFormat(const char* fmt, ...) __attribute__((format(printf, 1, 2)));

// `x` in printf's %g: six significant digits, no trailing zeros ("2", "2.5",
// "1e-05", "inf"). For messages that quote a flag or field value.
std::string FormatShort(double x);

// `x` in %.17g: enough digits to read back the same double. For messages
// that must show a value exactly (a weight, a config field).
std::string FormatExact(double x);

// A byte count in binary units for people: "80.00 GiB" (>= 1 GiB), "512.0 MiB"
// (>= 1 MiB), else "123 B"; negative counts keep their sign.
std::string FormatBytes(int64_t bytes);

// Parses a memory size as users write it: a positive number and an optional
// unit, "80GiB", "80 GB" (10^9), "85899345920" (bytes), "512MiB", "1.5TiB";
// binary units B, KiB/K, MiB/M, GiB/G, TiB/T and decimal KB, MB, GB, TB, any
// case. Rounded to the nearest byte. InvalidArgument naming `flag` and the
// text for anything else: no number, an unknown unit, a size <= 0, below
// one byte, or above 2^62 bytes.
StatusOr<int64_t> ParseBytes(const std::string& text, const std::string& flag = "--memory-limit");

}  // namespace pw
