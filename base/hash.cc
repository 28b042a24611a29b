#include "base/hash.h"

#include <cstdio>
#include <cstring>

namespace pw {

uint64_t Fnv1a64Bytes(const void* data, size_t n, uint64_t h) {
  const auto* b = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * kFnv1aPrime;
  return h;
}

uint64_t Fnv1a64Words(const void* data, size_t n, uint64_t h) {
  const auto* b = static_cast<const unsigned char*>(data);
  size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    uint64_t w;
    std::memcpy(&w, b + i, 8);  // little-endian hosts (x86-64, aarch64)
    h = (h ^ w) * kFnv1aPrime;
  }
  for (; i < n; ++i) h = (h ^ b[i]) * kFnv1aPrime;
  return h;
}

std::string HashHex(uint64_t h) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

}  // namespace pw
