// Communicators by kind name, for the CLI (`pipewright run --comm`,
// `pipewright profile`): the one place that knows which implementations this
// build compiled in (NCCL only where the CUDA toolkit and NCCL were found at
// configure time), so its callers need no #ifdef. Torch-free and MPI-header-free.
//
// Kinds:
//   "mpi"   MpiCommunicator: host buffers over MPI point-to-point
//           (mpi_communicator.h). REQUIRES an MpiEnvironment alive.
//   "nccl"  NcclCommunicator: device buffers over NCCL, bootstrapped through
//           an MpiCommunicator (spec.bootstrap "mpi"; REQUIRES an
//           MpiEnvironment alive) or a TcpCommunicator (spec.bootstrap
//           "tcp": torchrun) that also carries its AllGather / Barrier and
//           whose Split forms its groups (nccl_communicator.h).
//   "tcp"   TcpCommunicator: a full mesh of sockets, rendezvous at
//           MASTER_ADDR:MASTER_PORT, for torchrun (tcp_communicator.h).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/status.h"
#include "executor/comm/communicator.h"
#include "executor/comm/tcp_communicator.h"

namespace pw::exec {

// Every kind name, compiled in or not: {"mpi", "nccl", "tcp"}.
std::vector<std::string> CommunicatorKinds();

// True if this build can make `kind`: "mpi" and "tcp" always, "nccl" only
// when the NCCL communicator was compiled in; false for unknown names.
bool CommunicatorAvailable(const std::string& kind);

// Ok if this build can make `kind`. InvalidArgument "<flag> <kind>: ..." for
// an unknown name (listing the known ones) and for "nccl" in a build without
// NCCL (saying that CUDA or NCCL was not found at configure time).
Status CheckCommunicatorKind(const std::string& kind, const std::string& flag);

struct CommunicatorSpec {
  std::string kind = "mpi";
  // A Wait or collective without progress for this long fails with
  // CommError naming the peer, instead of blocking forever (0 = forever).
  // nccl: applies to its MPI bootstrap (AllGather, Barrier).
  double watchdog_s = 0.0;
  // nccl: the GPU is DeviceForRank(local_rank, CUDA device count).
  int local_rank = 0;
  // nccl: what carries the ncclUniqueId and the AllGather / Barrier: "mpi"
  // (MPI_COMM_WORLD) or "tcp" (the rendezvous below; torchrun).
  std::string bootstrap = "mpi";
  // tcp, and nccl over tcp: this process's rank and the number of ranks
  // (the MPI kinds read MPI_COMM_WORLD instead), and the rendezvous;
  // tcp.watchdog_s is replaced by watchdog_s above.
  int rank = 0;
  int world_size = 1;
  TcpOptions tcp;
  // Names the kind in errors ("--comm nccl: ...").
  std::string flag = "--comm";
};

// A communicator together with what it is built on (for nccl, the MPI
// communicator that bootstraps it). Destroy it before the MpiEnvironment.
class CommunicatorHandle {
 public:
  CommunicatorHandle(std::unique_ptr<Communicator> bootstrap, std::unique_ptr<Communicator> comm,
                     std::function<Status()> finish);
  ~CommunicatorHandle();
  CommunicatorHandle(const CommunicatorHandle&) = delete;
  CommunicatorHandle& operator=(const CommunicatorHandle&) = delete;

  // The communicator to post messages on; lives as long as this handle.
  Communicator& comm() { return *comm_; }
  // Waits for communication still queued on device streams after the last
  // step (nccl: Synchronize); Ok at once for host communicators. Errors:
  // CommError from the device runtime.
  Status Finish();

 private:
  std::unique_ptr<Communicator> bootstrap_;  // outlives comm_ (destroyed after it)
  std::unique_ptr<Communicator> comm_;
  std::function<Status()> finish_;
};

// Makes a communicator of spec.kind. Collective: every rank calls it with the
// same spec.kind (mpi, nccl over mpi: over MPI_COMM_WORLD; tcp, nccl over
// tcp: over spec.world_size processes). Errors: CheckCommunicatorKind's;
// nccl: InvalidArgument when no CUDA device is visible (checked before any
// rendezvous, naming the CUDA error) or spec.bootstrap is neither mpi nor
// tcp; CommError from creating the communicator (naming the rank and the
// MPI / NCCL / socket error).
StatusOr<std::unique_ptr<CommunicatorHandle>> MakeCommunicator(const CommunicatorSpec& spec);

}  // namespace pw::exec
