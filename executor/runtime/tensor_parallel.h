// The executor's side of tensor parallelism: the layers' group
// (models/torch/tensor_parallel.h TensorParallelGroup) over a Communicator
// split from the world (Engine::Create: the ranks of one pipeline rank and
// one data-parallel rank), and the gradient work the engine does around a
// step (replicated parameters whose gradient each rank holds only a share
// of). Included only by torch translation units (engine.cc).
// Dimension letters: t = tensor-parallel size.
#pragma once

#include <torch/torch.h>

#include <memory>
#include <vector>

#include "base/status.h"
#include "executor/comm/communicator.h"
#include "models/torch/tensor_parallel.h"

namespace pw::exec {

// A TensorParallelGroup over `comm` (size t, rank = tensor-parallel rank):
// each operation posts the communicator's non-blocking collective
// (IallReduceSum, IallGatherBlocks, IreduceScatterSum) and waits for it, so
// it blocks like Megatron's. Buffers are copies of the tensors on
// `buffers` (the CPU for MPI; the compute device for NCCL, which moves
// device memory); results come back on the input's device. float32 and
// float64 only. A failed collective throws c10::Error naming the operation
// and the communicator's error (rank, peers). `comm` must outlive the group.
std::shared_ptr<models::TensorParallelGroup> MakeTensorParallelGroup(Communicator& comm, torch::Device buffers);

// Collectives a group made by MakeTensorParallelGroup has run so far (each
// AllReduceSum, AllGather and ReduceScatter counts 1); 0 for any other group.
// Tests attribute them to actions: the split backward keeps its shape only if
// every W runs none.
int64_t CollectivesRun(const models::TensorParallelGroup& group);

// Seconds this rank has spent waiting for its collectives over a group made
// by MakeTensorParallelGroup (from post to completion: the transfer and the
// wait for the slowest peer), summed since the group was made; 0 for any
// other group. The run reports its share of the step.
double CollectiveSeconds(const models::TensorParallelGroup& group);

// Sums over the group the gradients of `params` (in order; each rank passes
// the same list shapes), in one all-reduce of their concatenation: the
// replicated parameters whose gradient on one rank is only its share
// (models/spec TensorParallelPartialGradient). Undefined gradients count as
// zeros (and are then created). Collective over the group. Errors: the
// group's, as ComputeError naming `where`.
Status SumPartialGradients(models::TensorParallelGroup& group, const std::vector<torch::Tensor>& params,
                           const std::string& where);

}  // namespace pw::exec
