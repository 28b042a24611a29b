// Communicator: point-to-point messages between pipeline ranks, plus the two
// small collectives the executor needs at start-up and per step.
// Torch-free and MPI-free: buffers are raw bytes, so the interpreter and its
// tests never see LibTorch or <mpi.h>.
//
// Implementations: MpiCommunicator (CPU buffers, mpi_communicator.h),
// LoopbackCommunicator (ranks as threads of one process, for tests,
// loopback_communicator.h), TcpCommunicator (tcp_communicator.h) and
// NcclCommunicator (device buffers, nccl_communicator.h): it keeps the same
// FIFO-per-channel guarantee and fuses each batch of posts into one group
// (ncclGroupStart/End; docs/ARCHITECTURE.md, "The executor at run time").
//
// Channels: for each ordered rank pair (src, dst) there is one FIFO channel
// per direction: the k-th Isend from src to dst on channel c matches the k-th
// Irecv posted by dst from src on c (PLAN_FORMAT rule 4).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace pw::exec {

enum class Channel : int {
  kForward = 0,   // activations, stage s -> s+1 (SEND_F / RECV_F)
  kBackward = 1,  // input gradients, stage s -> s-1 (SEND_B / RECV_B)
};

// Element type of a data-parallel collective's buffer (gradients and
// parameters: the run's dtype).
enum class ElementType : int { kFloat32 = 0, kFloat64 = 1 };
// 4 or 8.
inline int64_t ElementBytes(ElementType t) { return t == ElementType::kFloat64 ? 8 : 4; }

// Opaque handle of a posted send or receive (or collective); valid until Wait returns (or
// Test returns true or an error).
using RequestId = int64_t;

class Communicator {
 public:
  virtual ~Communicator() = default;

  virtual int rank() const = 0;
  virtual int size() const = 0;
  // "mpi", "loopback", "tcp" or "nccl": for messages to people only; the
  // runtime asks the capabilities below, never the name.
  virtual std::string name() const = 0;

  // ---- Capabilities ----
  // True when the messages between two ranks travel over one FIFO per rank
  // pair, matched in posting order without a tag, and a post may block until
  // its peer posts the matching operation (NCCL). A plan must then also pass
  // the rendezvous check (PLAN_FORMAT rule 6b) and the pair order
  // (schedules/validate.h CheckPairOrder). False (the default): channels are
  // tagged and posts never block (MPI, TCP, loopback).
  virtual bool one_fifo_per_pair() const { return false; }
  // True when message and collective buffers must be in the compute
  // device's memory (NCCL); false (the default): host memory, GPU tensors are
  // staged through it.
  virtual bool device_buffers() const { return false; }
  // True when Split and the data-parallel collectives below work (MPI,
  // NCCL): a plan with dp_size > 1 can run. False (the default: loopback,
  // TCP, whose Split only bootstraps NCCL groups): such a plan is refused
  // before any compute (RefuseDataParallel).
  virtual bool data_parallel() const { return false; }

  // Posts a non-blocking send of `bytes` bytes at `data` to `peer`; never
  // blocks. REQUIRES: `data` stays valid and unchanged until Wait(returned id)
  // returned, or Test(returned id) returned true.
  // Errors: CommError naming rank and peer.
  virtual StatusOr<RequestId> Isend(int peer, Channel channel, const void* data, int64_t bytes) = 0;
  // Posts a non-blocking receive of exactly `bytes` bytes into `data` from
  // `peer`; never blocks. REQUIRES: `data` stays valid until Wait(id) (or a
  // Test(id) that returned true).
  virtual StatusOr<RequestId> Irecv(int peer, Channel channel, void* data, int64_t bytes) = 0;
  // Blocks until the request completes. For a receive, CommError if the
  // message that arrived has a different byte count than was posted (shapes
  // are fixed by the plan; a mismatch means the ranks disagree on it).
  virtual Status Wait(RequestId id) = 0;
  // Non-blocking completion test: true once the request has completed, after
  // which `id` is consumed exactly as by Wait (do not Wait or Test it again;
  // a send's buffer may then be freed or reused, a receive's buffer read).
  // False: still in flight, `id` stays valid. Errors: those Wait would report
  // for the request (after which, as after a failed Wait, the step is lost);
  // Internal for an unknown id.
  // Implementations may use the call to drive progress (MPI_Test); it never
  // posts or reorders operations, so FIFO / rendezvous order is unchanged.
  virtual StatusOr<bool> Test(RequestId id) = 0;

