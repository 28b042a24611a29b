// MpiCommunicator: the Communicator over MPI point-to-point (CPU buffers;
// Debian's Open MPI is not CUDA-aware, so GPU tensors are staged through host
// memory, docs/ARCHITECTURE.md). Channel = MPI tag, so
// MPI's non-overtaking rule gives FIFO per (src, dst, direction).
// <mpi.h> stays inside mpi_communicator.cc.
#pragma once

#include <functional>
#include <memory>
#include <string>

#include "executor/comm/communicator.h"

namespace pw::exec {

// Owns MPI_Init/MPI_Finalize for the process (RAII). Create exactly one, in
// main (or a test main), before any MpiCommunicator; destroy it last.
class MpiEnvironment {
 public:
  // Initialises MPI (MPI_THREAD_FUNNELED) unless already initialised.
  // Errors: CommError if MPI_Init fails.
  static StatusOr<std::unique_ptr<MpiEnvironment>> Init(int* argc, char*** argv);
  ~MpiEnvironment();  // MPI_Finalize if this object initialised MPI
  MpiEnvironment(const MpiEnvironment&) = delete;
  MpiEnvironment& operator=(const MpiEnvironment&) = delete;
  // MPI_COMM_WORLD rank and size.
  int world_rank() const;
  int world_size() const;
  // Terminates every rank of the job (MPI_Abort) with exit code `code`.
  // For main-level code only: used after one rank failed mid-step, when its
  // peers would otherwise wait for its messages forever.
  static void AbortJob(int code);

 private:
  MpiEnvironment() = default;
  bool owns_ = false;
};

class MpiCommunicator : public Communicator {
 public:
  // Duplicates MPI_COMM_WORLD (so messages never mix with other users of the
  // world communicator). REQUIRES: an MpiEnvironment is alive.
  static StatusOr<std::unique_ptr<MpiCommunicator>> Create();
  ~MpiCommunicator() override;  // frees the duplicated communicator

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string name() const override { return "mpi"; }
  bool data_parallel() const override { return true; }
  StatusOr<RequestId> Isend(int peer, Channel channel, const void* data, int64_t bytes) override;
  StatusOr<RequestId> Irecv(int peer, Channel channel, void* data, int64_t bytes) override;
  Status Wait(RequestId id) override;
  // One MPI_Test (which also drives MPI's progress engine); the watchdog does
  // not apply (nothing blocks).
  StatusOr<bool> Test(RequestId id) override;
  StatusOr<std::vector<std::string>> AllGather(const std::string& mine) override;
  Status Barrier() override;
  // MPI_Comm_split of this communicator (an MpiCommunicator with the same
  // watchdog; errors name its members by world rank).
  StatusOr<std::unique_ptr<Communicator>> Split(int color, int key, const std::string& label) override;
  // MPI_Iallreduce (MPI_IN_PLACE, MPI_SUM), MPI_Ireduce_scatter_block and
  // MPI_Iallgather on host buffers (MPI_FLOAT / MPI_DOUBLE); Wait polls them
  // under the watchdog like a message. Errors: CommError for more than
  // INT_MAX elements (MPI's count) and for MPI failures, naming the group's
  // world ranks.
  StatusOr<RequestId> IallReduceSum(void* data, int64_t count, ElementType type) override;
  StatusOr<RequestId> IreduceScatterSum(const void* send, void* recv, int64_t count, ElementType type) override;
  StatusOr<RequestId> IallGatherBlocks(const void* send, void* recv, int64_t count, ElementType type) override;

  // Watchdog: a Wait, AllGather or Barrier that sees no completion for
  // `seconds` returns CommError ("no progress for 30 s ... (--watchdog-s)")
  // instead of blocking forever on a dead or hung peer. 0 = wait forever
  // (the default). The request is left pending: after such an error the
  // process must end (MpiEnvironment::AbortJob), not reuse the communicator.
  void SetWatchdog(double seconds) { watchdog_s_ = seconds; }
  void SetSpinWait(double seconds) override { spin_s_ = seconds; }

 private:
  struct Impl;
  MpiCommunicator();
  // Polls `request` to completion with a growing sleep, honouring the
  // watchdog. `what` names the operation in errors.
  Status Poll(void* request, void* status, const std::string& what);
  // The checks after request `pending` (an Impl::Pending) completed with
  // MPI return code `rc` and `status`: MPI errors, a receive's byte count.
  Status Completed(const void* pending, int rc, void* status, const std::string& what) const;
  // "rank r", or "<label> rank r (world rank g)" in a split communicator.
  std::string Who(int r) const;
  // "world ranks 0, 2" (this communicator's members).
  std::string Members() const;
  // "send to rank 1" / "receive from ..." / the collective's description.
  std::string Describe(const void* pending) const;
  // Registers a collective started by `post(MPI_Request*)`.
  StatusOr<RequestId> PostCollective(const std::string& what, const std::function<int(void*)>& post, int64_t count);
  double watchdog_s_ = 0.0;
  double spin_s_ = 0.0;  // SetSpinWait
  std::unique_ptr<Impl> impl_;
  int rank_ = 0, size_ = 1;
};

}  // namespace pw::exec
