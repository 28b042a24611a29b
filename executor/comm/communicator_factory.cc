#include "executor/comm/communicator_factory.h"

#include <cstdlib>

#include "base/printable.h"
#include "executor/comm/launch_env.h"
#include "executor/comm/mpi_communicator.h"
#ifdef PW_HAVE_NCCL
#include "executor/comm/nccl_communicator.h"
#endif

namespace pw::exec {

namespace {

// Whether pw_exec_comm_nccl was linked into this build (it defines
// PW_HAVE_NCCL for its users).
#ifdef PW_HAVE_NCCL
constexpr bool kNcclCompiledIn = true;
#else
constexpr bool kNcclCompiledIn = false;
#endif

StatusOr<std::unique_ptr<Communicator>> MakeMpi(double watchdog_s) {
  PW_ASSIGN_OR_RETURN(std::unique_ptr<MpiCommunicator> mpi, MpiCommunicator::Create());
  mpi->SetWatchdog(watchdog_s);
  return std::unique_ptr<Communicator>(std::move(mpi));
}

StatusOr<std::unique_ptr<Communicator>> MakeTcp(const CommunicatorSpec& spec) {
  TcpOptions tcp = spec.tcp;
  tcp.watchdog_s = spec.watchdog_s;
  PW_ASSIGN_OR_RETURN(std::unique_ptr<TcpCommunicator> comm, TcpCommunicator::Create(spec.rank, spec.world_size, tcp));
  return std::unique_ptr<Communicator>(std::move(comm));
}

StatusOr<std::unique_ptr<CommunicatorHandle>> MakeNccl(const CommunicatorSpec& spec) {
#ifdef PW_HAVE_NCCL
  if (spec.bootstrap != "mpi" && spec.bootstrap != "tcp")
    return Status::InvalidArgument(spec.flag + " nccl: bootstrap '" + spec.bootstrap + "' is neither mpi nor tcp");
  // Before any rendezvous: every rank refuses alone, none waits for a peer.
  std::string why;
  if (CudaDeviceCount(&why) == 0) {
    const char* visible = std::getenv("CUDA_VISIBLE_DEVICES");
    return Status::InvalidArgument(
        spec.flag + " nccl: rank " + std::to_string(spec.rank) + " sees no CUDA device (" +
        (why.empty() ? "cudaGetDeviceCount: 0 devices" : why) +
        (visible != nullptr ? std::string(", CUDA_VISIBLE_DEVICES=") + visible : std::string()) +
        "): NCCL moves GPU buffers; on CPUs leave out --comm nccl (" +
        (spec.bootstrap == "tcp" ? "torchrun: TCP messages" : "MPI messages") + ")");
  }
  std::unique_ptr<Communicator> bootstrap;
  if (spec.bootstrap == "tcp") {
    PW_ASSIGN_OR_RETURN(bootstrap, MakeTcp(spec));
  } else {
    PW_ASSIGN_OR_RETURN(bootstrap, MakeMpi(spec.watchdog_s));
  }
  // One GPU per rank (NCCL refuses two ranks on one GPU). Compute runs on
  // LibTorch's default stream (nullptr = the legacy default stream).
  PW_ASSIGN_OR_RETURN(std::unique_ptr<NcclCommunicator> nccl,
                      NcclCommunicator::Create(*bootstrap, DeviceForRank(spec.local_rank, CudaDeviceCount()), nullptr));
  NcclCommunicator* raw = nccl.get();
  return std::make_unique<CommunicatorHandle>(std::move(bootstrap), std::move(nccl),
                                              [raw] { return raw->Synchronize(); });
#else
  return CheckCommunicatorKind("nccl", spec.flag);  // the not-compiled-in error
#endif
}

}  // namespace

CommunicatorHandle::CommunicatorHandle(std::unique_ptr<Communicator> bootstrap, std::unique_ptr<Communicator> comm,
                                       std::function<Status()> finish)
    : bootstrap_(std::move(bootstrap)), comm_(std::move(comm)), finish_(std::move(finish)) {}

CommunicatorHandle::~CommunicatorHandle() {
  comm_.reset();  // before the communicator it is built on
  bootstrap_.reset();
}

Status CommunicatorHandle::Finish() { return finish_ ? finish_() : Status::Ok(); }

namespace {

StatusOr<std::unique_ptr<CommunicatorHandle>> MakeMpiHandle(const CommunicatorSpec& spec) {
  PW_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> comm, MakeMpi(spec.watchdog_s));
  return std::make_unique<CommunicatorHandle>(nullptr, std::move(comm), nullptr);
}

StatusOr<std::unique_ptr<CommunicatorHandle>> MakeTcpHandle(const CommunicatorSpec& spec) {
  PW_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> comm, MakeTcp(spec));
  return std::make_unique<CommunicatorHandle>(nullptr, std::move(comm), nullptr);
}

// The communicator kinds, one row each (the way schedules/registry.cc holds
// schedule families): a new communicator is its own files plus one row here.
struct CommunicatorKindInfo {
  const char* name;
  bool compiled_in;
  // Why a kind that is not compiled in is missing (the error's text).
  const char* missing;
  StatusOr<std::unique_ptr<CommunicatorHandle>> (*make)(const CommunicatorSpec& spec);
};

const CommunicatorKindInfo kKinds[] = {
    {"mpi", true, "", MakeMpiHandle},
    {"nccl", kNcclCompiledIn,
     "this pipewright was built without NCCL (CUDA toolkit or NCCL not found at configure time)", MakeNccl},
    {"tcp", true, "", MakeTcpHandle},
};

const CommunicatorKindInfo* FindKind(const std::string& name) {
  for (const CommunicatorKindInfo& k : kKinds)
    if (name == k.name) return &k;
  return nullptr;
}

}  // namespace

std::vector<std::string> CommunicatorKinds() {
  std::vector<std::string> names;
  for (const CommunicatorKindInfo& k : kKinds) names.push_back(k.name);
  return names;
}

bool CommunicatorAvailable(const std::string& kind) {
  const CommunicatorKindInfo* k = FindKind(kind);
  return k != nullptr && k->compiled_in;
}

Status CheckCommunicatorKind(const std::string& kind, const std::string& flag) {
  const CommunicatorKindInfo* k = FindKind(kind);
  if (k != nullptr && k->compiled_in) return Status::Ok();
  if (k != nullptr) return Status::InvalidArgument(flag + " " + kind + ": " + k->missing);
  std::string known;
  for (const std::string& name : CommunicatorKinds()) known += (known.empty() ? "" : ", ") + name;
  return Status::InvalidArgument(flag + " " + EscapeForTerminal(kind, 64) + ": unknown communicator (known: " + known +
                                 ")");
}

StatusOr<std::unique_ptr<CommunicatorHandle>> MakeCommunicator(const CommunicatorSpec& spec) {
  PW_RETURN_IF_ERROR(CheckCommunicatorKind(spec.kind, spec.flag));
  return FindKind(spec.kind)->make(spec);
}

}  // namespace pw::exec
