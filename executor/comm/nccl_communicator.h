// NcclCommunicator: the Communicator over NCCL point-to-point, for CUDA
// buffers (point-to-point on its own stream, each run of posts one group;
// docs/ARCHITECTURE.md). Torch-free and
// CUDA-header-free here: <cuda_runtime_api.h> and <nccl.h> stay in the .cc
// (via nccl_compat.h). Built only when CUDA and NCCL are found
// (PW_WITH_NCCL); PW_HAVE_NCCL is then defined for its users.
//
// Streams: sends and receives run on one communication stream, in the order
// they are posted. Before each operation the comm stream waits (an event,
// no host sync) for the work already queued on the compute stream, so a
// send sees its producer's result; Wait() makes the compute stream wait for
// the operation's completion event, again without blocking the host; Test()
// asks the event without waiting (cudaEventQuery). Since
// the executor posts in plan order, and the schedules core only emits plans
// that pass the rendezvous check (PLAN_FORMAT rule 6b), one stream of
// blocking NCCL operations cannot deadlock. Only Synchronize() (at the step
// boundary) blocks the host.
//
// Bootstrap: rank 0 calls ncclGetUniqueId; the id travels through the
// bootstrap communicator's AllGather (MPI under mpirun / srun, the TCP
// rendezvous under torchrun, as torch's c10d passes it through its store);
// every rank then calls ncclCommInitRank. Split splits the bootstrap too
// (MPI_Comm_split, or TcpCommunicator::Split's groups) and shares a fresh id
// in each group. NCCL refuses two ranks on one GPU: each rank picks its
// device from the local rank (launch_env.h), `local_rank % device_count`.
#pragma once

#include <memory>
#include <string>

#include "executor/comm/communicator.h"

namespace pw::exec {

class NcclCommunicator : public Communicator {
 public:
  // Creates the NCCL communicator over the ranks of `bootstrap` (which stays
  // owned by the caller and must outlive this object; AllGather and Barrier
  // are delegated to it). Selects CUDA device `device` on this thread.
  // `compute_stream` is the cudaStream_t (as void*) that compute runs on;
  // nullptr = the legacy default stream.
  // Errors: CommError naming host, rank and the CUDA/NCCL error text.
  static StatusOr<std::unique_ptr<NcclCommunicator>> Create(Communicator& bootstrap, int device,
                                                            void* compute_stream = nullptr);
  ~NcclCommunicator() override;  // destroys the NCCL comm, streams and events

  int rank() const override;
  int size() const override;
  std::string name() const override { return "nccl"; }
  bool one_fifo_per_pair() const override { return true; }
  bool device_buffers() const override { return true; }
  bool data_parallel() const override { return true; }
  // `data` is device memory. Byte counts must match on both sides (NCCL
  // cannot report a size mismatch: the plan fixes them).
  StatusOr<RequestId> Isend(int peer, Channel channel, const void* data, int64_t bytes) override;
  StatusOr<RequestId> Irecv(int peer, Channel channel, void* data, int64_t bytes) override;
  // Orders the compute stream after the operation (no host wait), then
  // checks for asynchronous NCCL errors.
  Status Wait(RequestId id) override;
  // cudaEventQuery on the operation's completion event (recorded at its
  // group's end; Internal while the group is still open): true once the comm
  // stream has finished the operation, so its device buffer may be freed or
  // reused and a received buffer read by any stream. Never blocks the host.
  // Then checks for asynchronous NCCL errors, as Wait.
  StatusOr<bool> Test(RequestId id) override;
  StatusOr<std::vector<std::string>> AllGather(const std::string& mine) override;
  Status Barrier() override;
  // A new NCCL communicator over the ranks of the same color: the bootstrap
  // is split (MPI_Comm_split), a fresh ncclUniqueId travels through the
  // split bootstrap, and the result owns that bootstrap. Same device and
  // compute stream as this one.
  StatusOr<std::unique_ptr<Communicator>> Split(int color, int key, const std::string& label) override;
  // ncclAllReduce (in place, ncclSum), ncclReduceScatter, ncclAllGather on
  // device buffers, on the comm stream after the compute queued so far;
  // completion as for Isend (events; Wait orders the compute stream after
  // it). Counts are elements (ncclFloat32 / ncclFloat64).
  StatusOr<RequestId> IallReduceSum(void* data, int64_t count, ElementType type) override;
  StatusOr<RequestId> IreduceScatterSum(const void* send, void* recv, int64_t count, ElementType type) override;
  StatusOr<RequestId> IallGatherBlocks(const void* send, void* recv, int64_t count, ElementType type) override;

  // Opens / closes an NCCL group: operations posted in between are issued
  // together at GroupEnd (needed e.g. for a send to oneself), and their
  // completion events are recorded then. Groups do not nest.
  Status GroupStart();
  Status GroupEnd();
  Status BeginBatch() override { return GroupStart(); }
  Status EndBatch() override { return GroupEnd(); }
  // Blocks the host until all posted operations are done (step boundary).
  Status Synchronize();
  // "NCCL 2.28.9 (built with 2.28.9), device 0: NVIDIA H200".
  std::string Describe() const;

 private:
  struct Impl;
  NcclCommunicator();
  std::unique_ptr<Impl> impl_;
};

// Rank 0 of `bootstrap` makes an ncclUniqueId (ncclGetUniqueId, which needs
// no GPU) and every rank receives it through bootstrap.AllGather. Returns
// the id's bytes (sizeof(ncclUniqueId), 128), the same on every rank.
// Collective over `bootstrap`. Errors: CommError naming the rank (NCCL's
// error, the bootstrap's, or an id of the wrong size).
StatusOr<std::string> ShareNcclUniqueId(Communicator& bootstrap);

// Number of CUDA devices visible to this process (0 on any CUDA error; then
// `*why`, when given, holds "cudaGetDeviceCount: <the CUDA error>").
int CudaDeviceCount(std::string* why = nullptr);
// True if at least one CUDA device is usable in this process.
bool CudaDeviceAvailable();

}  // namespace pw::exec
