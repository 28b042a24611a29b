#include "executor/comm/nccl_communicator.h"

#include <unistd.h>

#include <cstring>
#include <unordered_map>
#include <vector>

#include "executor/comm/nccl_compat.h"

namespace pw::exec {

namespace {

std::string Host() {
  char name[256] = {0};
  ::gethostname(name, sizeof(name) - 1);
  return name;
}

}  // namespace

struct NcclCommunicator::Impl {
  Communicator* bootstrap = nullptr;
  std::unique_ptr<Communicator> owned_bootstrap;  // set for a Split result (destroyed after comm)
  int rank = 0, size = 1, device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t compute = nullptr;  // not owned
  cudaStream_t comm_stream = nullptr;
  cudaEvent_t compute_ready = nullptr;
  std::vector<cudaEvent_t> free_events;
  std::unordered_map<RequestId, cudaEvent_t> pending;
  RequestId next_id = 1;
  int group_depth = 0;
  std::vector<RequestId> in_group;  // posted inside the open group

  Status Cuda(cudaError_t err, const char* what) const {
    if (err == cudaSuccess) return Status::Ok();
    return Status::CommError(Host() + ": rank " + std::to_string(rank) + ": " + what + ": " + cudaGetErrorString(err));
  }
  Status Nccl(ncclResult_t res, const std::string& what) const {
    if (res == ncclSuccess) return Status::Ok();
    return Status::CommError(Host() + ": rank " + std::to_string(rank) + ": " + what + ": " + ncclGetErrorString(res));
  }
  StatusOr<cudaEvent_t> TakeEvent() {
    if (!free_events.empty()) {
      cudaEvent_t e = free_events.back();
      free_events.pop_back();
      return e;
    }
    cudaEvent_t e = nullptr;
    PW_RETURN_IF_ERROR(Cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming), "cudaEventCreate"));
    return e;
  }
  // The comm stream waits for everything queued so far on the compute stream.
  Status OrderAfterCompute() {
    PW_RETURN_IF_ERROR(Cuda(cudaEventRecord(compute_ready, compute), "cudaEventRecord(compute)"));
    return Cuda(cudaStreamWaitEvent(comm_stream, compute_ready, 0), "cudaStreamWaitEvent(comm)");
  }
  // Registers a posted operation. Inside a group NCCL enqueues the work only
  // at ncclGroupEnd, so the completion event is recorded then (GroupEnd).
  StatusOr<RequestId> Finish(const std::string& what) {
    RequestId id = next_id++;
    if (group_depth > 0) {
      in_group.push_back(id);
      return id;
    }
    PW_RETURN_IF_ERROR(RecordDone(id));
    return id;
  }
  Status RecordDone(RequestId id) {
    PW_ASSIGN_OR_RETURN(cudaEvent_t done, TakeEvent());
    PW_RETURN_IF_ERROR(Cuda(cudaEventRecord(done, comm_stream), "cudaEventRecord(comm)"));
    pending[id] = done;
    return Status::Ok();
  }
};

NcclCommunicator::NcclCommunicator() : impl_(std::make_unique<Impl>()) {}

NcclCommunicator::~NcclCommunicator() {
  if (!impl_) return;
  if (impl_->comm_stream) cudaStreamSynchronize(impl_->comm_stream);
  for (auto& [id, e] : impl_->pending) cudaEventDestroy(e);
  for (cudaEvent_t e : impl_->free_events) cudaEventDestroy(e);
  if (impl_->compute_ready) cudaEventDestroy(impl_->compute_ready);
  if (impl_->comm) ncclCommDestroy(impl_->comm);
  if (impl_->comm_stream) cudaStreamDestroy(impl_->comm_stream);
  impl_->owned_bootstrap.reset();
}

StatusOr<std::unique_ptr<NcclCommunicator>> NcclCommunicator::Create(Communicator& bootstrap, int device,
                                                                     void* compute_stream) {
  std::unique_ptr<NcclCommunicator> self(new NcclCommunicator());
  Impl& s = *self->impl_;
  s.bootstrap = &bootstrap;
  s.rank = bootstrap.rank();
  s.size = bootstrap.size();
  s.device = device;
  s.compute = static_cast<cudaStream_t>(compute_stream);
  int count = 0;
  PW_RETURN_IF_ERROR(s.Cuda(cudaGetDeviceCount(&count), "cudaGetDeviceCount"));
  if (device < 0 || device >= count)
    return Status::CommError(Host() + ": rank " + std::to_string(s.rank) + ": CUDA device " + std::to_string(device) +
                             " does not exist (" + std::to_string(count) + " visible)");
  PW_RETURN_IF_ERROR(s.Cuda(cudaSetDevice(device), "cudaSetDevice"));
  PW_RETURN_IF_ERROR(
      s.Cuda(cudaStreamCreateWithFlags(&s.comm_stream, cudaStreamNonBlocking), "cudaStreamCreate(comm)"));
  PW_RETURN_IF_ERROR(s.Cuda(cudaEventCreateWithFlags(&s.compute_ready, cudaEventDisableTiming), "cudaEventCreate"));
  PW_ASSIGN_OR_RETURN(std::string shared, ShareNcclUniqueId(bootstrap));
  ncclUniqueId id;
  std::memcpy(&id, shared.data(), sizeof(id));
  PW_RETURN_IF_ERROR(
      s.Nccl(nccl_compat::CommInitRank(&s.comm, s.size, id, s.rank),
             "ncclCommInitRank(" + std::to_string(s.size) + " ranks, device " + std::to_string(device) + ")"));
  return self;
}

