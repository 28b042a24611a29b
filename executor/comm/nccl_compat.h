// The one place that knows CUDA runtime and NCCL versions (version checks are
// not scattered over the sources).
// Included only by nccl_communicator.cc; nothing here leaks into headers
// that other targets include.
#pragma once

#include <cuda_runtime_api.h>
#include <nccl.h>

#include <string>

namespace pw::exec::nccl_compat {

// "NCCL 2.28.9" style version string of the headers we built against.
inline std::string HeaderVersion() {
  return "NCCL " + std::to_string(NCCL_MAJOR) + "." + std::to_string(NCCL_MINOR) + "." + std::to_string(NCCL_PATCH);
}

// Version of the NCCL library loaded at run time, same form.
inline std::string RuntimeVersion() {
  int v = 0;
  if (ncclGetVersion(&v) != ncclSuccess) return "NCCL (unknown)";
  // Since 2.9 the code is major*10000 + minor*100 + patch; before, *1000.
  int major = v >= 10000 ? v / 10000 : v / 1000;
  int minor = v >= 10000 ? (v / 100) % 100 : (v / 100) % 10;
  int patch = v % 100;
  return "NCCL " + std::to_string(major) + "." + std::to_string(minor) + "." + std::to_string(patch);
}

// Non-blocking communicator creation (ncclCommInitRankConfig with
// blocking = 0) exists from NCCL 2.14; we use the blocking call everywhere
// for one code path, and ask for async errors where the library has them.
inline ncclResult_t CommInitRank(ncclComm_t* comm, int nranks, ncclUniqueId id, int rank) {
  return ncclCommInitRank(comm, nranks, id, rank);
}

// Non-blocking event test: *done = whether `event` completed. cudaEventQuery
// reports "not ready" as cudaErrorNotReady, which some CUDA versions also
// leave as the thread's last error; it is cleared here and is no error.
inline cudaError_t EventDone(cudaEvent_t event, bool* done) {
  const cudaError_t err = cudaEventQuery(event);
  *done = err == cudaSuccess;
  if (err == cudaErrorNotReady) {
    (void)cudaGetLastError();
    return cudaSuccess;
  }
  return err;
}

inline ncclResult_t AsyncError(ncclComm_t comm, ncclResult_t* out) {
#if NCCL_VERSION_CODE >= 20400  // ncclCommGetAsyncError appeared in NCCL 2.4
  return ncclCommGetAsyncError(comm, out);
#else
  *out = ncclSuccess;
  return ncclSuccess;
#endif
}

}  // namespace pw::exec::nccl_compat
