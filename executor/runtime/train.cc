#include "executor/runtime/train.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <thread>
#include <utility>

#include "base/format.h"
#include "base/hash.h"
#include "base/output_place.h"
#include "executor/checkpoint/checkpoint.h"
#include "executor/comm/agree.h"
#include "executor/data/data.h"
#include "executor/runtime/engine.h"
#include "executor/runtime/measured_trace.h"
#include "executor/runtime/preflight.h"
#include "executor/runtime/sampler.h"
#include "executor/runtime/straggler.h"
#include "executor/runtime/watchdog.h"
#include "models/spec/footprint.h"
#include "plan/replica_batch.h"

namespace pw::exec {

namespace {

// Linear warm-up over warmup_steps, then cosine decay to lr/10 at the end.
double LearningRate(const RunOptions& o, int step) {
  if (step < o.warmup_steps) return o.lr * (step + 1) / o.warmup_steps;
  const int decay_steps = std::max(1, o.steps - o.warmup_steps);
  const double progress = std::min(1.0, static_cast<double>(step - o.warmup_steps) / decay_steps);
  return o.lr * (0.1 + 0.9 * 0.5 * (1.0 + std::cos(3.14159265358979323846 * progress)));
}

// Resolves --clip-grad-norm against the plan: the plan records whether a
// global barrier ends each step (training.global_barrier, PLAN_FORMAT rule 9).
StatusOr<double> ClipNorm(const RunOptions& o, const Plan& plan) {
  const double planned = plan.training ? plan.training->clip_grad_norm : 0.0;
  const bool barrier = plan.training && plan.training->global_barrier;
  const double clip = o.clip_grad_norm < 0 ? planned : o.clip_grad_norm;
  if (clip > 0 && !barrier)
    return Status::InvalidArgument("--clip-grad-norm " + std::to_string(clip) +
                                   ": clipping by the global norm puts a barrier at the end of "
                                   "each step, but the plan " +
                                   o.plan_path +
                                   " was not made for one (training.global_barrier is not true; it "
                                   "may minimise steady_step_s). Re-plan with pipewright plan --clip-grad-norm");
  return clip;
}

// FNV-1a 64 over the parameter names and the bit patterns of their values
// (float -> double is exact, so equal digests mean bit-identical weights).
std::string ParameterDigest(const std::vector<NamedValues>& params) {
  uint64_t h = kFnv1aOffsetBasis;
  for (const NamedValues& nv : params) {
    h = Fnv1a64(nv.name, h);
    h = Fnv1a64Bytes(nv.values.data(), nv.values.size() * sizeof(double), h);
  }
  return HashHex(h);
}

constexpr char kNonFiniteLoss[] = "non-finite loss";
constexpr char kStragglerStop[] = "--stop-on-straggler";

}  // namespace

static DataSpec DataSpecOf(const RunOptions& o) {
  DataSpec d;
  d.path = o.data_path;
  d.token_dtype = o.token_dtype;
  d.tokenizer = o.tokenizer;
  d.order = o.data_order;
  return d;
}

Status ValidateRunOptions(const RunOptions& o) {
  auto bad = [](const std::string& flag, const std::string& value, const std::string& rule) {
    return Status::InvalidArgument(flag + " " + value + ": " + rule);
  };
  if (o.steps < 1) return bad("--steps", std::to_string(o.steps), "must be >= 1");
  if (!o.init_from.empty() && !o.resume.empty())
    return bad("--init-from", o.init_from, "cannot be combined with --resume (a checkpoint holds its own weights)");
  // --lr 0 is allowed: the loss of given weights (--init-from) on given data, unchanged by the steps.
  if (!std::isfinite(o.lr) || o.lr < 0)
    return bad("--lr", FormatShort(o.lr), "the learning rate must be finite and >= 0");
  PW_RETURN_IF_ERROR(ValidateDataSpec(DataSpecOf(o)));
  if (!std::isfinite(o.beta2) || o.beta2 < 0 || o.beta2 >= 1)
    return bad("--adam-beta2", FormatShort(o.beta2), "must be in [0, 1)");
  if (!std::isfinite(o.weight_decay) || o.weight_decay < 0)
    return bad("--weight-decay", FormatShort(o.weight_decay), "must be finite and >= 0");
  // -1 (the default) means the plan's training.clip_grad_norm.
  if (!std::isfinite(o.clip_grad_norm) || (o.clip_grad_norm < 0 && o.clip_grad_norm != -1))
    return bad("--clip-grad-norm", FormatShort(o.clip_grad_norm), "must be finite and >= 0 (0 = off)");
  if (!std::isfinite(o.temperature) || o.temperature <= 0)
    return bad("--temperature", FormatShort(o.temperature), "must be finite and > 0");
  if (o.sample_tokens < 0) return bad("--sample", std::to_string(o.sample_tokens), "must be >= 0 (0 = no sample)");
  if (o.warmup_steps < 0) return bad("--warmup-steps", std::to_string(o.warmup_steps), "must be >= 0 (0 = no warm-up)");
  if (o.checkpoint_every < 0)
    return bad("--checkpoint-every", std::to_string(o.checkpoint_every), "must be >= 0 (0 = never)");
  if (o.log_every < 0)
    return bad("--log-every", std::to_string(o.log_every),
               "must be >= 0 (0 = about " + std::to_string(kProgressLines) + " lines per run)");
  if (!std::isfinite(o.straggler_threshold) || (o.straggler_threshold != 0 && o.straggler_threshold <= 1))
    return bad("--straggler-threshold", FormatShort(o.straggler_threshold),
               "must be 0 (off) or > 1 (times the peers' median compute against the plan)");
  if (o.straggler_window < 1) return bad("--straggler-window", std::to_string(o.straggler_window), "must be >= 1");
  if (o.stop_on_straggler && o.straggler_threshold == 0)
    return bad("--stop-on-straggler", "", "needs the straggler check (--straggler-threshold > 1)");
  if (!std::isfinite(o.slow_ms) || o.slow_ms < 0) return bad("--slow-ms", FormatShort(o.slow_ms), "must be >= 0");
  if (o.trace_step < -1 || o.trace_step >= o.steps)
    return bad("--trace-step", std::to_string(o.trace_step),
               "must be a 0-based step below --steps " + std::to_string(o.steps));
  // Output places, checked by creating (and removing) a file there before
  // any training, so that a typo, /proc or a read-only mount does not cost
  // the run (or leave some ranks' files behind).
  if (!o.trace_path.empty()) PW_RETURN_IF_ERROR(CheckOutputFile("--trace", o.trace_path));
  for (const auto& [flag, dir] :
       {std::pair<const char*, const std::string&>{"--save", o.save_dir}, {"--checkpoint-dir", o.checkpoint_dir}})
    if (!dir.empty()) PW_RETURN_IF_ERROR(CheckOutputDirectory(flag, dir));
  return Status::Ok();
}

bool IsNonFiniteLoss(const Status& status) {
  return status.code() == StatusCode::kComputeError && status.message().find(kNonFiniteLoss) != std::string::npos;
}

bool IsStragglerStop(const Status& status) {
  return status.code() == StatusCode::kComputeError && status.message().find(kStragglerStop) != std::string::npos;
}

namespace {

// What one run shares between its phases (the plan, its data, the engine, the
// communicator and the summary being filled).
struct RunContext {
  const RunOptions& options;
  Communicator& comm;
  std::FILE* out;
  const Plan& plan;
  const ReplicaBatch& shape;
  TextDataset& data;
  Engine& engine;
  RunSummary& summary;
  std::string plan_hash;
  std::string dtype;      // "float32" | "float64"
  bool printer = false;   // rank 0 prints
  double step_flops = 0;  // model FLOPs of one step (all ranks): F + I + W of every layer, every row
  double peak_flops = 0;  // the plan's device peak, FLOP/s per rank; 0 = no device in the plan (no MFU)

