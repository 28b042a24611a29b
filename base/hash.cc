#include "base/hash.h"

#include <cstdio>

namespace pw {

uint64_t Fnv1a64Bytes(const void* data, size_t n, uint64_t h) {
  const auto* b = static_cast<const unsigned char*>(data);
  for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * kFnv1aPrime;
  return h;
}

std::string HashHex(uint64_t h) {
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

}  // namespace pw