int NcclCommunicator::rank() const { return impl_->rank; }
int NcclCommunicator::size() const { return impl_->size; }

StatusOr<RequestId> NcclCommunicator::Isend(int peer, Channel channel, const void* data, int64_t bytes) {
  Impl& s = *impl_;
  PW_RETURN_IF_ERROR(s.OrderAfterCompute());
  PW_RETURN_IF_ERROR(s.Nccl(ncclSend(data, static_cast<size_t>(bytes), ncclUint8, peer, s.comm, s.comm_stream),
                            std::string("ncclSend to rank ") + std::to_string(peer) +
                                (channel == Channel::kForward ? " (forward)" : " (backward)")));
  return s.Finish("send");
}

StatusOr<RequestId> NcclCommunicator::Irecv(int peer, Channel channel, void* data, int64_t bytes) {
  Impl& s = *impl_;
  PW_RETURN_IF_ERROR(s.OrderAfterCompute());
  PW_RETURN_IF_ERROR(s.Nccl(ncclRecv(data, static_cast<size_t>(bytes), ncclUint8, peer, s.comm, s.comm_stream),
                            std::string("ncclRecv from rank ") + std::to_string(peer) +
                                (channel == Channel::kForward ? " (forward)" : " (backward)")));
  return s.Finish("recv");
}

Status NcclCommunicator::Wait(RequestId id) {
  Impl& s = *impl_;
  auto it = s.pending.find(id);
  if (it == s.pending.end())
    return Status::Internal("rank " + std::to_string(s.rank) + ": wait on unknown request " + std::to_string(id) +
                            (s.group_depth > 0 ? " (its NCCL group is still open)" : ""));
  cudaEvent_t done = it->second;
  s.pending.erase(it);
  PW_RETURN_IF_ERROR(s.Cuda(cudaStreamWaitEvent(s.compute, done, 0), "cudaStreamWaitEvent(compute)"));
  s.free_events.push_back(done);  // safe: reuse records a new point in a later call
  ncclResult_t async = ncclSuccess;
  PW_RETURN_IF_ERROR(s.Nccl(nccl_compat::AsyncError(s.comm, &async), "ncclCommGetAsyncError"));
  return s.Nccl(async, "asynchronous NCCL error");
}

StatusOr<bool> NcclCommunicator::Test(RequestId id) {
  Impl& s = *impl_;
  auto it = s.pending.find(id);
  if (it == s.pending.end())
    return Status::Internal("rank " + std::to_string(s.rank) + ": test of unknown request " + std::to_string(id) +
                            (s.group_depth > 0 ? " (its NCCL group is still open)" : ""));
  bool done = false;
  PW_RETURN_IF_ERROR(s.Cuda(nccl_compat::EventDone(it->second, &done), "cudaEventQuery(comm)"));
  ncclResult_t async = ncclSuccess;
  PW_RETURN_IF_ERROR(s.Nccl(nccl_compat::AsyncError(s.comm, &async), "ncclCommGetAsyncError"));
  PW_RETURN_IF_ERROR(s.Nccl(async, "asynchronous NCCL error"));
  if (!done) return false;
  // The operation finished on the device: work queued on any stream from now
  // on runs after it, so the compute stream needs no event wait.
  s.free_events.push_back(it->second);
  s.pending.erase(it);
  return true;
}

StatusOr<std::unique_ptr<Communicator>> NcclCommunicator::Split(int color, int key, const std::string& label) {
  Impl& s = *impl_;
  PW_ASSIGN_OR_RETURN(std::unique_ptr<Communicator> bootstrap, s.bootstrap->Split(color, key, label));
  PW_ASSIGN_OR_RETURN(std::unique_ptr<NcclCommunicator> split, Create(*bootstrap, s.device, s.compute));
  split->impl_->owned_bootstrap = std::move(bootstrap);
  return std::unique_ptr<Communicator>(std::move(split));
}

namespace {

ncclDataType_t NcclType(ElementType t) { return t == ElementType::kFloat64 ? ncclFloat64 : ncclFloat32; }

}  // namespace