  // Model FLOPs utilisation of a step of `step_s` seconds: model FLOP/s per
  // rank over the device's peak (a fraction); 0 without a device.
  double Mfu(double step_s) const {
    return peak_flops > 0 && step_s > 0 ? step_flops / step_s / comm.size() / peak_flops : 0.0;
  }
  // " | MFU 41.3 %", or "" without a device.
  std::string MfuText(double step_s) const {
    if (peak_flops <= 0) return "";
    char buf[48];
    std::snprintf(buf, sizeof buf, " | MFU %.2f %%", 100.0 * Mfu(step_s));
    return buf;
  }
};

// Collective: one digest of every parameter and AdamW state tensor of the
// model over all ranks, keyed by name (Engine::TensorDigests, then
// ParameterDigest of the name-sorted "name=digest" list): the same whatever plan holds the layers, so a
// checkpoint written under one plan and loaded under another prints the
// same value. Returned on every rank.
StatusOr<std::string> ModelDigest(RunContext& run) {
  nlohmann::json mine = nlohmann::json::object();
  for (const auto& [name, digest] : run.engine.TensorDigests()) mine[name] = digest;
  PW_ASSIGN_OR_RETURN(std::vector<std::string> all, run.comm.AllGather(mine.dump()));
  std::map<std::string, std::string> by_name;
  for (const std::string& text : all) {
    const nlohmann::json rank_digests = nlohmann::json::parse(text);
    for (const auto& [name, digest] : rank_digests.items()) by_name[name] = digest.get<std::string>();
  }
  std::vector<NamedValues> list;
  for (const auto& [name, digest] : by_name) list.push_back(NamedValues{name + "=" + digest, {}, {}});
  return ParameterDigest(list);
}

// Model FLOPs of one step of `plan` (forward, input- and weight-gradient
// backward of every layer for every sequence of the global batch; models/spec
// footprint with micro-batch size 1, times the rows). Recomputation is not
// counted, as in the MFU of PaLM (Chowdhery et al. 2022, appendix B): a
// recomputing plan does more work for the same model FLOPs. 0 without a
// model section.
double StepFlops(const Plan& plan) {
  if (!plan.model || !plan.training) return 0.0;
  pw::TrainingShape one;  // models/spec: one sequence (not exec::ReplicaBatch)
  one.micro_batch_size = 1;
  one.seq_length = plan.training->seq_length;
  one.recompute = Recompute::kNone;
  one.precision = plan.training->precision;
  double per_row = 0;
  for (const LayerSpec& layer : BuildLayerList(*plan.model)) {
    const LayerFootprint f = ComputeFootprint(*plan.model, layer, one);
    per_row += f.flops_f + f.flops_i + f.flops_w;
  }
  return per_row * static_cast<double>(plan.training->global_batch_size);
}

std::string Seconds(double s) {
  char buf[32];
  if (s < 100)
    std::snprintf(buf, sizeof buf, "%.1f s", s);
  else if (s < 6000)
    std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
  else
    std::snprintf(buf, sizeof buf, "%.1f h", s / 3600);
  return buf;
}

// The element type the run trains in: the plan's training.dtype (fp64 is
// float64, anything else float32: a bf16 plan is refused by the pre-flight
// check, naming the field). A --dtype that is not the plan's is refused.
StatusOr<bool> RunsInDoublePrecision(const RunOptions& options, const Plan& plan) {
  const Precision planned = plan.training ? plan.training->precision : Precision::kFp32;
  const std::string name = PrecisionName(planned);
  if (!options.dtype.empty() && options.dtype != name)
    return Status::InvalidArgument("--dtype " + options.dtype + ": the plan " + options.plan_path +
                                   " says training.dtype " + name +
                                   " (its message and memory sizes follow it); omit --dtype (run takes the plan's) "
                                   "or plan again with --dtype " +
                                   options.dtype);
  return planned == Precision::kFp64;
}

// The engine's options: the run's flags, the plan's dtype and the clipping
// the plan allows.
StatusOr<EngineOptions> EngineOptionsFor(const RunOptions& options, const Plan& plan) {
  PW_ASSIGN_OR_RETURN(double clip, ClipNorm(options, plan));
  EngineOptions eo;
  PW_ASSIGN_OR_RETURN(eo.double_precision, RunsInDoublePrecision(options, plan));
  eo.clip_grad_norm = clip;
  eo.device = options.device;
  eo.local_rank = options.local_rank;
  eo.device_messages = options.device_messages;
  eo.init_seed = options.seed;
  eo.random_init = options.init_from.empty() && options.resume.empty();  // else loaded before the first step
  eo.lr = options.lr;
  eo.weight_decay = options.weight_decay;
  eo.beta2 = options.beta2;
  return eo;
}

// --resume: checks the checkpoint against this run (model, dtype, seed,
// batch shape; not the plan) and loads the layers of every rank's stages;
// agreed on, so all ranks refuse together. Sets summary.first_step.
Status Resume(RunContext& run) {
  const RunOptions& options = run.options;
  Status st;
  StatusOr<std::string> dir = ResolveCheckpointDir(options.resume, "--resume");
  StatusOr<CheckpointManifest> manifest = dir.ok() ? ReadManifest(*dir) : StatusOr<CheckpointManifest>(dir.status());
  if (!manifest.ok()) st = manifest.status();
  if (st.ok())
    st = CheckResumable(*manifest, *dir, *run.plan.model, options.seed, run.dtype,
                        run.shape.rows * run.engine.dp_size(), run.shape.seq_length);
  if (st.ok() && manifest->steps_done >= options.steps)
    st = Status::InvalidArgument("--resume " + *dir + ": the checkpoint is after step " +
                                 std::to_string(manifest->steps_done) + ", --steps is " +
                                 std::to_string(options.steps) + ": nothing left to run");
  if (st.ok()) st = run.engine.LoadCheckpoint(*dir, *manifest);
  PW_RETURN_IF_ERROR(AgreeOnStatus(st, run.comm));
  run.summary.first_step = manifest->steps_done;
  PW_ASSIGN_OR_RETURN(std::string digest, ModelDigest(run));
  if (run.printer) {
    std::fprintf(run.out, "resumed from %s after step %d (written by %s, P=%d)\n", dir->c_str(), run.summary.first_step,
                 manifest->schedule.c_str(), manifest->pp_size);
    std::fprintf(run.out, "loaded parameters and AdamW state fnv1a64 (by name, all ranks): %s\n", digest.c_str());
  }
  return Status::Ok();
}

// Every rank of data-parallel replica 0 writes its layers' files of step
// `done` into `dir` (the replicas hold the same state); rank 0 then writes
// the manifest (last: a step directory with a manifest has every
// layer file in place). Returns the slowest rank's seconds.
StatusOr<double> WriteCheckpointTo(RunContext& run, const std::string& dir, int done, bool report = true) {
  const auto c0 = std::chrono::steady_clock::now();
  // Replica 0's pipeline writes; every rank of the world agrees on the
  // outcome, so no replica waits below for a writer that failed.
  StatusOr<int64_t> written = run.engine.WriteCheckpoint(dir, done);
  PW_RETURN_IF_ERROR(AgreeOnStatus(written.status(), run.comm));
  const int64_t bytes = *written;
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
  PW_ASSIGN_OR_RETURN(auto all, AllGatherDoubles(run.comm, {secs}));
  double max_s = 0;
  for (const auto& v : all) max_s = std::max(max_s, v[0]);
  if (!report) return max_s;
  PW_ASSIGN_OR_RETURN(std::string digest, ModelDigest(run));
  if (run.printer) {
    const size_t layer_files = static_cast<size_t>(run.plan.model->num_layers + 2);
    const std::string shards = run.engine.distributed_optimizer() && run.engine.tp_size() == 1
                                   ? " + " + std::to_string(layer_files * static_cast<size_t>(run.engine.dp_size())) +
                                         " ZeRO-1 optimizer shard files"
                                   : "";
    std::fprintf(run.out, "checkpoint %s | %zu layer files%s, %lld bytes | %.3f s | fnv1a64 %s\n", dir.c_str(),
                 layer_files, shards.c_str(), static_cast<long long>(bytes), max_s, digest.c_str());
    std::fflush(run.out);
  }
  ++run.summary.checkpoints_written;
  run.summary.checkpoint_bytes = bytes;
  return max_s;
}

// Replica `dp_rank`'s rows of step `step`'s global batch of dp_size x rows
// sequences: rows [dp_rank*rows, (dp_rank+1)*rows) (docs/DATA_PARALLEL.md),
// so that the replicas together train on exactly the global batch a single
// process would (docs/DATA.md gives the row order).
TokenBatch ReplicaTokens(const TextDataset& data, int step, int rows, int dp_rank, int dp_size) {
  return data.Batch(step, rows * dp_size, dp_rank * rows, rows);
}

StatusOr<double> WriteStepCheckpoint(RunContext& run, int done) {
  return WriteCheckpointTo(run, CheckpointStepDir(run.options.checkpoint_dir, done), done);
}

// The straggler check of a run (straggler.h): the detector over the plan's
// per-rank compute, the ranks' host names (gathered once), and rank 0's
// line when one is found.
class StragglerCheck {
 public:
  // nullptr when the check is off (--straggler-threshold 0) or the plan
  // cannot be simulated (pre-flight simulated it: not expected). Collective
  // (the host names).
  static StatusOr<std::unique_ptr<StragglerCheck>> Start(RunContext& run) {
    if (run.options.straggler_threshold <= 0) return std::unique_ptr<StragglerCheck>();
    char host[256] = {0};
    ::gethostname(host, sizeof host - 1);
    PW_ASSIGN_OR_RETURN(std::vector<std::string> hosts, run.comm.AllGather(host));
    StatusOr<std::vector<double>> planned = PlannedComputeSeconds(run.plan);
    if (!planned.ok() || static_cast<int>(planned->size()) != run.comm.size()) return std::unique_ptr<StragglerCheck>();
    StragglerOptions so;
    so.threshold = run.options.straggler_threshold;
    so.window = run.options.straggler_window;
    return std::unique_ptr<StragglerCheck>(new StragglerCheck(run, std::move(hosts), *std::move(planned), so));
  }

