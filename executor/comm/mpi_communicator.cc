#include "executor/comm/mpi_communicator.h"

#include <mpi.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdio>
#include <functional>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "base/format.h"

namespace pw::exec {

namespace {

std::string Host() {
  char buf[256] = {0};
  gethostname(buf, sizeof(buf) - 1);
  return buf;
}

// "MPI_ERR_...: <text>" for an MPI return code.
std::string MpiErrorText(int code) {
  char text[MPI_MAX_ERROR_STRING] = {0};
  int len = 0;
  MPI_Error_string(code, text, &len);
  return std::string(text, len);
}

}  // namespace

StatusOr<std::unique_ptr<MpiEnvironment>> MpiEnvironment::Init(int* argc, char*** argv) {
  std::unique_ptr<MpiEnvironment> env(new MpiEnvironment());
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) {
    int provided = 0;
    int rc = MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided);
    if (rc != MPI_SUCCESS) return Status::CommError("MPI_Init_thread failed: " + MpiErrorText(rc));
    env->owns_ = true;
  }
  return env;
}

MpiEnvironment::~MpiEnvironment() {
  if (!owns_) return;
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

int MpiEnvironment::world_rank() const {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

void MpiEnvironment::AbortJob(int code) { MPI_Abort(MPI_COMM_WORLD, code); }

int MpiEnvironment::world_size() const {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

struct MpiCommunicator::Impl {
  MPI_Comm comm = MPI_COMM_NULL;
  struct Pending {
    MPI_Request request = MPI_REQUEST_NULL;
    bool is_recv = false;
    int peer = 0;
    int64_t bytes = 0;
    std::string collective;  // non-empty for a collective: what it is, for errors
  };
  // World rank of each rank of `comm` (identity for the world's duplicate).
  std::vector<int> world_ranks;
  std::string group_label;  // "" (world) or "data-parallel group" / "pipeline"
  RequestId next_id = 0;
  std::map<RequestId, Pending> pending;
};

MpiCommunicator::MpiCommunicator() : impl_(new Impl()) {}

MpiCommunicator::~MpiCommunicator() {
  if (impl_->comm != MPI_COMM_NULL) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&impl_->comm);
  }
}

StatusOr<std::unique_ptr<MpiCommunicator>> MpiCommunicator::Create() {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (!initialized) return Status::Internal("MpiCommunicator::Create: MPI is not initialised (no MpiEnvironment)");
  std::unique_ptr<MpiCommunicator> c(new MpiCommunicator());
  int rc = MPI_Comm_dup(MPI_COMM_WORLD, &c->impl_->comm);
  if (rc != MPI_SUCCESS) return Status::CommError("MPI_Comm_dup failed: " + MpiErrorText(rc));
  // Return errors instead of aborting the job, so they reach a Status.
  MPI_Comm_set_errhandler(c->impl_->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(c->impl_->comm, &c->rank_);
  MPI_Comm_size(c->impl_->comm, &c->size_);
  for (int r = 0; r < c->size_; ++r) c->impl_->world_ranks.push_back(r);
  return c;
}

std::string MpiCommunicator::Who(int r) const {
  const auto& w = impl_->world_ranks;
  if (r < 0 || r >= static_cast<int>(w.size()) || (w[r] == r && impl_->group_label.empty()))
    return "rank " + std::to_string(r);
  return impl_->group_label + " rank " + std::to_string(r) + " (world rank " + std::to_string(w[r]) + ")";
}

StatusOr<std::unique_ptr<Communicator>> MpiCommunicator::Split(int color, int key, const std::string& label) {
  std::unique_ptr<MpiCommunicator> c(new MpiCommunicator());
  c->watchdog_s_ = watchdog_s_;
  int rc = MPI_Comm_split(impl_->comm, color, key, &c->impl_->comm);
  if (rc != MPI_SUCCESS)
    return Status::CommError(Host() + ": " + Who(rank_) + ": MPI_Comm_split failed: " + MpiErrorText(rc));
  MPI_Comm_set_errhandler(c->impl_->comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(c->impl_->comm, &c->rank_);
  MPI_Comm_size(c->impl_->comm, &c->size_);
  // Name every member by its world rank in errors.
  MPI_Group world_group, group;
  MPI_Comm_group(MPI_COMM_WORLD, &world_group);
  MPI_Comm_group(c->impl_->comm, &group);
  std::vector<int> mine(c->size_), world(c->size_);
  for (int r = 0; r < c->size_; ++r) mine[r] = r;
  MPI_Group_translate_ranks(group, c->size_, mine.data(), world_group, world.data());
  MPI_Group_free(&group);
  MPI_Group_free(&world_group);
  c->impl_->world_ranks = world;
  c->impl_->group_label = label.empty() ? "group" : label;
  return std::unique_ptr<Communicator>(std::move(c));
}

namespace {

MPI_Datatype MpiType(ElementType t) { return t == ElementType::kFloat64 ? MPI_DOUBLE : MPI_FLOAT; }

}  // namespace

StatusOr<RequestId> MpiCommunicator::PostCollective(const std::string& what, const std::function<int(void*)>& post,
                                                    int64_t count) {
  if (count > INT_MAX)
    return Status::CommError(Host() + ": " + Who(rank_) + ": " + what + " of " + std::to_string(count) +
                             " elements exceeds MPI's int count (smaller buckets)");
  Impl::Pending p;
  p.collective = what;
  const int rc = post(&p.request);
  if (rc != MPI_SUCCESS)
    return Status::CommError(Host() + ": " + Who(rank_) + ": " + what + " failed to start: " + MpiErrorText(rc));
  RequestId id = impl_->next_id++;
  impl_->pending[id] = p;
  return id;
}

std::string MpiCommunicator::Members() const {
  std::string s;
  for (size_t r = 0; r < impl_->world_ranks.size(); ++r) s += (r ? ", " : "") + std::to_string(impl_->world_ranks[r]);
  return "world ranks " + s;
}

StatusOr<RequestId> MpiCommunicator::IallReduceSum(void* data, int64_t count, ElementType type) {
  MPI_Comm comm = impl_->comm;
  return PostCollective(
      "all-reduce of " + std::to_string(count) + " elements over " + Members(),
      [&](void* req) {
        return MPI_Iallreduce(MPI_IN_PLACE, data, static_cast<int>(count), MpiType(type), MPI_SUM, comm,
                              static_cast<MPI_Request*>(req));
      },
      count);
}

StatusOr<RequestId> MpiCommunicator::IreduceScatterSum(const void* send, void* recv, int64_t count, ElementType type) {
  MPI_Comm comm = impl_->comm;
  return PostCollective(
      "reduce-scatter of " + std::to_string(count) + " elements per rank over " + Members(),
      [&](void* req) {
        return MPI_Ireduce_scatter_block(send, recv, static_cast<int>(count), MpiType(type), MPI_SUM, comm,
                                         static_cast<MPI_Request*>(req));
      },
      count * size_);
}

StatusOr<RequestId> MpiCommunicator::IallGatherBlocks(const void* send, void* recv, int64_t count, ElementType type) {
  MPI_Comm comm = impl_->comm;
  return PostCollective(
      "all-gather of " + std::to_string(count) + " elements per rank over " + Members(),
      [&](void* req) {
        return MPI_Iallgather(send, static_cast<int>(count), MpiType(type), recv, static_cast<int>(count),
                              MpiType(type), comm, static_cast<MPI_Request*>(req));
      },
      count * size_);
}

StatusOr<RequestId> MpiCommunicator::Isend(int peer, Channel channel, const void* data, int64_t bytes) {
  if (bytes > INT_MAX)
    return Status::CommError("rank " + std::to_string(rank_) + ": message of " + std::to_string(bytes) +
                             " bytes to rank " + std::to_string(peer) + " exceeds MPI's int count");
  Impl::Pending p;
  p.peer = peer;
  p.bytes = bytes;
  int rc = MPI_Isend(data, static_cast<int>(bytes), MPI_BYTE, peer, static_cast<int>(channel), impl_->comm, &p.request);
  if (rc != MPI_SUCCESS)
    return Status::CommError(Host() + ": rank " + std::to_string(rank_) + ": MPI_Isend to rank " +
                             std::to_string(peer) + " failed: " + MpiErrorText(rc));
  RequestId id = impl_->next_id++;
  impl_->pending[id] = p;
  return id;
}

StatusOr<RequestId> MpiCommunicator::Irecv(int peer, Channel channel, void* data, int64_t bytes) {
  if (bytes > INT_MAX)
    return Status::CommError("rank " + std::to_string(rank_) + ": message of " + std::to_string(bytes) +
                             " bytes from rank " + std::to_string(peer) + " exceeds MPI's int count");
  Impl::Pending p;
  p.is_recv = true;
  p.peer = peer;
  p.bytes = bytes;
  // A longer message fails with MPI_ERR_TRUNCATE, a shorter one is caught by
  // comparing the received count on Wait/Test.
  int rc = MPI_Irecv(data, static_cast<int>(bytes), MPI_BYTE, peer, static_cast<int>(channel), impl_->comm, &p.request);
  if (rc != MPI_SUCCESS)
    return Status::CommError(Host() + ": rank " + std::to_string(rank_) + ": MPI_Irecv from rank " +
                             std::to_string(peer) + " failed: " + MpiErrorText(rc));
  RequestId id = impl_->next_id++;
  impl_->pending[id] = p;
  return id;
}

Status MpiCommunicator::Wait(RequestId id) {
  auto it = impl_->pending.find(id);
  if (it == impl_->pending.end())
    return Status::Internal("rank " + std::to_string(rank_) + ": wait on unknown request " + std::to_string(id));
  Impl::Pending p = it->second;
  impl_->pending.erase(it);
  MPI_Status status;
  const std::string what = Describe(&p);
  Status polled = Poll(&p.request, &status, what);
  if (!polled.ok()) return polled;
  return Completed(&p, MPI_SUCCESS, &status, what);
}

StatusOr<bool> MpiCommunicator::Test(RequestId id) {
  auto it = impl_->pending.find(id);
  if (it == impl_->pending.end())
    return Status::Internal("rank " + std::to_string(rank_) + ": test of unknown request " + std::to_string(id));
  Impl::Pending& p = it->second;
  MPI_Status status;
  int done = 0;
  const int rc = MPI_Test(&p.request, &done, &status);
  if (rc == MPI_SUCCESS && !done) return false;
  const Impl::Pending finished = p;
  impl_->pending.erase(it);
  const std::string what = Describe(&finished);
  PW_RETURN_IF_ERROR(Completed(&finished, rc, &status, what));
  return true;
}

std::string MpiCommunicator::Describe(const void* pending) const {
  const auto& p = *static_cast<const Impl::Pending*>(pending);
  if (!p.collective.empty()) return p.collective;
  return std::string(p.is_recv ? "receive from " : "send to ") + Who(p.peer);
}

Status MpiCommunicator::Completed(const void* pending, int rc, void* status_ptr, const std::string& what) const {
  const auto& p = *static_cast<const Impl::Pending*>(pending);
  auto* status = static_cast<MPI_Status*>(status_ptr);
  if (rc != MPI_SUCCESS)
    return Status::CommError(Host() + ": rank " + std::to_string(rank_) + ": " + what +
                             " failed: " + MpiErrorText(rc == MPI_ERR_IN_STATUS ? status->MPI_ERROR : rc));
  if (p.is_recv) {
    int count = 0;
    MPI_Get_count(status, MPI_BYTE, &count);
    if (count != p.bytes)
      return Status::CommError(Host() + ": rank " + std::to_string(rank_) + ": " + what + ": got " +
                               std::to_string(count) + " bytes, expected " + std::to_string(p.bytes));
  }
  return Status::Ok();
}

Status MpiCommunicator::Poll(void* request_ptr, void* status_ptr, const std::string& what) {
  auto* request = static_cast<MPI_Request*>(request_ptr);
  auto* status = static_cast<MPI_Status*>(status_ptr);
  // Poll with a growing sleep instead of MPI_Wait: Open MPI's MPI_Wait spins,
  // and with more ranks than cores (tests, the CPU demo) a spinning rank
  // steals the core a computing rank needs. A message is detected at most
  // ~1 ms late, small next to a compute action.
  const auto t0 = std::chrono::steady_clock::now();
  int rc = MPI_SUCCESS, done = 0;
  // SetSpinWait: poll without sleeping first (a collective of a lockstep
  // group completes within microseconds of its last member posting it).
  if (spin_s_ > 0) {
    for (int n = 0;; ++n) {
      rc = MPI_Test(request, &done, status);
      if (rc != MPI_SUCCESS || done) break;
      if ((n & 63) == 63 && std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > spin_s_)
        break;
      std::this_thread::yield();
    }
    if (rc != MPI_SUCCESS || done) {
      if (rc != MPI_SUCCESS)
        return Status::CommError(Host() + ": " + Who(rank_) + ": " + what +
                                 " failed: " + MpiErrorText(rc == MPI_ERR_IN_STATUS ? status->MPI_ERROR : rc));
      return Status::Ok();
    }
  }
  for (int us = 20;; us = std::min(us * 2, 1000)) {
    rc = MPI_Test(request, &done, status);
    if (rc != MPI_SUCCESS || done) break;
    if (watchdog_s_ > 0 && std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() > watchdog_s_) {
      return Status::CommError(Host() + ": " + Who(rank_) + ": " + what + ": no progress for " +
                               FormatShort(watchdog_s_) +
                               " s (watchdog --watchdog-s): the peer died, hangs, or is far behind");
    }
    std::this_thread::sleep_for(std::chrono::microseconds(us));
  }
  if (rc != MPI_SUCCESS)
    return Status::CommError(Host() + ": " + Who(rank_) + ": " + what +
                             " failed: " + MpiErrorText(rc == MPI_ERR_IN_STATUS ? status->MPI_ERROR : rc));
  return Status::Ok();
}

StatusOr<std::vector<std::string>> MpiCommunicator::AllGather(const std::string& mine) {
  int len = static_cast<int>(mine.size());
  std::vector<int> lens(size_), offsets(size_);
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Status status;
  int rc = MPI_Iallgather(&len, 1, MPI_INT, lens.data(), 1, MPI_INT, impl_->comm, &request);
  if (rc != MPI_SUCCESS)
    return Status::CommError("rank " + std::to_string(rank_) + ": MPI_Iallgather failed: " + MpiErrorText(rc));
  PW_RETURN_IF_ERROR(Poll(&request, &status, "all-gather (sizes) with every rank"));
  int total = 0;
  for (int r = 0; r < size_; ++r) {
    offsets[r] = total;
    total += lens[r];
  }
  std::string all(static_cast<size_t>(total), '\0');
  rc = MPI_Iallgatherv(mine.data(), len, MPI_BYTE, all.data(), lens.data(), offsets.data(), MPI_BYTE, impl_->comm,
                       &request);
  if (rc != MPI_SUCCESS)
    return Status::CommError("rank " + std::to_string(rank_) + ": MPI_Iallgatherv failed: " + MpiErrorText(rc));
  PW_RETURN_IF_ERROR(Poll(&request, &status, "all-gather with every rank"));
  std::vector<std::string> out(size_);
  for (int r = 0; r < size_; ++r) out[r] = all.substr(offsets[r], lens[r]);
  return out;
}

Status MpiCommunicator::Barrier() {
  MPI_Request request = MPI_REQUEST_NULL;
  MPI_Status status;
  int rc = MPI_Ibarrier(impl_->comm, &request);
  if (rc != MPI_SUCCESS)
    return Status::CommError("rank " + std::to_string(rank_) + ": MPI_Ibarrier failed: " + MpiErrorText(rc));
  return Poll(&request, &status, "barrier with every rank");
}

}  // namespace pw::exec
