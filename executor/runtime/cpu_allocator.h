// The one tracking CPU allocator of the executor: LibTorch's default CPU
// allocator wrapped to count the bytes of live tensors (all threads) and
// their maximum. Equivalence tests read it to prove that a step frees what it
// allocates; `pipewright profile` and the benches read the activation and
// stash bytes and peaks from it. Torch-free header (cpu_allocator.cc is the
// c10 side).
#pragma once

#include <cstdint>

namespace pw::exec {

// Replaces LibTorch's CPU allocator with the tracking one (idempotent; the
// wrapper lives for the process). Call before allocating the tensors to be
// counted: blocks allocated before it are not counted when freed.
void InstallTrackingCpuAllocator();
// Bytes currently allocated through it, and the largest value since the last
// ResetTrackedCpuPeak (or the install). 0 before InstallTrackingCpuAllocator.
int64_t TrackedCpuBytes();
int64_t TrackedCpuPeakBytes();
// Peak := live bytes now.
void ResetTrackedCpuPeak();

}  // namespace pw::exec