  // Adds a step; true when it made a rank a straggler (rank 0 printed its
  // line, summary.stragglers has it).
  bool Found(int step, const StepReport& r) {
    std::optional<StragglerReport> found = detector_.Add(step, r.rank_busy_s, r.step_s);
    if (!found) return false;
    const std::string text = DescribeStraggler(*found, hosts_[found->rank], run_.options.straggler_threshold);
    run_.summary.stragglers.push_back(text);
    if (run_.printer) {
      std::fprintf(run_.out, "straggler: %s\n", text.c_str());
      std::fflush(run_.out);
    }
    return true;
  }

  // "compute vs plan per rank: x1.02 x0.98 ... (straggler threshold 1.3)".
  std::string Row() const {
    std::string row = "compute vs plan per rank:";
    char buf[32];
    for (double x : detector_.MeanRatios()) {
      std::snprintf(buf, sizeof buf, " x%.2f", x);
      row += buf;
    }
    std::snprintf(buf, sizeof buf, " (straggler threshold %.2g)", run_.options.straggler_threshold);
    return row + buf;
  }

 private:
  StragglerCheck(RunContext& run, std::vector<std::string> hosts, std::vector<double> planned, StragglerOptions so)
      : run_(run), hosts_(std::move(hosts)), detector_(std::move(planned), so) {}
  RunContext& run_;
  std::vector<std::string> hosts_;
  StragglerDetector detector_;
};

// The training steps from summary.first_step to --steps: logging, the
// non-finite loss stop, checkpoints, fault injection, the traced step.
Status TrainSteps(RunContext& run) {
  const RunOptions& options = run.options;
  RunSummary& summary = run.summary;
  double sum_step = 0, sum_tps = 0, sum_bubble = 0, sum_ckpt = 0, sum_reduce = 0, sum_tp = 0;
  int counted = 0;
  const int trace_step = options.trace_step < 0 ? options.steps - 1 : options.trace_step;
  std::vector<ActionSpan> traced;
  StepHooks hooks;
  hooks.board = options.board;
  hooks.record_spans = !options.trace_path.empty();
  const int fault_index = static_cast<int>(run.plan.ranks[run.engine.rank()].size() / 2);
  int current_step = 0;
  const auto started = std::chrono::steady_clock::now();
  if (options.fault_rank == run.comm.rank() && options.fault_kind != "checkpoint")
    hooks.before_action = [&](int index) {
      if (current_step != options.fault_step || index != fault_index) return;
      std::fprintf(stderr, "rank %d (pid %d): fault injection: %s at step %d, action %d\n", run.comm.rank(),
                   static_cast<int>(::getpid()), options.fault_kind == "hang" ? "SIGSTOP" : "SIGKILL", current_step,
                   index);
      std::fflush(stderr);
      ::raise(options.fault_kind == "hang" ? SIGSTOP : SIGKILL);
    };
  if (options.slow_rank == run.comm.rank() && options.slow_ms > 0)
    hooks.in_compute = [ms = options.slow_ms] {
      std::this_thread::sleep_for(std::chrono::duration<double, std::milli>(ms));
    };
  PW_ASSIGN_OR_RETURN(std::unique_ptr<StragglerCheck> stragglers, StragglerCheck::Start(run));
  const int steps_to_run = options.steps - summary.first_step;
  const int log_every =
      options.log_every > 0 ? options.log_every : std::max(1, (steps_to_run + kProgressLines - 1) / kProgressLines);
  for (int step = summary.first_step; step < options.steps; ++step) {
    current_step = step;
    run.engine.SetLearningRate(LearningRate(options, step));
    TokenBatch batch = ReplicaTokens(run.data, step, run.shape.rows, run.engine.dp_rank(), run.engine.dp_size());
    StatusOr<StepReport> r = run.engine.Step(batch, /*apply_optimizer=*/true, &hooks);
    if (!r.ok()) return r.status();
    // The loss is all-gathered in Step: every rank sees the same value and
    // stops here at the same step.
    if (!std::isfinite(r->loss))
      return Status::ComputeError(std::string(kNonFiniteLoss) + " (" + FormatShort(r->loss) + ") at step " +
                                  std::to_string(step + 1) + "/" + std::to_string(options.steps) + " (rank " +
                                  std::to_string(run.comm.rank()) + "): training diverged; lower --lr (" +
                                  FormatShort(LearningRate(options, step)) + " at this step) or use --clip-grad-norm");
    if (step == trace_step) traced = r->spans;
    const double tps = static_cast<double>(r->tokens) / r->step_s;
    if (step == summary.first_step) summary.first_loss = r->loss;
    summary.last_loss = r->loss;
    if (step > summary.first_step || options.steps - summary.first_step == 1) {
      sum_step += r->step_s;
      sum_tps += tps;
      sum_bubble += r->bubble_ratio;
      sum_reduce += r->reduce_wait_s;
      sum_tp += r->tp_collective_s;
      ++counted;
    }
    if (run.printer && (step % log_every == 0 || step + 1 == options.steps)) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      const int done_here = step + 1 - summary.first_step;
      const double eta = elapsed / done_here * (options.steps - step - 1);
      // Data parallel: the seconds the slowest rank blocked on the gradient
      // reduction after its last action (the all-reduce's exposed time).
      char reduce[64] = "";
      if (run.engine.dp_size() > 1)
        std::snprintf(reduce, sizeof reduce, " | all-reduce exposed %.3f s", r->reduce_wait_s);
      std::fprintf(run.out,
                   "step %d/%d | loss %.4f | %.0f tok/s | step %.3f s | bubble %.3f%s | %.3g GFLOP/s/rank%s | "
                   "elapsed %s | ETA %s\n",
                   step + 1, options.steps, r->loss, tps, r->step_s, r->bubble_ratio, reduce,
                   run.step_flops / r->step_s / run.comm.size() / 1e9, run.MfuText(r->step_s).c_str(),
                   Seconds(elapsed).c_str(), Seconds(eta).c_str());
      std::fflush(run.out);
    }
    const int done = step + 1;
    // --checkpoint-dir alone: one checkpoint after the last step.
    const bool due = options.checkpoint_every > 0 ? done % options.checkpoint_every == 0
                                                  : !options.checkpoint_dir.empty() && done == options.steps;
    if (due) {
      PW_ASSIGN_OR_RETURN(double secs, WriteStepCheckpoint(run, done));
      sum_ckpt += secs;
    }
    // Every rank sees the same all-gathered times, so every rank finds the
    // same straggler after the same step (and stops together).
    if (stragglers && stragglers->Found(step, *r) && options.stop_on_straggler) {
      if (!due && !options.checkpoint_dir.empty()) PW_RETURN_IF_ERROR(WriteStepCheckpoint(run, done).status());
      const std::string saved = options.checkpoint_dir.empty()
                                    ? std::string(" (no --checkpoint-dir: nothing saved)")
                                    : " (checkpoint " + CheckpointStepDir(options.checkpoint_dir, done) + ")";
      if (run.printer) {
        std::fprintf(run.out, "straggler: stopping after step %d%s\n", done, saved.c_str());
        std::fflush(run.out);
      }
      return Status::ComputeError("straggler " + summary.stragglers.back() + ": stopped after step " +
                                  std::to_string(done) + saved + " (" + kStragglerStop + ")");
    }
  }
  if (summary.checkpoints_written > 0) summary.mean_checkpoint_s = sum_ckpt / summary.checkpoints_written;
  if (!options.trace_path.empty() && run.engine.dp_rank() == 0 && run.engine.tp_rank() == 0) {
    // Replica 0's ranks (the pipeline the plan's streams describe); with
    // tensor parallelism those of TP rank 0 (its peers run the same lists).
    if (trace_step < summary.first_step || trace_step >= options.steps)
      traced.clear();  // WriteMeasuredTrace reports it
    PW_RETURN_IF_ERROR(WriteMeasuredTrace(run.plan, traced, run.engine.pipeline_comm(), options.trace_path,
                                          "measured step " + std::to_string(trace_step) + " of " + options.plan_path));
    if (run.printer) std::fprintf(run.out, "trace of step %d -> %s\n", trace_step, options.trace_path.c_str());
  }
  if (stragglers && run.printer) {
    std::fprintf(run.out, "stragglers: %s | %s\n",
                 summary.stragglers.empty() ? "none" : std::to_string(summary.stragglers.size()).c_str(),
                 stragglers->Row().c_str());
    for (const std::string& s : summary.stragglers) std::fprintf(run.out, "  straggler %s\n", s.c_str());
  }
  summary.mean_step_s = sum_step / counted;
  summary.mean_tokens_per_s = sum_tps / counted;
  summary.mean_bubble_ratio = sum_bubble / counted;
  summary.mean_reduce_wait_s = sum_reduce / counted;
  summary.mean_tp_collective_s = sum_tp / counted;
  summary.mean_mfu = run.Mfu(summary.mean_step_s);
  return Status::Ok();
}

// --save (or a temporary directory for --sample): every rank saves its
// stages; rank 0 samples. A sampling failure goes to `sampled` (reported by
// the caller after the last collective, so the other ranks finish instead of
// waiting for rank 0); the returned Status is a collective's or saving's.
Status SaveAndSample(RunContext& run, Status* sampled) {
  const RunOptions& options = run.options;
  std::string dir = options.save_dir;
  if (dir.empty() && options.sample_tokens > 0) {
    // Rank 0 picks a temporary directory and tells the others (same host).
    std::string mine;
    if (run.printer) {
      char tmpl[] = "/tmp/pipewright-sample-XXXXXX";
      if (mkdtemp(tmpl) == nullptr) return Status::Internal("rank 0: mkdtemp failed");
      mine = tmpl;
    }
    PW_ASSIGN_OR_RETURN(auto all, run.comm.AllGather(mine));
    dir = all[0];
  }
  // --save DIR: DIR becomes one checkpoint (the form --checkpoint-dir writes
  // per step), which --resume, generate and export read.
  if (!dir.empty()) PW_RETURN_IF_ERROR(WriteCheckpointTo(run, dir, options.steps, !options.save_dir.empty()).status());
  if (options.sample_tokens > 0 && run.printer) {
    SampleOptions so;
    so.prompt = options.sample_prompt;
    so.tokens = options.sample_tokens;
    so.temperature = options.temperature;
    so.seed = options.seed;
    so.tokenizer = options.tokenizer;
    StatusOr<std::string> text = SampleText(dir, so, &run.plan);
    if (text.ok()) {
      run.summary.sample = *text;
      std::fprintf(run.out, "--- sample (%d %s, temperature %.2f) ---\n%s\n---\n", options.sample_tokens,
                   options.tokenizer.empty() ? "bytes" : "tokens", options.temperature, run.summary.sample.c_str());
    } else {
      *sampled = text.status().WithContext("sampling on rank 0 from " + dir +
                                           " (every rank saves its layers there: on several hosts, pass --save "
                                           "with a directory on a shared filesystem)");
    }
    if (options.save_dir.empty()) std::filesystem::remove_all(dir);
  }
  return Status::Ok();
}

}  // namespace