StatusOr<RequestId> NcclCommunicator::IallReduceSum(void* data, int64_t count, ElementType type) {
  Impl& s = *impl_;
  PW_RETURN_IF_ERROR(s.OrderAfterCompute());
  PW_RETURN_IF_ERROR(
      s.Nccl(ncclAllReduce(data, data, static_cast<size_t>(count), NcclType(type), ncclSum, s.comm, s.comm_stream),
             "ncclAllReduce of " + std::to_string(count) + " elements"));
  return s.Finish("all-reduce");
}

StatusOr<RequestId> NcclCommunicator::IreduceScatterSum(const void* send, void* recv, int64_t count, ElementType type) {
  Impl& s = *impl_;
  PW_RETURN_IF_ERROR(s.OrderAfterCompute());
  PW_RETURN_IF_ERROR(
      s.Nccl(ncclReduceScatter(send, recv, static_cast<size_t>(count), NcclType(type), ncclSum, s.comm, s.comm_stream),
             "ncclReduceScatter of " + std::to_string(count) + " elements per rank"));
  return s.Finish("reduce-scatter");
}

StatusOr<RequestId> NcclCommunicator::IallGatherBlocks(const void* send, void* recv, int64_t count, ElementType type) {
  Impl& s = *impl_;
  PW_RETURN_IF_ERROR(s.OrderAfterCompute());
  PW_RETURN_IF_ERROR(
      s.Nccl(ncclAllGather(send, recv, static_cast<size_t>(count), NcclType(type), s.comm, s.comm_stream),
             "ncclAllGather of " + std::to_string(count) + " elements per rank"));
  return s.Finish("all-gather");
}

StatusOr<std::vector<std::string>> NcclCommunicator::AllGather(const std::string& mine) {
  return impl_->bootstrap->AllGather(mine);
}

Status NcclCommunicator::Barrier() { return impl_->bootstrap->Barrier(); }

Status NcclCommunicator::GroupStart() {
  Impl& s = *impl_;
  if (s.group_depth++ > 0) return Status::Internal("NcclCommunicator: groups do not nest");
  return s.Nccl(ncclGroupStart(), "ncclGroupStart");
}

Status NcclCommunicator::GroupEnd() {
  Impl& s = *impl_;
  if (s.group_depth-- != 1) return Status::Internal("NcclCommunicator: GroupEnd without GroupStart");
  PW_RETURN_IF_ERROR(s.Nccl(ncclGroupEnd(), "ncclGroupEnd"));
  std::vector<RequestId> ids;
  ids.swap(s.in_group);
  for (RequestId id : ids) PW_RETURN_IF_ERROR(s.RecordDone(id));
  return Status::Ok();
}

Status NcclCommunicator::Synchronize() {
  Impl& s = *impl_;
  PW_RETURN_IF_ERROR(s.Cuda(cudaStreamSynchronize(s.comm_stream), "cudaStreamSynchronize(comm)"));
  return s.Cuda(cudaStreamSynchronize(s.compute), "cudaStreamSynchronize(compute)");
}

std::string NcclCommunicator::Describe() const {
  cudaDeviceProp prop;
  std::string dev = "device " + std::to_string(impl_->device);
  if (cudaGetDeviceProperties(&prop, impl_->device) == cudaSuccess) dev += ": " + std::string(prop.name);
  return nccl_compat::RuntimeVersion() + " (built with " + nccl_compat::HeaderVersion() + "), " + dev;
}

StatusOr<std::string> ShareNcclUniqueId(Communicator& bootstrap) {
  // Rank 0 makes the id; everyone reads rank 0's entry of the all-gather.
  const std::string me = Host() + ": rank " + std::to_string(bootstrap.rank());
  ncclUniqueId id;
  std::memset(&id, 0, sizeof(id));
  if (bootstrap.rank() == 0) {
    const ncclResult_t res = ncclGetUniqueId(&id);
    if (res != ncclSuccess) return Status::CommError(me + ": ncclGetUniqueId: " + ncclGetErrorString(res));
  }
  PW_ASSIGN_OR_RETURN(auto ids, bootstrap.AllGather(std::string(reinterpret_cast<const char*>(&id), sizeof(id))));
  if (ids.empty() || ids[0].size() != sizeof(id))
    return Status::CommError(me + ": bad NCCL unique id from rank 0 (" +
                             std::to_string(ids.empty() ? 0 : ids[0].size()) + " bytes, expected " +
                             std::to_string(sizeof(id)) + ")");
  return ids[0];
}

int CudaDeviceCount(std::string* why) {
  int count = 0;
  const cudaError_t err = cudaGetDeviceCount(&count);
  if (err == cudaSuccess) return count;
  (void)cudaGetLastError();  // not sticky: later calls start clean
  if (why != nullptr) *why = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(err);
  return 0;
}

bool CudaDeviceAvailable() { return CudaDeviceCount() > 0; }

}  // namespace pw::exec
