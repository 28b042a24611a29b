// Whether this test binary is built with AddressSanitizer (PW_SANITIZE /
// PW_FUZZ; launch/sanitize.sh). Tests use it for two things only:
//   - skipping what ASan cannot honour (its allocator replaces glibc's, so
//     mallopt-based page reuse is not glibc's behaviour there);
//   - sweeping a sub-grid of shapes where the release grid takes minutes
//     under the sanitizers (every code path still runs; the full grid runs
//     in the release build, which CI also tests).
#pragma once

#if defined(__SANITIZE_ADDRESS__)
#define PW_TEST_SANITIZED 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define PW_TEST_SANITIZED 1
#endif
#endif

namespace pw::testing {
#if defined(PW_TEST_SANITIZED)
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif
}  // namespace pw::testing
