#include "executor/runtime/engine.h"

#include <c10/core/CPUAllocator.h>
#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <random>

#include "base/hash.h"
#include "executor/checkpoint/checkpoint_io.h"
#include "executor/checkpoint/hf_load.h"
#include "executor/comm/agree.h"
#include "executor/comm/launch_env.h"
#include "executor/runtime/data_parallel.h"
#include "executor/runtime/host_memory.h"
#include "executor/runtime/interpreter.h"
#include "executor/runtime/preflight.h"
#include "executor/runtime/tensor_parallel.h"
#include "executor/runtime/torch_backend.h"
#include "executor/runtime/torch_util.h"
#include "executor/runtime/watchdog.h"
#include "models/spec/hf_weights.h"
#include "models/spec/tensor_parallel.h"
#include "schedules/simulate.h"

namespace pw::exec {

// ----------------------------------------------------------------- Engine ---

namespace {

// The TP group's collectives are small and posted in lockstep, dozens per
// microbatch: its waits poll without sleeping for up to this long
// (Communicator::SetSpinWait) before the usual back-off, whose sleeps would
// otherwise add up to 1 ms to every round of every collective.
// `pipewright profile` measures the collectives the same way.
constexpr double kTensorParallelSpinWaitS = 0.005;

// training.distributed_optimizer (ZeRO-1), false when absent.
bool DistributedOptimizer(const Plan& plan) { return plan.training && plan.training->distributed_optimizer; }

}  // namespace

struct Engine::Impl {
  Plan plan;
  Program program;
  Communicator* comm = nullptr;   // the pipeline communicator (rank = pipeline rank)
  Communicator* world = nullptr;  // every rank (tp_size x pp_size x dp_size)
  // dp_size > 1 or tp_size > 1: the communicators split from `world` (comm
  // points at pipe); tp only with tp_size > 1.
  std::unique_ptr<Communicator> pipe, dp, tp;
  std::unique_ptr<DataParallelSync> sync;
  int dp_rank = 0, dp_size = 1;
  // Tensor parallelism (plan tp_size > 1): the layers' group over `tp`;
  // per stage, the replicated parameters whose gradient each TP rank holds
  // only a share of (summed over the group before the data-parallel
  // reduction, TensorParallelPartialGradient); every replicated parameter
  // (its gradient counts once in the global norm: on TP rank 0).
  int tp_rank = 0, tp_size = 1;
  std::shared_ptr<models::TensorParallelGroup> tp_group;
  std::map<int, std::vector<torch::Tensor>> tp_partial;
  std::vector<torch::Tensor> tp_replicated;
  EngineOptions options;
  CheckedPlan checked;
  std::unique_ptr<TorchStageBackend> backend;
  std::vector<std::pair<std::string, torch::Tensor>> named_params;
  std::vector<StageParameterBytes> stage_parameters;
  std::unique_ptr<torch::optim::AdamW> optimizer;
  // This rank's layers (stage order) with their parameters: the checkpoint's files.
  std::vector<LayerTensors> layers;
  // Tied LM head (config.tied): the token table on the first stage's rank and
  // the head's replica on the last stage's rank (undefined on other ranks).
  torch::Tensor tied_table, tied_head;
  int step = 0;