  // Brackets a run of consecutive posts (Isend/Irecv) that may be issued
  // together: NCCL issues them as one group (ncclGroupStart/End). The
  // interpreter brackets each run of consecutive SEND/RECV actions of a rank's
  // list; since lowered plans pass the rendezvous check one operation at a
  // time, issuing a run together (which only removes ordering inside it)
  // cannot deadlock. Default: nothing (MPI and loopback post at once).
  virtual Status BeginBatch() { return Status::Ok(); }
  virtual Status EndBatch() { return Status::Ok(); }

  // Every rank contributes `mine`; returns all contributions, index = rank.
  // Collective: every rank must call it, in the same order.
  virtual StatusOr<std::vector<std::string>> AllGather(const std::string& mine) = 0;
  // Collective barrier.
  virtual Status Barrier() = 0;

  // ---- Data parallelism (plan dp_size > 1; docs/DATA_PARALLEL.md) ----
  // Splits this communicator like MPI_Comm_split: the ranks that pass the
  // same `color` form one new communicator, ranked by `key` (ties by this
  // communicator's rank). `label` names it in errors ("pipeline",
  // "data-parallel": "data-parallel rank 1 (world rank 3)"). Collective over this communicator; every rank
  // gets its own group. The result must not outlive this communicator.
  // Default (loopback, tcp): InvalidArgument naming the communicator, so a
  // data-parallel plan is refused before any compute.
  virtual StatusOr<std::unique_ptr<Communicator>> Split(int color, int key, const std::string& label);
  // Non-blocking collectives over every rank of this communicator, completed
  // by Wait / Test like a message (same watchdog). Every rank must post the
  // same collectives in the same order with the same counts. `count` is in
  // elements of `type`; buffers are host memory (mpi) or device memory
  // (nccl) and must stay valid until the request completed.
  //  IallReduceSum: in place, data[i] = sum over ranks of data[i].
  //  IreduceScatterSum: `send` holds size() blocks of `count` elements;
  //    rank r gets the sum over ranks of block r in `recv` (count elements).
  //  IallGatherBlocks: `send` holds `count` elements; `recv` gets size()
  //    blocks of `count`, block r = rank r's `send`.
  // Default: InvalidArgument, as Split. Errors: CommError naming the rank.
  virtual StatusOr<RequestId> IallReduceSum(void* data, int64_t count, ElementType type);
  virtual StatusOr<RequestId> IreduceScatterSum(const void* send, void* recv, int64_t count, ElementType type);
  virtual StatusOr<RequestId> IallGatherBlocks(const void* send, void* recv, int64_t count, ElementType type);
  // Latency-critical waits (a tensor-parallel group, whose ranks post each
  // small collective in lockstep, dozens per microbatch): Wait first polls
  // without sleeping (yielding the core to other runnable threads between
  // polls) for up to `seconds`, then as usual. Open MPI advances a
  // non-blocking collective only inside MPI_Test, so a sleeping back-off
  // adds up to its sleep to every round of every collective. 0 (the
  // default): the usual back-off only. Default implementation: nothing
  // (communicators whose waits block).
  virtual void SetSpinWait(double seconds) { (void)seconds; }
};

// The refusal of a plan with dp_size > 1 on `comm` when
// !comm.data_parallel(): InvalidArgument naming the communicator, plan
// --dp and the launchers that run data parallelism.
Status RefuseDataParallel(const Communicator& comm);

// AllGather of a vector of doubles (same length on every rank): result[r] is
// rank r's vector.
StatusOr<std::vector<std::vector<double>>> AllGatherDoubles(Communicator& comm, const std::vector<double>& mine);

}  // namespace pw::exec
