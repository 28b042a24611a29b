#include "executor/runtime/tensor_parallel.h"

#include <chrono>
#include <string>
#include <utility>

namespace pw::exec {

namespace {

class CommTensorParallelGroup : public models::TensorParallelGroup {
 public:
  CommTensorParallelGroup(Communicator& comm, torch::Device buffers) : comm_(comm), buffers_(buffers) {}
  int size() const override { return comm_.size(); }
  int rank() const override { return comm_.rank(); }

  // x (any) -> sum over ranks, same shape.
  torch::Tensor AllReduceSum(const torch::Tensor& x) override {
    torch::Tensor buf = Staged(x);
    Run(comm_.IallReduceSum(buf.data_ptr(), buf.numel(), Type(buf)), "all-reduce", buf);
    return buf.to(x.device());
  }
  // x (n, ...) -> (t n, ...)
  torch::Tensor AllGather(const torch::Tensor& x) override {
    torch::Tensor send = Staged(x);
    std::vector<int64_t> shape = x.sizes().vec();
    TORCH_CHECK(!shape.empty(), "tensor-parallel all-gather of a 0-d tensor");
    shape[0] *= size();
    torch::Tensor recv = torch::empty(shape, send.options());
    Run(comm_.IallGatherBlocks(send.data_ptr(), recv.data_ptr(), send.numel(), Type(send)), "all-gather", send);
    return recv.to(x.device());
  }
  // x (t n, ...) -> (n, ...)
  torch::Tensor ReduceScatter(const torch::Tensor& x) override {
    TORCH_CHECK(x.dim() > 0 && x.size(0) % size() == 0, "tensor-parallel reduce-scatter: ", x.sizes(),
                " has no leading dim divisible by ", size());
    torch::Tensor send = Staged(x);
    std::vector<int64_t> shape = x.sizes().vec();
    shape[0] /= size();
    torch::Tensor recv = torch::empty(shape, send.options());
    Run(comm_.IreduceScatterSum(send.data_ptr(), recv.data_ptr(), recv.numel(), Type(send)), "reduce-scatter", send);
    return recv.to(x.device());
  }

  // A contiguous copy on the buffer device (never an alias of x: the
  // all-reduce works in place).
  torch::Tensor Staged(const torch::Tensor& x) const {
    return x.detach().to(buffers_, /*non_blocking=*/false, /*copy=*/true).contiguous();
  }
  ElementType Type(const torch::Tensor& t) const {
    TORCH_CHECK(t.scalar_type() == torch::kFloat || t.scalar_type() == torch::kDouble,
                "tensor-parallel collectives take float32 or float64, got ", t.scalar_type());
    return t.scalar_type() == torch::kDouble ? ElementType::kFloat64 : ElementType::kFloat32;
  }
  int64_t collectives() const { return collectives_; }
  double seconds() const { return seconds_; }

 private:
  void Run(StatusOr<RequestId> posted, const char* what, const torch::Tensor& buf) {
    ++collectives_;
    Status st = posted.status();
    if (posted.ok()) {
      const auto t0 = std::chrono::steady_clock::now();
      st = comm_.Wait(*posted);
      seconds_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    TORCH_CHECK(st.ok(), "tensor-parallel rank ", rank(), " of ", size(), ": ", what, " of ", buf.numel(),
                " elements: ", st.ToString());
  }

  Communicator& comm_;
  torch::Device buffers_;
  int64_t collectives_ = 0;
  double seconds_ = 0.0;
};

}  // namespace

std::shared_ptr<models::TensorParallelGroup> MakeTensorParallelGroup(Communicator& comm, torch::Device buffers) {
  return std::make_shared<CommTensorParallelGroup>(comm, buffers);
}

int64_t CollectivesRun(const models::TensorParallelGroup& group) {
  const auto* g = dynamic_cast<const CommTensorParallelGroup*>(&group);
  return g != nullptr ? g->collectives() : 0;
}

double CollectiveSeconds(const models::TensorParallelGroup& group) {
  const auto* g = dynamic_cast<const CommTensorParallelGroup*>(&group);
  return g != nullptr ? g->seconds() : 0.0;
}

Status SumPartialGradients(models::TensorParallelGroup& group, const std::vector<torch::Tensor>& params,
                           const std::string& where) {
  if (params.empty() || group.size() == 1) return Status::Ok();
  try {
    torch::NoGradGuard no_grad;
    std::vector<torch::Tensor> flat;
    for (const torch::Tensor& p : params) {
      torch::Tensor& g = const_cast<torch::Tensor&>(p).mutable_grad();
      if (!g.defined()) g = torch::zeros_like(p);
      flat.push_back(g.reshape({-1}));
    }
    torch::Tensor sum = group.AllReduceSum(torch::cat(flat));  // (sum of numels)
    int64_t off = 0;
    for (const torch::Tensor& p : params) {
      torch::Tensor g = p.grad();
      g.copy_(sum.narrow(0, off, g.numel()).view_as(g));
      off += g.numel();
    }
  } catch (const c10::Error& e) {
    return Status::ComputeError(
        where + ": summing replicated gradients over the tensor-parallel group: " + e.what_without_backtrace());
  }
  return Status::Ok();
}

}  // namespace pw::exec