StatusOr<RunSummary> RunTraining(const RunOptions& options, Communicator& comm, std::FILE* out) {
  // Local checks only, the same on every rank: all ranks refuse together.
  PW_RETURN_IF_ERROR(ValidateRunOptions(options));
  // Every failure before training is folded into the plan agreement, so that
  // all ranks refuse together instead of some waiting for the others.
  StatusOr<Plan> plan = ReadPlanFile(options.plan_path);
  StatusOr<ReplicaBatch> shape = plan.ok() ? ReadReplicaBatch(*plan) : StatusOr<ReplicaBatch>(plan.status());
  StatusOr<TextDataset> data = shape.ok() ? TextDataset::Open(DataSpecOf(options), shape->seq_length, options.seed,
                                                              plan->model ? plan->model->vocab : 256)
                                          : StatusOr<TextDataset>(shape.status());
  if (!data.ok()) {
    Status agreed = AgreeOnPlan(StatusOr<Plan>(data.status()), comm);
    (void)agreed;  // our own error is the one to report
    return data.status().WithContext("rank " + std::to_string(comm.rank()));
  }
  PW_ASSIGN_OR_RETURN(EngineOptions eo, EngineOptionsFor(options, *plan));
  if (options.fault_kind == "checkpoint" && options.fault_rank == comm.rank() && !options.checkpoint_dir.empty()) {
    // The drill: die between layer files of one checkpoint (docs/ELASTIC.md).
    const std::string target = CheckpointStepDir(options.checkpoint_dir, options.fault_step + 1);
    const int rank = comm.rank();
    eo.after_checkpoint_file = [target, rank](const std::string& step_dir, const std::string& file) {
      if (step_dir != target) return;
      std::fprintf(stderr, "rank %d (pid %d): fault injection: SIGKILL while writing checkpoint %s, after %s\n", rank,
                   static_cast<int>(::getpid()), step_dir.c_str(), file.c_str());
      std::fflush(stderr);
      ::raise(SIGKILL);
    };
  }
  if (options.checkpoint_every > 0 && options.checkpoint_dir.empty())
    return Status::InvalidArgument("--checkpoint-every needs --checkpoint-dir");
  // --sample without a tokenizer writes bytes: refused before training for a
  // model whose vocabulary is not the 256 bytes (the sampler would refuse
  // after it).
  if (options.sample_tokens > 0 && options.tokenizer.empty() && plan->model && plan->model->vocab != 256)
    return Status::InvalidArgument("--sample " + std::to_string(options.sample_tokens) +
                                   ": the plan's model.vocab_size is " + std::to_string(plan->model->vocab) +
                                   ", so a sample needs --tokenizer FILE (the tokenizer of the data)");
  PW_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Create(*plan, comm, eo));
  RunSummary summary;
  RunContext run{options,
                 comm,
                 out,
                 *plan,
                 *shape,
                 *data,
                 *engine,
                 summary,
                 PlanHash(*plan),
                 eo.double_precision ? "float64" : "float32",
                 comm.rank() == 0,
                 StepFlops(*plan),
                 plan->device ? plan->device->peak_flops : 0.0};
  if (!options.resume.empty()) PW_RETURN_IF_ERROR(Resume(run));
  if (!options.init_from.empty()) {
    // Agreed across ranks: every rank stops together before any step.
    PW_RETURN_IF_ERROR(engine->InitFromHf(options.init_from));
    PW_ASSIGN_OR_RETURN(auto init_digests, comm.AllGather(ParameterDigest(engine->Parameters())));
    if (run.printer) {
      std::fprintf(out, "initialised from %s: parameters fnv1a64:", options.init_from.c_str());
      for (size_t r = 0; r < init_digests.size(); ++r) std::fprintf(out, " rank%zu=%s", r, init_digests[r].c_str());
      std::fprintf(out, "\n");
    }
  }
  if (run.printer && plan->tp_size > 1)
    std::fprintf(out, "tensor parallel: TP%d x PP%d x DP%d (%d ranks)%s\n", plan->tp_size, plan->pp_size, plan->dp_size,
                 comm.size(), plan->sequence_parallel ? ", sequence parallel" : "");
  if (run.printer && plan->dp_size == 1)
    std::fprintf(out,
                 "pipewright run: %s, P=%d, %d stages, m=%d, batch %d x %d tokens, %lld bytes: %s (%s order), %d "
                 "steps\n",
                 plan->schedule.c_str(), plan->pp_size, plan->num_stages, plan->num_microbatches, shape->rows,
                 shape->seq_length, static_cast<long long>(data->num_bytes()), data->description().c_str(),
                 data->sequential() ? "sequential" : "random", options.steps);
  if (run.printer && plan->dp_size > 1)
    std::fprintf(out,
                 "pipewright run: %s, P=%d x D=%d replicas (%d ranks), %d stages, m=%d, global batch %d x %d "
                 "tokens (%d rows per replica)%s, %lld bytes: %s (%s order), %d steps\n",
                 plan->schedule.c_str(), plan->pp_size, plan->dp_size, comm.size(), plan->num_stages,
                 plan->num_microbatches, shape->rows * plan->dp_size, shape->seq_length, shape->rows,
                 engine->distributed_optimizer() ? ", ZeRO-1 AdamW" : "", static_cast<long long>(data->num_bytes()),
                 data->description().c_str(), data->sequential() ? "sequential" : "random", options.steps);
  PW_RETURN_IF_ERROR(TrainSteps(run));
  Status sampled;
  PW_RETURN_IF_ERROR(SaveAndSample(run, &sampled));
  // Bit-exact fingerprint of the trained weights, every rank (resume and
  // launcher tests compare it).
  PW_ASSIGN_OR_RETURN(auto digests, comm.AllGather(ParameterDigest(engine->Parameters())));
  if (run.printer) {
    std::fprintf(out, "parameters fnv1a64:");
    for (size_t r = 0; r < digests.size(); ++r) std::fprintf(out, " rank%zu=%s", r, digests[r].c_str());
    std::fprintf(out, "\n");
    std::fprintf(out, "done: loss %.4f -> %.4f | mean step %.3f s | %.0f tok/s | bubble %.3f%s\n", summary.first_loss,
                 summary.last_loss, summary.mean_step_s, summary.mean_tokens_per_s, summary.mean_bubble_ratio,
                 run.MfuText(summary.mean_step_s).c_str());
    if (plan->dp_size > 1)
      std::fprintf(out, "data parallel: %d replicas | all-reduce exposed %.4f s per step (mean)\n", plan->dp_size,
                   summary.mean_reduce_wait_s);
    if (plan->tp_size > 1)
      std::fprintf(out, "tensor parallel: %d ranks per group | collectives %.4f s per step (%.1f %% of the step, mean)\n",
                   plan->tp_size, summary.mean_tp_collective_s,
                   summary.mean_step_s > 0 ? 100.0 * summary.mean_tp_collective_s / summary.mean_step_s : 0.0);
    // The plan's step is makespan_s with a global barrier, steady_step_s
    // without (docs/PLAN_FORMAT.md rule 9); the executor steps every rank
    // together, so its measured step compares with makespan_s.
    std::fprintf(out, "measured vs planned: step %.3f s vs %.3f s (x%.2f) | bubble %.3f vs %.3f%s\n",
                 summary.mean_step_s, plan->predicted.makespan_s,
                 plan->predicted.makespan_s > 0 ? summary.mean_step_s / plan->predicted.makespan_s : 0.0,
                 summary.mean_bubble_ratio, plan->predicted.bubble_ratio,
                 comm.size() > static_cast<int>(std::thread::hardware_concurrency())
                     ? " (more ranks than cores: the ranks share cores, which the plan does not model)"
                     : "");
  }
  PW_RETURN_IF_ERROR(sampled);
  return summary;
}

}  // namespace pw::exec
