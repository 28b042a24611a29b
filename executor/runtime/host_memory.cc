// executor/runtime/host_memory.h: glibc mallopt settings.
#include "executor/runtime/host_memory.h"

#include <climits>
#include <cstdlib>
#include <cstring>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace pw::exec {

bool KeepFreedHostMemory() {
  const char* policy = std::getenv("PW_HOST_MEMORY");
  if (policy != nullptr && std::strcmp(policy, "release") == 0) return false;
#if defined(__GLIBC__)
  // A fixed mmap threshold also stops glibc's dynamic adjustment of both.
  // 32 MiB is DEFAULT_MMAP_THRESHOLD_MAX on 64-bit glibc; larger is refused.
  static const bool ok = mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024) == 1 && mallopt(M_TRIM_THRESHOLD, INT_MAX) == 1;
  return ok;
#else
  return false;
#endif
}

}  // namespace pw::exec
