#include "base/format.h"

#include <cctype>
#include <cmath>
#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <exception>

namespace pw {

std::string StrFormat(const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  va_list again;
  va_copy(again, ap);
  const int n = std::vsnprintf(nullptr, 0, fmt, ap);
  va_end(ap);
  std::string out;
  if (n > 0) {
    out.resize(static_cast<size_t>(n));
    std::vsnprintf(out.data(), out.size() + 1, fmt, again);
  }
  va_end(again);
  return out;
}

std::string FormatShort(double x) { return StrFormat("%g", x); }

std::string FormatExact(double x) { return StrFormat("%.17g", x); }

std::string FormatBytes(int64_t bytes) {
  const double b = static_cast<double>(bytes);
  if (std::llabs(bytes) >= (int64_t{1} << 30)) return StrFormat("%.2f GiB", b / double(int64_t{1} << 30));
  if (std::llabs(bytes) >= (int64_t{1} << 20)) return StrFormat("%.1f MiB", b / double(int64_t{1} << 20));
  return StrFormat("%lld B", static_cast<long long>(bytes));
}

StatusOr<int64_t> ParseBytes(const std::string& text, const std::string& flag) {
  size_t pos = 0;
  double value = 0;
  try {
    value = std::stod(text, &pos);
  } catch (const std::exception&) {
    return Status::InvalidArgument(flag + " '" + text + "': expected a size such as 80GiB, 80GB or 85899345920");
  }
  std::string unit;
  for (size_t k = pos; k < text.size(); ++k)
    if (!std::isspace(static_cast<unsigned char>(text[k])))
      unit += static_cast<char>(std::tolower(static_cast<unsigned char>(text[k])));
  double mult = 0;
  if (unit.empty() || unit == "b")
    mult = 1;
  else if (unit == "kib" || unit == "k")
    mult = 1024.0;
  else if (unit == "mib" || unit == "m")
    mult = 1024.0 * 1024;
  else if (unit == "gib" || unit == "g")
    mult = 1024.0 * 1024 * 1024;
  else if (unit == "tib" || unit == "t")
    mult = 1024.0 * 1024 * 1024 * 1024;
  else if (unit == "kb")
    mult = 1e3;
  else if (unit == "mb")
    mult = 1e6;
  else if (unit == "gb")
    mult = 1e9;
  else if (unit == "tb")
    mult = 1e12;
  if (mult == 0 || !(value > 0))
    return Status::InvalidArgument(
        flag + " '" + text + "': expected a positive size with unit B, KiB, MiB, GiB, TiB (binary) or KB, MB, GB, TB");
  // 1e30, inf: llround would return an unspecified value (a negative limit).
  const double bytes = value * mult;
  if (!(bytes < 0x1p62))
    return Status::InvalidArgument(flag + " '" + text + "': above the largest size of 2^62 bytes (4 EiB)");
  if (bytes < 0.5) return Status::InvalidArgument(flag + " '" + text + "': below one byte");
  return static_cast<int64_t>(std::llround(bytes));
}

}  // namespace pw
