// LibTorch side of `pipewright profile` (executor/profiling/profile.h): per-layer F / I
// / W / B timings and held bytes.
// Dimension letters: b = rows of a microbatch, T = sequence length,
// C = n_embd, V = vocab_size.
#include "executor/profiling/profile.h"

#include <torch/torch.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <string>
#include <type_traits>
#include <unordered_map>

#include "executor/comm/agree.h"
#include "executor/runtime/cpu_allocator.h"
#include "executor/runtime/host_memory.h"
#include "executor/runtime/tensor_parallel.h"
#include "executor/runtime/torch_util.h"
#include "executor/runtime/torch_backend.h"
#include "models/spec/model_config.h"
#include "models/spec/model_family.h"
#include "models/torch/gpt.h"
#include "models/torch/tensor_parallel.h"

namespace pw::exec {

// ---------------------------------------------------------- layer timing ---

namespace {

using Clock = std::chrono::steady_clock;

double Since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double Median(std::vector<double> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

int64_t Median(std::vector<int64_t> v) {
  std::nth_element(v.begin(), v.begin() + v.size() / 2, v.end());
  return v[v.size() / 2];
}

const char* KindOf(const ModelConfig& c, int layer) {
  return layer == 0 ? "embedding" : layer == LayerCount(c) - 1 ? "head" : "block";
}

// The pieces of one microbatch through one layer, as the executor holds them.
struct LayerRun {
  ModelConfig config;
  int layer = 0;
  std::shared_ptr<models::GptLayerImpl> module;
  WeightGradStore store;
  torch::Dtype dtype = torch::kFloat;
  torch::TensorOptions opts;
  // Tensor parallel (LayerProfileOptions::tp_size > 1): the layer runs as a
  // TP rank's shard over the group, its collectives included in F / I / B.
  models::TensorParallelContext tp;

  // Makes `module` rank tp.rank()'s shard (SliceForTpRank of every split
  // parameter, models/spec/tensor_parallel.h) running over tp.group, as
  // GptStage::ShardTensorParallel does for a stage.
  Status ShardTensorParallel() {
    if (!tp.group) return Status::Ok();
    const std::string name = LayerNames(config)[layer];
    torch::NoGradGuard no_grad;
    for (auto& item : module->named_parameters(/*recurse=*/true)) {
      PW_ASSIGN_OR_RETURN(TensorParallelLayout layout,
                          TensorParallelLayoutOf(config, name + "." + item.key(), tp.size()));
      if (!layout.split) continue;
      item.value().set_data(models::SliceForTpRank(item.value().detach(), layout, tp.size(), tp.rank()));
    }
    module->SetTensorParallel(tp);
    return Status::Ok();
  }
  // The layer's input: tokens (b, T) int64 for the embedding, else a leaf
  // (b, T, C) that requires grad (a received activation; with sequence
  // parallelism this rank's (b, T/t, C) sequence shard).
  torch::Tensor Input(int64_t b, int64_t T) const {
    if (layer == 0) return torch::randint(config.vocab, {b, T}, torch::TensorOptions().dtype(torch::kLong));
    const int64_t rows = tp.group && tp.sequence_parallel ? T / tp.size() : T;
    return torch::randn({b, rows, config.hidden}, opts).requires_grad_(true);
  }
  // F: output (b, T, C), or the scalar loss for the head (vocab-parallel
  // under TP, as GptStage::Loss).
  torch::Tensor Forward(const torch::Tensor& x, const torch::Tensor& targets) {
    torch::Tensor out = module->forward(x);  // (b, T, C) or logits (b, T, V)
    if (layer == LayerCount(config) - 1)
      out = tp.group ? models::VocabParallelCrossEntropy(out, targets, config.vocab, tp)
                     : models::LanguageModelLoss(out, targets);  // ()
    return out;
  }
  // I (deferring) or B: backward from `out` with output gradient `dy`
  // (undefined for the loss).
  void Backward(const torch::Tensor& out, const torch::Tensor& dy, bool input_only, int mb) {
    store.Begin(0, mb, input_only);
    if (dy.defined())
      torch::autograd::backward({out}, {dy});
    else
      torch::autograd::backward({out});
    store.End();
  }
};

// Timed samples of one (kind, b, s), accumulated over rounds.
struct ShapeSamples {
  std::vector<double> f, i, w, b;           // seconds, one per microbatch
  std::vector<int64_t> activation, wstash;  // bytes, one per microbatch
  int64_t output_bytes = 0;
};

// One round of `in_flight` microbatches through one layer, in the pattern a
// pipeline rank runs them: split backward F x k, then I x k (each I
// deferring its weight GEMMs), then W x k; then F x k again and the full
// backward B x k. Several microbatches' activations and stashes are alive at
// once, as in a pipeline step, so allocator and cache state resemble the
// executor's (one microbatch at a time, with its memory returned to the
// system between runs, made I 10-40 % slower than inside a step).
// Bytes (counting allocator): activation = held from before F to after F
// (including the output); wstash = activation + (bytes after I - bytes
// before I) - the input gradient, which leaves with SEND_B.
Status MeasureRound(LayerRun& run, int64_t b, int64_t T, int in_flight, bool timed, ShapeSamples* acc) {
  const bool head = run.layer == LayerCount(run.config) - 1;
  const torch::Tensor targets =
      torch::randint(run.config.vocab, {b, T}, torch::TensorOptions().dtype(torch::kLong));  // (b, T)
  std::vector<torch::Tensor> xs(in_flight), outs(in_flight);
  std::vector<int64_t> held_f(in_flight);
  // --- F, I, W (split backward).
  for (int j = 0; j < in_flight; ++j) {
    xs[j] = run.Input(b, T);
    const int64_t base = TrackedCpuBytes();
    const auto t0 = Clock::now();
    outs[j] = run.Forward(xs[j], targets);
    const double f = Since(t0);
    held_f[j] = TrackedCpuBytes() - base;
    acc->output_bytes = head ? 4 : static_cast<int64_t>(outs[j].numel()) * outs[j].element_size();
    if (timed) {
      acc->f.push_back(f);
      acc->activation.push_back(held_f[j]);
    }
  }
  for (int j = 0; j < in_flight; ++j) {
    const int64_t before = TrackedCpuBytes();
    // The output gradient arrives from the next stage (a receive buffer).
    torch::Tensor dy = head ? torch::Tensor() : torch::randn(outs[j].sizes(), run.opts);  // (b, T, C)
    const auto t0 = Clock::now();
    run.Backward(outs[j], dy, /*input_only=*/true, j);
    const double i = Since(t0);
    outs[j] = torch::Tensor();
    dy = torch::Tensor();
    int64_t sent = 0;
    if (run.layer > 0 && xs[j].grad().defined())
      sent = static_cast<int64_t>(xs[j].grad().numel()) * xs[j].grad().element_size();
    const int64_t stash = held_f[j] + (TrackedCpuBytes() - before) - sent;
    xs[j] = torch::Tensor();  // the input gradient is sent away
    if (timed) {
      acc->i.push_back(i);
      acc->wstash.push_back(stash);
    }
  }
  for (int j = 0; j < in_flight; ++j) {
    const auto t0 = Clock::now();
    PW_RETURN_IF_ERROR(run.store.Flush(0, j));
    if (timed) acc->w.push_back(Since(t0));
  }
  // --- B (full backward, weight gradients computed inline).
  for (int j = 0; j < in_flight; ++j) {
    xs[j] = run.Input(b, T);
    outs[j] = run.Forward(xs[j], targets);
  }
  for (int j = 0; j < in_flight; ++j) {
    torch::Tensor dy = head ? torch::Tensor() : torch::randn(outs[j].sizes(), run.opts);
    const auto t0 = Clock::now();
    run.Backward(outs[j], dy, /*input_only=*/false, j);
    if (timed) acc->b.push_back(Since(t0));
    outs[j] = torch::Tensor();
    xs[j] = torch::Tensor();
  }
  return Status::Ok();
}

ProfileSample Summarise(const char* kind, int64_t b, int64_t T, const ShapeSamples& acc) {
  ProfileSample out;
  out.kind = kind;
  out.micro_batch_size = b;
  out.seq_length = T;
  out.f = Median(acc.f);
  out.i = Median(acc.i);
  out.w = Median(acc.w);
  out.b = Median(acc.b);
  out.activation_bytes = Median(acc.activation);
  out.wstash_bytes = Median(acc.wstash);
  out.output_bytes = acc.output_bytes;
  return out;
}

// Params + grads + AdamW state of one layer: bytes held after one full
// training step on it (grads and optimizer state exist), graph dropped.
// Under TP (tp.group), of the rank's shard (collective over the group).
StatusOr<int64_t> MeasureStaticBytes(const ModelConfig& c, int layer, torch::Dtype dtype, uint64_t seed,
                                     const models::TensorParallelContext& tp) {
  const int64_t base = TrackedCpuBytes();
  LayerRun run;
  run.config = c;
  run.layer = layer;
  run.dtype = dtype;
  run.opts = torch::TensorOptions().dtype(dtype);
  run.module = models::MakeGptLayer(c, layer, seed, dtype);
  run.module->SetSink(&run.store);
  run.tp = tp;
  PW_RETURN_IF_ERROR(run.ShardTensorParallel());
  torch::optim::AdamW opt(run.module->parameters(), torch::optim::AdamWOptions(1e-3));
  {
    torch::Tensor x = run.Input(1, 8);
    torch::Tensor t = torch::randint(c.vocab, {1, 8}, torch::TensorOptions().dtype(torch::kLong));
    torch::Tensor out = run.Forward(x, t);
    torch::Tensor dy = layer == LayerCount(c) - 1 ? torch::Tensor() : torch::randn(out.sizes(), run.opts);
    run.Backward(out, dy, false, 0);
    opt.step();
  }
  return TrackedCpuBytes() - base;
}

// Seconds of one optimizer step over one layer's parameters, as
// Engine::Step runs it for a stage: the gradient zeroing, under tensor
// parallelism the sum of the replicated parameters' partial gradients over
// the group (SumPartialGradients, one all-reduce), and the AdamW step with the
// run's default options (EngineOptions). Gradients come from one F + B; the
// median of `rounds` timed steps after `warmup` untimed ones. Under TP,
// collective over the group (every rank calls it with the same layer).
StatusOr<double> MeasureOptimizerSeconds(const ModelConfig& c, int layer, torch::Dtype dtype, uint64_t seed,
                                         const models::TensorParallelContext& tp, int warmup, int rounds) {
  LayerRun run;
  run.config = c;
  run.layer = layer;
  run.dtype = dtype;
  run.opts = torch::TensorOptions().dtype(dtype);
  run.module = models::MakeGptLayer(c, layer, seed, dtype);
  run.module->SetSink(&run.store);
  run.tp = tp;
  PW_RETURN_IF_ERROR(run.ShardTensorParallel());
  std::vector<torch::Tensor> params, partial;
  const std::string name = LayerNames(c)[layer];
  for (auto& item : run.module->named_parameters(/*recurse=*/true)) {
    params.push_back(item.value());
    if (!tp.group) continue;
    PW_ASSIGN_OR_RETURN(bool part, TensorParallelPartialGradient(c, name + "." + item.key(), tp.size(),
                                                                 tp.sequence_parallel));
    if (part) partial.push_back(item.value());
  }
  torch::optim::AdamW opt = MakeOptimizer(params, EngineOptions{});
  {
    torch::Tensor x = run.Input(1, 8);
    torch::Tensor t = torch::randint(c.vocab, {1, 8}, torch::TensorOptions().dtype(torch::kLong));
    torch::Tensor out = run.Forward(x, t);
    torch::Tensor dy = layer == LayerCount(c) - 1 ? torch::Tensor() : torch::randn(out.sizes(), run.opts);
    run.Backward(out, dy, false, 0);
  }
  std::vector<double> samples;
  for (int k = 0; k < warmup + rounds; ++k) {
    const auto t0 = Clock::now();
    ZeroGrads(params);
    if (tp.group) PW_RETURN_IF_ERROR(SumPartialGradients(*tp.group, partial, "profiling the optimizer step"));
    opt.step();
    if (k >= warmup) samples.push_back(Since(t0));
  }
  return Median(samples);
}

// With `comm`: every rank's status of the step just done, gathered; the
// first failure (naming its rank) is returned on every rank, so no rank waits
// for one that stopped. Without: `mine`.
Status AgreeAcrossRanks(Communicator* comm, const Status& mine) { return comm ? AgreeOnStatus(mine, *comm) : mine; }

// Replaces `acc` on every rank by all ranks' samples, concatenated in rank
// order (the median is then taken over the pool).
Status PoolAcrossRanks(Communicator& comm, ShapeSamples* acc) {
  const nlohmann::json mine = {
      {"f", acc->f},          {"i", acc->i}, {"w", acc->w}, {"b", acc->b}, {"activation", acc->activation},
      {"wstash", acc->wstash}};
  PW_ASSIGN_OR_RETURN(std::vector<std::string> all, comm.AllGather(mine.dump()));
  ShapeSamples pooled;
  pooled.output_bytes = acc->output_bytes;
  for (const std::string& text : all) {
    const nlohmann::json j = nlohmann::json::parse(text);
    auto append = [&j](const char* key, auto* out) {
      for (const auto& v : j.at(key)) out->push_back(v.get<typename std::decay_t<decltype(*out)>::value_type>());
    };
    append("f", &pooled.f);
    append("i", &pooled.i);
    append("w", &pooled.w);
    append("b", &pooled.b);
    append("activation", &pooled.activation);
    append("wstash", &pooled.wstash);
  }
  *acc = std::move(pooled);
  return Status::Ok();
}

// The layers to measure: the config through the one reader, as `plan` reads
// it (the executor's byte vocabulary, 256, when it has no vocab_size), built
// as its family's layers (CheckFamilyShape). Dropout is not refused here:
// the executor's layers have none either way, so what is measured is what
// `run` builds (which refuses a plan with dropout).
StatusOr<ModelConfig> ProfiledModel(const nlohmann::json& model) {
  if (!model.is_object()) return Status::InvalidArgument("--model-config: model config is not a JSON object");
  nlohmann::json m = model;
  if (!m.contains("vocab_size") || m["vocab_size"].is_null()) m["vocab_size"] = 256;
  PW_ASSIGN_OR_RETURN(ModelConfig spec, ParseModelConfig(m, "--model-config"));
  PW_RETURN_IF_ERROR(CheckFamilyShape(spec, "--model-config"));
  return spec;
}

}  // namespace

StatusOr<LayerMeasurements> MeasureLayers(const LayerProfileOptions& o, std::FILE* log) {
  PW_ASSIGN_OR_RETURN(ModelConfig config, ProfiledModel(o.model));
  if (o.micro_batch_sizes.empty() || o.seq_lengths.empty())
    return Status::InvalidArgument("--micro-batch-sizes and --seq-lengths must not be empty");
  for (int b : o.micro_batch_sizes)
    if (b < 1) return Status::InvalidArgument("--micro-batch-sizes: " + std::to_string(b) + " is not >= 1");
  for (int s : o.seq_lengths)
    if (s < 1 || s > config.max_positions)
      return Status::InvalidArgument("--seq-lengths: " + std::to_string(s) +
                                     " is outside [1, n_positions=" + std::to_string(config.max_positions) + "]");
  if (o.warmup < 0) return Status::InvalidArgument("--warmup must be >= 0, got " + std::to_string(o.warmup));
  if (o.repetitions < 1)
    return Status::InvalidArgument("--repetitions must be >= 1, got " + std::to_string(o.repetitions));
  if (o.in_flight < 1) return Status::InvalidArgument("--in-flight must be >= 1, got " + std::to_string(o.in_flight));
  InstallTrackingCpuAllocator();
  KeepFreedHostMemory();  // the executor's host memory policy (host_memory.h)
  if (o.threads > 0) torch::set_num_threads(o.threads);
  torch::manual_seed(o.seed);
  const torch::Dtype dtype = o.double_precision ? torch::kDouble : torch::kFloat;
  models::TensorParallelContext tp;
  if (o.tp_size > 1) {
    if (o.comm == nullptr || o.comm->size() != o.tp_size)
      return Status::InvalidArgument("--tp " + std::to_string(o.tp_size) + ": run under mpirun -np " +
                                     std::to_string(o.tp_size) + " (the ranks are one tensor-parallel group), got " +
                                     std::to_string(o.comm ? o.comm->size() : 1) + " rank(s)");
    PW_RETURN_IF_ERROR(CheckTensorParallel(config, o.tp_size, o.sequence_parallel, o.seq_lengths.front()));
    for (int s : o.seq_lengths)
      if (o.sequence_parallel && s % o.tp_size != 0)
        return Status::InvalidArgument("--seq-lengths: " + std::to_string(s) + " is not divisible by --tp " +
                                       std::to_string(o.tp_size) + " (sequence parallelism)");
    o.comm->SetSpinWait(0.005);  // as the engine waits on its TP group (engine.cc)
    tp.group = MakeTensorParallelGroup(*o.comm, torch::Device(torch::kCPU));
    tp.sequence_parallel = o.sequence_parallel;
  }
  LayerMeasurements m;
  m.element_bytes = o.double_precision ? 8 : 4;
  // One representative layer per kind: embedding (0), block (1), head (N+1).
  // Rounds go round-robin over every (kind, shape), so a slow spell of the
  // machine (another process, frequency changes) spreads over all shapes
  // instead of biasing the ones measured during it.
  const int last = LayerCount(config) - 1;
  std::vector<std::unique_ptr<LayerRun>> runs;
  struct Shape {
    LayerRun* run;
    int b, s;
    ShapeSamples acc;
  };
  std::vector<Shape> shapes;
  Status setup;
  try {
    for (int layer : {0, 1, last}) {
      const char* kind = KindOf(config, layer);
      PW_ASSIGN_OR_RETURN(m.static_bytes[kind], MeasureStaticBytes(config, layer, dtype, o.seed, tp));
      PW_ASSIGN_OR_RETURN(m.optimizer_s[kind],
                          MeasureOptimizerSeconds(config, layer, dtype, o.seed, tp, o.warmup, o.repetitions));
      auto run = std::make_unique<LayerRun>();
      run->config = config;
      run->layer = layer;
      run->dtype = dtype;
      run->opts = torch::TensorOptions().dtype(dtype);
      run->module = models::MakeGptLayer(config, layer, o.seed, dtype);
      run->module->SetSink(&run->store);
      run->tp = tp;
      PW_RETURN_IF_ERROR(run->ShardTensorParallel());
      for (int s : o.seq_lengths)
        for (int b : o.micro_batch_sizes) shapes.push_back(Shape{run.get(), b, s, {}});
      runs.push_back(std::move(run));
    }
  } catch (const c10::Error& e) {
    setup = Status::ComputeError(std::string("profiling setup: ") + e.what_without_backtrace());
  }
  PW_RETURN_IF_ERROR(AgreeAcrossRanks(o.comm, setup));
  for (int round = 0; round < o.warmup + o.repetitions; ++round)
    for (Shape& sh : shapes) {
      Status st;
      try {
        st = MeasureRound(*sh.run, sh.b, sh.s, o.in_flight, round >= o.warmup, &sh.acc);
      } catch (const c10::Error& e) {
        st = Status::ComputeError(std::string("profiling: ") + e.what_without_backtrace());
      }
      if (!st.ok())
        st = st.WithContext(std::string(KindOf(config, sh.run->layer)) + " b=" + std::to_string(sh.b) +
                            " s=" + std::to_string(sh.s));
      // Between rounds the ranks meet, so the next round runs on all of them at once.
      PW_RETURN_IF_ERROR(AgreeAcrossRanks(o.comm, st));
    }
  if (o.comm) {
    for (Shape& sh : shapes) PW_RETURN_IF_ERROR(PoolAcrossRanks(*o.comm, &sh.acc));
    if (log)
      std::fprintf(log, "layers measured on %d ranks at once (medians over %zu samples per shape and pass)\n",
                   o.comm->size(), shapes.empty() ? size_t{0} : shapes.front().acc.f.size());
  }
  for (const Shape& sh : shapes) {
    ProfileSample sample = Summarise(KindOf(config, sh.run->layer), sh.b, sh.s, sh.acc);
    if (log)
      std::fprintf(log,
                   "%-9s b=%-3d s=%-5d F %9.3f ms  I %9.3f ms  W %9.3f ms  B %9.3f ms  act %10lld B  "
                   "wstash %10lld B\n",
                   sample.kind.c_str(), sh.b, sh.s, 1e3 * sample.f, 1e3 * sample.i, 1e3 * sample.w, 1e3 * sample.b,
                   static_cast<long long>(sample.activation_bytes), static_cast<long long>(sample.wstash_bytes));
    m.samples.push_back(sample);
  }
  return m;
}

}  // namespace pw::exec