  Status SumTiedGradients();
  // Tensor parallelism: sums the partial replicated gradients of `stage`
  // over the TP group (nothing with tp_size 1). Collective over the group.
  Status SumTensorParallelPartials(int stage);
  // Tensor parallelism in checkpoints and HF directories (checkpoint_io.h):
  // this rank's TP group, rank and size, and the layout table's model.
  TensorParallelShards TpShards() const { return {&checked.model, tp.get(), tp_rank, tp_size}; }
  // ZeRO-1 writes shard files only without TP (with TP the moments are
  // joined into the layer files, docs/DATA_PARALLEL.md).
  bool ShardFiles() const { return sync && sync->zero1() && tp_size == 1; }
  // SaveCheckpoint with tp_size > 1: every TP group of data-parallel rank 0
  // (with ZeRO-1 every rank: the moments are joined over the DP group
  // first) gathers full tensors; TP rank 0 of DP rank 0 writes them.
  StatusOr<std::vector<CheckpointFile>> SaveTensorParallel(const std::string& step_dir) const;
};

StatusOr<std::vector<CheckpointFile>> Engine::Impl::SaveTensorParallel(const std::string& step_dir) const {
  const bool zero1 = sync && sync->zero1();
  if (!zero1 && dp_rank != 0) return std::vector<CheckpointFile>{};
  MomentsOf moments = OptimizerMoments(*optimizer);
  if (zero1) {
    const DataParallelSync* s = sync.get();
    Communicator* group = dp.get();
    moments = [s, group](const torch::Tensor& p) {
      return JoinShardMoments(*group, p, [s](const torch::Tensor& q) { return s->ShardMoments(q); });
    };
  }
  PW_ASSIGN_OR_RETURN(std::vector<FullLayer> full, GatherFullLayers(layers, moments, TpShards()));
  if (dp_rank != 0 || tp_rank != 0) return std::vector<CheckpointFile>{};
  return SaveFullLayerFiles(step_dir, full);
}

Status Engine::Impl::SumTensorParallelPartials(int stage) {
  auto it = tp_partial.find(stage);
  if (!tp_group || it == tp_partial.end()) return Status::Ok();
  return SumPartialGradients(*tp_group, it->second,
                             "world rank " + std::to_string(world->rank()) + ", stage " + std::to_string(stage));
}

// Tied LM head, after backward and before clipping and the optimizer step:
// the token table (first stage) and the head's replica (last stage) each
// hold the gradient of one use of the shared matrix; both get the sum, so
// that the same AdamW update keeps the copies identical. Between two ranks
// that is one exchange of the V x C gradient over the communicator (each
// sends its own, receives the other's); on one rank a local sum. Both ranks
// add in the same order (first stage's + last stage's), so the sums are
// bit-identical. Megatron-LM does the same with an all-reduce over its
// "embedding group" (the first and last pipeline ranks;
// megatron/core/distributed/finalize_model_grads.py, _allreduce_word_embedding_grads).
Status Engine::Impl::SumTiedGradients() {
  Impl& m = *this;
  if (!m.checked.model.tied) return Status::Ok();
  const int first = m.program.stage_to_rank.front(), last = m.program.stage_to_rank.back();
  const int me = m.comm->rank();
  if (me != first && me != last) return Status::Ok();
  torch::NoGradGuard no_grad;
  auto grad_of = [](torch::Tensor& p) -> torch::Tensor {
    if (!p.grad().defined()) p.mutable_grad() = torch::zeros_like(p);
    return p.grad();
  };
  if (first == last) {
    torch::Tensor table = grad_of(m.tied_table), head = grad_of(m.tied_head);
    torch::Tensor sum = table + head;
    table.copy_(sum);
    head.copy_(sum);
    return Status::Ok();
  }
  const bool is_first = me == first;
  torch::Tensor mine = grad_of(is_first ? m.tied_table : m.tied_head);  // (V, C)
  const bool on_device = m.options.device_messages && mine.is_cuda();
  torch::Tensor send = on_device ? mine.contiguous() : mine.to(torch::kCPU).contiguous();
  torch::Tensor recv = torch::empty_like(send);
  const int peer = is_first ? last : first;
  const int64_t bytes = static_cast<int64_t>(send.numel() * send.element_size());
  // First -> last travels on the forward channel, last -> first on the
  // backward one: after the step's own messages on each (all completed).
  PW_RETURN_IF_ERROR(m.comm->BeginBatch());
  StatusOr<RequestId> s =
      m.comm->Isend(peer, is_first ? Channel::kForward : Channel::kBackward, send.data_ptr(), bytes);
  StatusOr<RequestId> r =
      m.comm->Irecv(peer, is_first ? Channel::kBackward : Channel::kForward, recv.data_ptr(), bytes);
  PW_RETURN_IF_ERROR(m.comm->EndBatch());
  if (!s.ok()) return s.status();
  if (!r.ok()) return r.status();
  PW_RETURN_IF_ERROR(m.comm->Wait(*s));
  PW_RETURN_IF_ERROR(m.comm->Wait(*r));
  torch::Tensor theirs = recv.to(mine.device());
  try {
    mine.copy_(is_first ? mine + theirs : theirs + mine);
  } catch (const c10::Error& e) {
    return Status::ComputeError("rank " + std::to_string(me) +
                                ": summing the tied embedding gradients: " + e.what_without_backtrace());
  }
  return Status::Ok();
}

Engine::Engine(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Engine::~Engine() = default;

StatusOr<std::unique_ptr<Engine>> Engine::Create(const Plan& plan, Communicator& comm, const EngineOptions& options) {
  PW_RETURN_IF_ERROR(AgreeOnPlan(plan, comm));
  PW_ASSIGN_OR_RETURN(CheckedPlan checked, PreflightCheck(plan, comm.size(), comm.one_fifo_per_pair()));
  // Messages are sized from the plan and the dtype: every rank must agree on
  // both (frozen metadata), or a receive would be sized wrongly.
  PW_ASSIGN_OR_RETURN(std::vector<std::string> dtypes,
                      comm.AllGather(options.double_precision ? "float64" : "float32"));
  for (size_t r = 1; r < dtypes.size(); ++r)
    if (dtypes[r] != dtypes[0])
      return Status::InvalidArgument("rank 0 runs in " + dtypes[0] + " but rank " + std::to_string(r) + " in " +
                                     dtypes[r] + " (every rank must run the plan's training.dtype)");
  // Message sizes, stashes and the memory prediction follow the plan's dtype.
  const bool fp64_plan = plan.training->precision == Precision::kFp64;
  if (fp64_plan != options.double_precision)
    return Status::InvalidArgument(
        std::string("the engine runs ") + (options.double_precision ? "fp64" : "fp32") +
        " but the plan was made for training.dtype " + PrecisionName(plan.training->precision) +
        " (its message and memory sizes follow it); plan with --dtype " + (options.double_precision ? "fp64" : "fp32"));
  auto impl = std::make_unique<Impl>();
  impl->plan = plan;
  impl->program = PlanProgram(plan);
  impl->world = &comm;
  impl->comm = &comm;
  impl->options = options;
  if (plan.dp_size > 1 || plan.tp_size > 1) {
    // The grid (docs/DATA_PARALLEL.md, Megatron-LM's default order): world
    // rank g = pp_rank * D * T + dp_rank * T + tp_rank (with T = 1: g =
    // pp_rank * D + dp_rank). Splits in the same order on every rank:
    // pipeline (same dp and tp ranks), data-parallel (same pp and tp),
    // tensor-parallel (same pp and dp; only with T > 1). A communicator
    // without the collectives refuses here, before any compute.
    const int D = plan.dp_size, T = plan.tp_size, g = comm.rank();
    if (T > 1 && !comm.data_parallel())
      return Status::InvalidArgument("plan field 'tp_size' is " + std::to_string(T) + ": the " + comm.name() +
                                     " communicator cannot form tensor-parallel groups (no split collectives); run "
                                     "tensor-parallel plans with --comm mpi under mpirun -np " +
                                     std::to_string(comm.size()) + " (or --comm nccl on GPUs)");
    if (!comm.data_parallel()) return RefuseDataParallel(comm);
    const int tp_rank = g % T, dp_rank = (g / T) % D, pp_rank = g / (D * T);
    impl->dp_size = D;
    impl->dp_rank = dp_rank;
    impl->tp_size = T;
    impl->tp_rank = tp_rank;
    PW_ASSIGN_OR_RETURN(impl->pipe, comm.Split(/*color=*/dp_rank * T + tp_rank, /*key=*/pp_rank, "pipeline"));
    PW_ASSIGN_OR_RETURN(impl->dp, comm.Split(/*color=*/pp_rank * T + tp_rank, /*key=*/dp_rank, "data-parallel"));
    if (T > 1) {
      PW_ASSIGN_OR_RETURN(impl->tp, comm.Split(/*color=*/pp_rank * D + dp_rank, /*key=*/tp_rank, "tensor-parallel"));
      impl->tp->SetSpinWait(kTensorParallelSpinWaitS);
    }
    impl->comm = impl->pipe.get();
  }
  Communicator& pc = *impl->comm;
  impl->checked = checked;
  if (options.intra_op_threads > 0) torch::set_num_threads(options.intra_op_threads);
  // Activations live in host memory: keep what a step freed for the next one
  // (host_memory.h), as the profile measured with.
  if (options.device == "cpu") KeepFreedHostMemory();
  if (options.device != "cpu") {
    // Every rank must refuse together, so the check is agreed on.
    const bool usable = options.device == "cuda" && torch::cuda::is_available();
    PW_RETURN_IF_ERROR(AgreeOnStatus(
        usable ? Status::Ok()
               : Status::InvalidArgument("rank " + std::to_string(comm.rank()) + ": --device " + options.device +
                                         (options.device == "cuda"
                                              ? ": this LibTorch reports no usable CUDA device (a CPU-only build "
                                                "such as Debian's 1.13, or no GPU visible)"
                                              : ": unknown device (cpu or cuda)") +
                                         "; the CUDA stage path runs on GPU machines through launch/device-check.sh"),
        comm));
  }
  // CUDA: the same device as the NCCL communicator's (DeviceForRank; NCCL
  // refuses two ranks on one GPU, the MPI-staged path here allows it).
  const torch::Device device =
      options.device == "cuda"
          ? torch::Device(torch::kCUDA, static_cast<c10::DeviceIndex>(DeviceForRank(
                                            options.local_rank, static_cast<int>(torch::cuda::device_count()))))
          : torch::Device(torch::kCPU);
  std::map<int, models::GptStage> stages;
  models::TensorParallelContext tp_context;
  if (impl->tp) {
    // Collective buffers: device memory for NCCL, host memory for MPI.
    impl->tp_group =
        MakeTensorParallelGroup(*impl->tp, impl->tp->device_buffers() ? device : torch::Device(torch::kCPU));
    tp_context.group = impl->tp_group;
    tp_context.sequence_parallel = plan.sequence_parallel;
  }
  try {
    for (const PlanStage& s : plan.stages) {
      if (s.rank != pc.rank()) continue;
      models::GptStage stage(
          checked.model, s.layer_begin, s.layer_end,
          options.random_init ? models::ParamInit(options.init_seed) : models::ParamInit::Overwritten(),
          DtypeOf(options));
      // Tensor parallel: each shard is the slice of the full initial value
      // (the same on every placement and every T).
      if (tp_context.group) PW_RETURN_IF_ERROR(stage->ShardTensorParallel(tp_context));
      stage->to(device);  // initial weights are made on the CPU: the same on every device
      stages.emplace(s.index, std::move(stage));
    }
  } catch (const c10::Error& e) {
    return Status::ComputeError("rank " + std::to_string(comm.rank()) +
                                ": building stages: " + e.what_without_backtrace());
  }
  std::vector<torch::Tensor> params;
  std::map<int, std::vector<torch::Tensor>> params_by_stage;
  for (auto& [index, module] : stages) {
    for (LayerTensors& lt : GroupByLayer(module->layer_names(), module->NamedParameters())) {
      for (const auto& [name, p] : lt.params) {
        if (!checked.model.tied) break;
        if (lt.layer == "embedding" && (name == "embedding.wte" || name == "embedding.embed_tokens"))
          impl->tied_table = p;
        if (name == "head.lm_head.weight") impl->tied_head = p;
      }
      impl->layers.push_back(std::move(lt));
    }
    StageParameterBytes counted{index, 0, 0};
    for (auto& [name, p] : module->NamedParameters()) {
      if (impl->tp_group) {
        PW_ASSIGN_OR_RETURN(TensorParallelLayout layout, TensorParallelLayoutOf(checked.model, name, impl->tp_size));
        PW_ASSIGN_OR_RETURN(bool partial,
                            TensorParallelPartialGradient(checked.model, name, impl->tp_size, plan.sequence_parallel));
        if (!layout.split) impl->tp_replicated.push_back(p);
        if (partial) impl->tp_partial[index].push_back(p);
      }
      impl->named_params.emplace_back(name, p);
      params.push_back(p);
      params_by_stage[index].push_back(p);
      counted.numel += p.numel();
      counted.bytes += p.numel() * static_cast<int64_t>(p.element_size());
    }
    impl->stage_parameters.push_back(counted);
  }
  const bool zero1 = impl->dp_size > 1 && DistributedOptimizer(plan);
  // ZeRO-1 keeps AdamW state for its shards only (DataParallelSync).
  impl->optimizer = std::make_unique<torch::optim::AdamW>(
      MakeOptimizer(params, options));  // never stepped with ZeRO-1 (its state is created lazily)
  impl->backend =
      std::make_unique<TorchStageBackend>(impl->program, pc.rank(), checked.model, checked.training, DtypeOf(options),
                                          std::move(stages), device, options.device_messages && device.is_cuda());
  if (impl->dp_size > 1) {
    // Collective buffers: on the compute device when the communicator moves
    // device memory (NCCL), else host memory (MPI).
    const torch::Device buffers = impl->dp->device_buffers() ? device : torch::Device(torch::kCPU);
    impl->sync = std::make_unique<DataParallelSync>(*impl->dp, params_by_stage, options, zero1, buffers);
    DataParallelSync* sync = impl->sync.get();
    Impl* self = impl.get();
    // Tensor parallel: a stage's partial replicated gradients are summed
    // over the TP group first, so the data-parallel reduction (or ZeRO-1's
    // reduce-scatter) sees whole gradients.
    impl->backend->SetGradReduction([sync, self](int stage) {
      PW_RETURN_IF_ERROR(self->SumTensorParallelPartials(stage));
      return sync->Start(stage);
    });
    if (options.dp_progress) impl->backend->SetProgress([sync]() { return sync->Progress(); });
  }
  return std::unique_ptr<Engine>(new Engine(std::move(impl)));
}

StatusOr<StepReport> Engine::Step(const TokenBatch& batch, bool apply_optimizer, const StepHooks* hooks) {
  Impl& m = *impl_;
  const ReplicaBatch& shape = m.checked.training;
  if (batch.rows != shape.rows || batch.seq != shape.seq_length)
    return Status::InvalidArgument("batch is " + std::to_string(batch.rows) + " x " + std::to_string(batch.seq) +
                                   " but the plan's training fields say " + std::to_string(shape.rows) + " x " +
                                   std::to_string(shape.seq_length));
  // Every rank of every replica starts together (the step time is the
  // slowest replica's).
  PW_RETURN_IF_ERROR(m.world->Barrier());
  const Clock::time_point t0 = Clock::now();
  std::vector<torch::Tensor> params;
  for (auto& np : m.named_params) params.push_back(np.second);
  const double tp_before = m.tp_group ? CollectiveSeconds(*m.tp_group) : 0.0;
  ZeroGrads(params);
  // The optimizer step's compute (PLAN_FORMAT rule 11): the zeroing above,
  // the TP partial-gradient sums and the AdamW step below; busy time.
  double optimizer_s = std::chrono::duration<double>(Clock::now() - t0).count();
  m.backend->BeginStep(&batch);
  StatusOr<RankStepTiming> ran = RunRankStep(m.program, m.step, *m.comm, *m.backend, hooks);
  if (!ran.ok() && (m.dp_size > 1 || m.tp_size > 1))  // the interpreter names the pipeline rank
    return ran.status().WithContext("world rank " + std::to_string(m.world->rank()) + " (replica " +
                                    std::to_string(m.dp_rank) + ", tensor-parallel rank " + std::to_string(m.tp_rank) +
                                    ")");
  PW_ASSIGN_OR_RETURN(RankStepTiming timing, std::move(ran));
  if (!m.sync) {  // with data parallelism the REDUCE_GRAD actions did it
    const Clock::time_point p0 = Clock::now();
    for (const auto& [stage, params] : m.tp_partial) PW_RETURN_IF_ERROR(m.SumTensorParallelPartials(stage));
    optimizer_s += std::chrono::duration<double>(Clock::now() - p0).count();
  }
  // Data parallel: wait for the reductions the REDUCE_GRAD actions started
  // (the time blocked here is the all-reduce's exposed time).
  double reduce_wait_s = 0.0;
  if (m.sync) {
    if (hooks != nullptr && hooks->board != nullptr)
      hooks->board->Set("world rank " + std::to_string(m.world->rank()) + " (pipeline rank " +
                        std::to_string(m.comm->rank()) + ", data-parallel rank " + std::to_string(m.dp_rank) +
                        "), step " + std::to_string(m.step) +
                        ": waiting for the data-parallel gradient reduction with its group");
    StatusOr<double> waited = m.sync->Finish();
    if (!waited.ok())
      return waited.status().WithContext("rank " + std::to_string(m.world->rank()) + ", step " +
                                         std::to_string(m.step) + ": data-parallel gradient reduction");
    reduce_wait_s = *waited;
  }
  // A tied head: the first and last stage sum their copies' gradients
  // (after the data-parallel reduction, so every replica adds the same
  // global-batch gradients).
  const bool zero1 = m.sync && m.sync->zero1();
  PW_RETURN_IF_ERROR(m.SumTiedGradients());
  if (zero1 && m.checked.model.tied) {
    // ZeRO-1: the reduce-scatter summed each copy's own use only, and the
    // two copies lie at different places of different stages' shards. The
    // sum above was of this replica's local gradients (table + head use):
    // its mean over the group replaces the tied elements of the shards, so
    // both copies step with the gradient of the global batch's both uses.
    for (const torch::Tensor& p : {m.tied_table, m.tied_head}) {
      if (!p.defined()) continue;
      Status st = m.sync->ReplaceShardGradWithMean(p);
      if (!st.ok())
        return st.WithContext("rank " + std::to_string(m.world->rank()) + ", step " + std::to_string(m.step) +
                              ": tied LM head under ZeRO-1");
    }
  }
  double grad_norm = 0.0;
  if (m.options.clip_grad_norm > 0 && zero1) {
    // ZeRO-1: each data-parallel rank owns a shard of every stage's reduced
    // gradient: the global norm sums the shards over the whole world (both
    // dimensions of the grid).
    // A tied head's replica counts once (through the token table); with
    // tensor parallelism a replicated parameter once (on TP rank 0), a
    // sharded one on every TP rank (its shards).
    std::vector<torch::Tensor> skip;
    if (m.tied_head.defined()) skip.push_back(m.tied_head);
    if (m.tp_rank != 0) skip.insert(skip.end(), m.tp_replicated.begin(), m.tp_replicated.end());
    PW_ASSIGN_OR_RETURN(auto norms, AllGatherDoubles(*m.world, {m.sync->OwnedGradSumSquares(skip)}));
    double total = 0.0;
    for (const auto& v : norms) total += v[0];
    grad_norm = std::sqrt(total);
    const double coef = m.options.clip_grad_norm / (grad_norm + 1e-6);
    if (coef < 1.0) m.sync->ScaleOwnedGrads(coef);
  } else if (m.options.clip_grad_norm > 0) {
    // Plain data parallelism: after the all-reduce every replica holds the
    // same (global-batch) gradients, so the sum over the pipeline (and
    // tensor-parallel) ranks of one replica is already the norm over the
    // whole grid: replica 0 contributes, the others add 0.
    // Global norm: every rank's sum of squares (float64), all-gathered; the
    // same coefficient on every rank (torch.nn.utils.clip_grad_norm_).
    // Summed on the device, read once (one host sync per step, not one per
    // parameter).
    double sumsq = 0.0;
    {
      torch::NoGradGuard no_grad;
      torch::Tensor acc;  // () float64 on the parameters' device
      for (const auto& p : params) {
        if (!p.grad().defined()) continue;
        // A tied head's replica is the same parameter as the token table:
        // counted once (Megatron-LM's param_is_not_shared in its norm).
        if (m.tied_head.defined() && p.is_same(m.tied_head)) continue;
        // Tensor parallel: a replicated parameter counts once (TP rank 0).
        if (m.tp_rank != 0 && std::any_of(m.tp_replicated.begin(), m.tp_replicated.end(),
                                          [&](const torch::Tensor& r) { return r.is_same(p); }))
          continue;
        torch::Tensor term = p.grad().to(torch::kDouble).pow(2).sum();
        acc = acc.defined() ? acc.add_(term) : term;
      }
      if (acc.defined()) sumsq = acc.item<double>();
    }
    PW_ASSIGN_OR_RETURN(auto norms, AllGatherDoubles(*m.world, {m.dp_rank == 0 ? sumsq : 0.0}));
    double total = 0.0;
    for (const auto& v : norms) total += v[0];
    grad_norm = std::sqrt(total);
    const double coef = m.options.clip_grad_norm / (grad_norm + 1e-6);
    if (coef < 1.0) {
      torch::NoGradGuard no_grad;
      for (const auto& p : params)
        if (p.grad().defined()) p.mutable_grad().mul_(coef);
    }
  }
  const Clock::time_point o0 = Clock::now();
  if (apply_optimizer && zero1) {
    Status st = m.sync->Zero1Step();
    if (!st.ok()) return st.WithContext("rank " + std::to_string(m.world->rank()) + ", step " + std::to_string(m.step));
  } else if (apply_optimizer) {
    try {
      m.optimizer->step();
    } catch (const c10::Error& e) {
      return Status::ComputeError("rank " + std::to_string(m.comm->rank()) + ", step " + std::to_string(m.step) +
                                  ": optimizer step: " + e.what_without_backtrace());
    }
  }
  const Clock::time_point done = Clock::now();
  optimizer_s += std::chrono::duration<double>(done - o0).count();
  const double step_s = std::chrono::duration<double>(done - t0).count();
  // Over the whole world: each replica's last stage contributes its mean
  // loss over its rows (TP rank 0 of it: the TP ranks hold the same loss),
  // so the global batch's mean is the sum / D (equal rows per replica); busy
  // seconds are averaged over the replicas and TP ranks.
  // The optimizer step is busy time (PLAN_FORMAT rule 11), so the bubble is
  // the idle share of the whole step, as the simulator's.
  const double tp_s = m.tp_group ? CollectiveSeconds(*m.tp_group) - tp_before : 0.0;
  PW_ASSIGN_OR_RETURN(auto all, AllGatherDoubles(*m.world, {m.tp_rank == 0 ? m.backend->StepLoss() : 0.0,
                                                            timing.busy_s + optimizer_s, step_s, reduce_wait_s, tp_s,
                                                            timing.end_s}));
  StepReport r;
  for (const auto& v : all) {
    r.rank_busy_s.push_back(v[1]);
    r.loss += v[0];
    r.busy_s += v[1];
    r.step_s = std::max(r.step_s, v[2]);
    r.reduce_wait_s = std::max(r.reduce_wait_s, v[3]);
    r.tp_collective_s += v[4] / static_cast<double>(all.size());
    r.actions_end_s = std::max(r.actions_end_s, v[5]);
  }
  r.loss /= m.dp_size;
  r.busy_s /= m.dp_size * m.tp_size;
  r.bubble_ratio = BubbleRatio(r.busy_s, m.plan.pp_size, r.step_s);
  r.wait_s = timing.wait_s;
  r.tokens = static_cast<int64_t>(batch.rows) * batch.seq * m.dp_size;
  r.grad_norm = grad_norm;
  r.spans = std::move(timing.spans);
  if (m.sync) r.reduce_spans = m.sync->Spans(t0);
  ++m.step;
  return r;
}

std::vector<StageParameterBytes> Engine::StageParameters() const { return impl_->stage_parameters; }

std::vector<NamedValues> Engine::Parameters() const {
  std::vector<NamedValues> out;
  for (const auto& [name, p] : impl_->named_params) out.push_back(ToNamedValues(name, p, p));
  return out;
}

std::vector<NamedValues> Engine::Gradients() const {
  std::vector<NamedValues> out;
  for (const auto& [name, p] : impl_->named_params) out.push_back(ToNamedValues(name, p.grad(), p));
  return out;
}

std::vector<StashReport> Engine::Stash() const {
  std::vector<StashReport> out;
  const ReplicaBatch& shape = impl_->checked.training;
  const int full_rows = *std::max_element(shape.microbatch_sizes.begin(), shape.microbatch_sizes.end());
  for (const auto& [stage, module] : impl_->backend->stages()) {
    StashReport r;
    r.stage = stage;
    r.predicted_bytes = impl_->plan.stages[stage].memory.wstash;
    for (const auto& [key, bytes] : impl_->backend->store().BytesAfterI())
      if (key.first == stage && shape.microbatch_sizes[key.second] == full_rows)
        r.measured_bytes = std::max(r.measured_bytes, bytes);
    out.push_back(r);
  }
  return out;
}

void Engine::SetLearningRate(double lr) {
  for (auto& group : impl_->optimizer->param_groups()) static_cast<torch::optim::AdamWOptions&>(group.options()).lr(lr);
  if (impl_->sync) impl_->sync->SetLearningRate(lr);
}

int Engine::LiveGraphsAfterStep() const { return impl_->backend->LiveGraphsAfterStep(); }
int Engine::HeldMessages() const { return impl_->backend->HeldMessages(); }
int64_t Engine::HeldMessageBytes() const { return impl_->backend->HeldMessageBytes(); }

std::vector<NamedValues> Engine::OptimizerState() const {
  std::vector<NamedValues> out;
  for (const auto& [name, p] : impl_->named_params) {
    const torch::optim::AdamWParamState* st = FindAdamWState(*impl_->optimizer, p);
    if (st == nullptr) continue;
    out.push_back(ToNamedValues(name + ":exp_avg", st->exp_avg(), p));
    out.push_back(ToNamedValues(name + ":exp_avg_sq", st->exp_avg_sq(), p));
    out.push_back(NamedValues{name + ":step", {1}, {static_cast<double>(st->step())}});
  }
  return out;
}

std::vector<std::pair<std::string, std::string>> Engine::TensorDigests() const {
  std::vector<std::pair<std::string, std::string>> out;
  auto digest = [](const torch::Tensor& t) {
    torch::Tensor c = t.detach().to(torch::kCPU).contiguous();
    return HashHex(Fnv1a64Words(c.data_ptr(), static_cast<size_t>(c.numel() * c.element_size())));
  };
  for (const auto& [name, p] : impl_->named_params) {
    out.emplace_back(name, digest(p));
    const torch::optim::AdamWParamState* st = FindAdamWState(*impl_->optimizer, p);
    if (st == nullptr) continue;
    out.emplace_back(name + ":exp_avg", digest(st->exp_avg()));
    out.emplace_back(name + ":exp_avg_sq", digest(st->exp_avg_sq()));
    const int64_t step = st->step();
    out.emplace_back(name + ":step", HashHex(Fnv1a64Words(&step, sizeof(step))));
  }
  return out;
}

StatusOr<std::vector<CheckpointFile>> Engine::SaveCheckpoint(const std::string& step_dir) const {
  const Impl& m = *impl_;
  if (m.tp_size > 1) {
    StatusOr<std::vector<CheckpointFile>> files = m.SaveTensorParallel(step_dir);
    if (!files.ok()) return files.status().WithContext("rank " + std::to_string(m.world->rank()));
    return files;
  }
  const bool zero1 = m.sync && m.sync->zero1();
  std::vector<CheckpointFile> files;
  // Parameters (and, without ZeRO-1, the AdamW state): replica 0 only.
  // One layer file at a time, so that the test hook runs between files.
  if (m.dp_rank == 0) {
    for (const LayerTensors& layer : m.layers) {
      StatusOr<std::vector<CheckpointFile>> layer_files =
          SaveLayerFiles(step_dir, {layer}, zero1 ? nullptr : m.optimizer.get());
      if (!layer_files.ok()) return layer_files.status().WithContext("rank " + std::to_string(m.world->rank()));
      for (CheckpointFile& f : *layer_files) {
        if (m.options.after_checkpoint_file) m.options.after_checkpoint_file(step_dir, f.name);
        files.push_back(std::move(f));
      }
    }
  }
  if (zero1) {
    // ZeRO-1: every data-parallel rank writes its shard of the AdamW state.
    const DataParallelSync* sync = m.sync.get();
    StatusOr<std::vector<CheckpointFile>> shard_files = SaveShardFiles(
        step_dir, m.layers, m.dp_rank, m.dp_size, [sync](const torch::Tensor& p) { return sync->ShardMoments(p); });
    if (!shard_files.ok()) return shard_files.status().WithContext("rank " + std::to_string(m.world->rank()));
    files.insert(files.end(), shard_files->begin(), shard_files->end());
  }
  return files;
}

StatusOr<int64_t> Engine::WriteCheckpoint(const std::string& step_dir, int steps_done) {
  Impl& m = *impl_;
  // Over the whole world: replica 0's ranks write the layer files (the
  // replicas hold the same parameters); with ZeRO-1 every rank also writes
  // its optimizer shard (without TP; with TP, SaveTensorParallel). World
  // rank 0 (pipeline rank 0 of replica 0) makes the directory and writes
  // the manifest last.
  Communicator& world = *m.world;
  const bool writer = world.rank() == 0;
  std::error_code ec;
  Status st;
  if (writer) {
    std::filesystem::create_directories(step_dir, ec);
    if (ec) st = Status::InvalidArgument("cannot create checkpoint directory " + step_dir + ": " + ec.message());
    // A manifest left from an earlier save must not describe the new files.
    if (st.ok()) std::filesystem::remove(step_dir + "/manifest.json", ec);
  }
  PW_RETURN_IF_ERROR(AgreeOnStatus(st, world));
  StatusOr<std::vector<CheckpointFile>> mine = SaveCheckpoint(step_dir);
  PW_RETURN_IF_ERROR(AgreeOnStatus(mine.status(), world));
  nlohmann::json entries = nlohmann::json::array();
  for (const CheckpointFile& f : *mine)
    entries.push_back(
        {{"name", f.name}, {"layer", f.layer}, {"bytes", f.bytes}, {"digest", f.digest}, {"shard", f.shard}});
  PW_ASSIGN_OR_RETURN(std::vector<std::string> all, world.AllGather(entries.dump()));
  std::map<std::pair<std::string, int>, CheckpointFile> by_layer;  // (layer, shard)
  int64_t bytes = 0;
  for (const std::string& text : all)
    for (const nlohmann::json& e : nlohmann::json::parse(text)) {
      CheckpointFile f{e["name"], e["layer"], e["bytes"], e["digest"], e["shard"]};
      bytes += f.bytes;
      by_layer[{f.layer, f.shard}] = f;
    }
  Status written;
  if (writer) {
    CheckpointManifest man;
    man.steps_done = steps_done;
    man.seed = m.options.init_seed;
    man.dtype = m.options.double_precision ? "float64" : "float32";
    man.batch_rows = m.checked.training.rows * m.dp_size;  // the global batch
    man.seq_length = m.checked.training.seq_length;
    man.data_position = static_cast<int64_t>(steps_done) * man.batch_rows;
    man.dp_size = m.dp_size;
    man.optimizer_shards = m.ShardFiles() ? m.dp_size : 1;
    man.tp_size = m.tp_size;
    man.model = CheckpointModelJson(*m.plan.model);
    man.plan_hash = PlanHash(m.plan);
    man.schedule = m.plan.schedule;
    man.pp_size = m.plan.pp_size;
    const std::vector<std::string> layers = LayerNames(m.checked.model);
    for (int shard = -1; shard < (m.ShardFiles() ? m.dp_size : 0) && written.ok(); ++shard)
      for (const std::string& layer : layers) {
        auto it = by_layer.find({layer, shard});
        if (it == by_layer.end()) {
          written = Status::Internal("checkpoint " + step_dir + ": no rank wrote layer " + layer +
                                     (shard >= 0 ? " (optimizer shard " + std::to_string(shard) + ")" : ""));
          break;
        }
        man.files.push_back(it->second);
      }
    if (written.ok()) written = WriteManifest(step_dir, man);
  }
  PW_RETURN_IF_ERROR(AgreeOnStatus(written, world));
  return bytes;
}

Status Engine::LoadCheckpoint(const std::string& step_dir, const CheckpointManifest& manifest) {
  Impl& m = *impl_;
  Status st;
  if (m.sync && m.sync->zero1()) {
    // ZeRO-1: the whole moments of this rank's layers (from any layout),
    // re-sliced into its shard; the parameters as usual.
    StatusOr<std::vector<LoadedParameter>> loaded = ReadLayerFiles(step_dir, manifest, m.layers, true, m.TpShards());
    st = loaded.status();
    if (st.ok()) st = m.sync->LoadShardMoments(*loaded);
    if (st.ok()) {
      try {
        torch::NoGradGuard no_grad;
        for (LoadedParameter& l : *loaded) l.param.copy_(l.value);
      } catch (const c10::Error& e) {
        st = Status::ComputeError("reading checkpoint " + step_dir + ": " + e.what_without_backtrace());
      }
    }
  } else {
    st = LoadLayerFiles(step_dir, manifest, m.layers, m.optimizer.get(), m.TpShards());
  }
  if (!st.ok()) return st.WithContext("rank " + std::to_string(m.world->rank()));
  return Status::Ok();
}

Status Engine::InitFromHf(const std::string& dir) {
  Impl& m = *impl_;
  Status mine = [&]() -> Status {
    if (!m.plan.model) return Status::InvalidArgument("the plan has no model section");
    const std::string config_path = dir + "/config.json";
    if (!std::filesystem::exists(config_path)) return Status::NotFound("--init-from " + dir + ": no config.json in it");
    PW_ASSIGN_OR_RETURN(nlohmann::json config, ReadJsonFile(config_path));
    PW_ASSIGN_OR_RETURN(ModelConfig model, ParseModelConfig(config, config_path));
    PW_RETURN_IF_ERROR(CheckSameModel(*m.plan.model, model, config_path));
    PW_ASSIGN_OR_RETURN(safetensors::Checkpoint ckpt, safetensors::Checkpoint::Open(dir));
    try {
      return LoadHfParameters(ckpt, m.plan.model->family, m.named_params, m.plan.model->tied, m.TpShards());
    } catch (const c10::Error& e) {
      return Status::ComputeError("loading " + dir + ": " + e.what_without_backtrace());
    }
  }();
  if (!mine.ok()) mine = mine.WithContext("rank " + std::to_string(m.world->rank()));
  return AgreeOnStatus(mine, *m.world);
}

const Plan& Engine::plan() const { return impl_->plan; }
int Engine::rank() const { return impl_->comm->rank(); }
int Engine::dp_rank() const { return impl_->dp_rank; }
int Engine::dp_size() const { return impl_->dp_size; }
int Engine::world_rank() const { return impl_->world->rank(); }
int Engine::tp_rank() const { return impl_->tp_rank; }
int Engine::tp_size() const { return impl_->tp_size; }

int64_t Engine::TensorParallelCollectives() const { return impl_->tp_group ? CollectivesRun(*impl_->tp_group) : 0; }

StatusOr<std::vector<NamedValues>> Engine::GatheredParameters() const {
  const Impl& m = *impl_;
  std::vector<NamedValues> out;
  try {
    for (const auto& [name, p] : m.named_params) {
      PW_ASSIGN_OR_RETURN(TensorParallelLayout layout, TensorParallelLayoutOf(m.checked.model, name, m.tp_size));
      if (!m.tp_group || !layout.split) {
        out.push_back(ToNamedValues(name, p, p));
        continue;
      }
      torch::Tensor all = m.tp_group->AllGather(p.detach().unsqueeze(0));  // (t, shard...)
      std::vector<torch::Tensor> shards;
      for (int r = 0; r < m.tp_size; ++r) shards.push_back(all[r]);
      out.push_back(ToNamedValues(name, models::GatherTpShards(shards, layout), p));
    }
  } catch (const c10::Error& e) {
    return Status::ComputeError("world rank " + std::to_string(m.world->rank()) +
                                ": gathering tensor-parallel parameters: " + e.what_without_backtrace());
  }
  return out;
}
Communicator& Engine::pipeline_comm() const { return *impl_->comm; }
bool Engine::distributed_optimizer() const { return impl_->sync && impl_->sync->zero1(); }

}  // namespace pw::exec
