// Host allocator policy of a CPU pipeline rank: keep freed memory.
//
// glibc's malloc gives large blocks back to the kernel (munmap of blocks above
// its mmap threshold, and trimming the heap top above its trim threshold) and
// takes them again on the next allocation, so a tensor allocated where the
// process was smaller a moment ago faults in fresh zeroed pages: measured on
// the 2-core CI VM, a 4-block GPT stage's F ran 89 ms while it reused freed
// memory and 119-134 ms while the heap regrew (each F holds 42 MB more);
// a GPipe step after a smaller-peak step ran 10 % slower than the simulator
// said (bench/results/measured_vs_simulated.md, Reading). LibTorch's CUDA
// caching allocator keeps freed device memory for the same reason.
#pragma once

namespace pw::exec {

// Makes this process keep the memory its largest step needed: blocks up to
// 32 MiB come from the heap (glibc's largest mmap threshold) and the heap is
// never trimmed below its peak. Resident memory then stays at the peak
// instead of following each step's live bytes (the counting allocator,
// profile.h, still reports live bytes). Idempotent; call before the first
// step. Returns false where the C library has no such controls (not glibc)
// or refused a setting, or when the environment has PW_HOST_MEMORY=release
// (for comparisons); the process then runs with the C library's policy.
bool KeepFreedHostMemory();

}  // namespace pw::exec
