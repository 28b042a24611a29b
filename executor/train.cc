#include "executor/train.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <thread>
#include <utility>

#include "executor/checkpoint.h"
#include "models/spec/footprint.h"
#include "executor/sampler.h"
#include "executor/agree.h"
#include "executor/data.h"
#include "executor/measured_trace.h"
#include "executor/watchdog.h"
#include "executor/plan_builder.h"
#include "executor/preflight.h"
#include "base/output_place.h"

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
    return Status::InvalidArgument(
        "--clip-grad-norm " + std::to_string(clip) + ": clipping by the global norm puts a barrier at the end of "
        "each step, but the plan " + o.plan_path + " was not made for one (training.global_barrier is not true; it "
        "may minimise steady_step_s). Re-plan with pipewright plan --clip-grad-norm");
  return clip;
}

// FNV-1a 64 over the parameter names and the bit patterns of their values
// (float -> double is exact, so equal digests mean bit-identical weights).
std::string ParameterDigest(const std::vector<NamedValues>& params) {
  uint64_t h = 1469598103934665603ull;
  auto mix = [&h](const void* p, size_t n) {
    const auto* b = static_cast<const unsigned char*>(p);
    for (size_t i = 0; i < n; ++i) h = (h ^ b[i]) * 1099511628211ull;
  };
  for (const NamedValues& nv : params) {
    mix(nv.name.data(), nv.name.size());
    mix(nv.values.data(), nv.values.size() * sizeof(double));
  }
  char hex[17];
  std::snprintf(hex, sizeof(hex), "%016llx", static_cast<unsigned long long>(h));
  return hex;
}

int64_t FileBytes(const std::string& path) {
  std::error_code ec;
  auto n = std::filesystem::file_size(path, ec);
  return ec ? 0 : static_cast<int64_t>(n);
}

std::string Num(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%g", v);
  return buf;
}

constexpr char kNonFiniteLoss[] = "non-finite loss";

}  // namespace

Status ValidateRunOptions(const RunOptions& o) {
  auto bad = [](const std::string& flag, const std::string& value, const std::string& rule) {
    return Status::InvalidArgument(flag + " " + value + ": " + rule);
  };
  if (o.steps < 1) return bad("--steps", std::to_string(o.steps), "must be >= 1");
  if (!o.init_from.empty() && !o.resume.empty())
    return bad("--init-from", o.init_from, "cannot be combined with --resume (a checkpoint holds its own weights)");
  if (!std::isfinite(o.lr) || o.lr <= 0) return bad("--lr", Num(o.lr), "the learning rate must be finite and > 0");
  if (!std::isfinite(o.beta2) || o.beta2 < 0 || o.beta2 >= 1)
    return bad("--adam-beta2", Num(o.beta2), "must be in [0, 1)");
  if (!std::isfinite(o.weight_decay) || o.weight_decay < 0)
    return bad("--weight-decay", Num(o.weight_decay), "must be finite and >= 0");
  // -1 (the default) means the plan's training.clip_grad_norm.
  if (!std::isfinite(o.clip_grad_norm) || (o.clip_grad_norm < 0 && o.clip_grad_norm != -1))
    return bad("--clip-grad-norm", Num(o.clip_grad_norm), "must be finite and >= 0 (0 = off)");
  if (!std::isfinite(o.temperature) || o.temperature <= 0)
    return bad("--temperature", Num(o.temperature), "must be finite and > 0");
  if (o.sample_tokens < 0) return bad("--sample", std::to_string(o.sample_tokens), "must be >= 0 (0 = no sample)");
  if (o.warmup_steps < 0)
    return bad("--warmup-steps", std::to_string(o.warmup_steps), "must be >= 0 (0 = no warm-up)");
  if (o.checkpoint_every < 0)
    return bad("--checkpoint-every", std::to_string(o.checkpoint_every), "must be >= 0 (0 = never)");
  if (o.log_every < 1) return bad("--log-every", std::to_string(o.log_every), "must be >= 1");
  if (o.trace_step < -1 || o.trace_step >= o.steps)
    return bad("--trace-step", std::to_string(o.trace_step),
               "must be a 0-based step below --steps " + std::to_string(o.steps));
  // Output places, checked by creating (and removing) a file there before
  // any training, so that a typo, /proc or a read-only mount does not cost
  // the run (or leave some ranks' files behind).
  if (!o.trace_path.empty()) PW_RETURN_IF_ERROR(CheckOutputFile("--trace", o.trace_path));
  for (const auto& [flag, dir] : {std::pair<const char*, const std::string&>{"--save", o.save_dir},
                                  {"--checkpoint-dir", o.checkpoint_dir}})
    if (!dir.empty()) PW_RETURN_IF_ERROR(CheckOutputDirectory(flag, dir));
  return Status::Ok();
}

bool IsNonFiniteLoss(const Status& status) {
  return status.code() == StatusCode::kComputeError && status.message().find(kNonFiniteLoss) != std::string::npos;
}

namespace {

// What one run shares between its phases (the plan, its data, the engine, the
// communicator and the summary being filled).
struct RunContext {
  const RunOptions& options;
  Communicator& comm;
  std::FILE* out;
  const Plan& plan;
  const TrainingShape& shape;
  TextDataset& data;
  Engine& engine;
  RunSummary& summary;
  std::string plan_hash;
  std::string dtype;  // "float32" | "float64"
  bool printer = false;  // rank 0 prints
  double step_flops = 0;  // model FLOPs of one step (all ranks): F + I + W of every layer, every row
};

// FLOPs of one step of `plan` (forward, input- and weight-gradient backward of
// every layer for every sequence of the batch; models/spec footprint with
// micro-batch size 1, times the rows). 0 without a model section.
double StepFlops(const Plan& plan) {
  if (!plan.model || !plan.training) return 0.0;
  pw::TrainingShape one;  // models/spec: one sequence (not exec::TrainingShape)
  one.micro_batch_size = 1;
  one.seq_length = plan.training->seq_length;
  one.recompute = plan.training->recompute;
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
  if (s < 100) std::snprintf(buf, sizeof buf, "%.1f s", s);
  else if (s < 6000) std::snprintf(buf, sizeof buf, "%.1f min", s / 60);
  else std::snprintf(buf, sizeof buf, "%.1f h", s / 3600);
  return buf;
}

// The engine's options: the run's flags and the clipping the plan allows.
StatusOr<EngineOptions> EngineOptionsFor(const RunOptions& options, const Plan& plan) {
  PW_ASSIGN_OR_RETURN(double clip, ClipNorm(options, plan));
  EngineOptions eo;
  eo.clip_grad_norm = clip;
  eo.device = options.device;
  eo.local_rank = options.local_rank;
  eo.device_messages = options.device_messages;
  eo.double_precision = options.double_precision;
  eo.init_seed = options.seed;
  eo.lr = options.lr;
  eo.weight_decay = options.weight_decay;
  eo.beta2 = options.beta2;
  return eo;
}

// --resume: checks the checkpoint against this run and loads every rank's
// file; agreed on, so all ranks refuse together. Sets summary.first_step.
Status Resume(RunContext& run) {
  const RunOptions& options = run.options;
  Status st;
  StatusOr<std::string> dir = ResolveResumeDir(options.resume);
  StatusOr<CheckpointManifest> manifest = dir.ok() ? ReadManifest(*dir) : StatusOr<CheckpointManifest>(dir.status());
  if (!manifest.ok()) st = manifest.status();
  if (st.ok()) st = CheckResumable(*manifest, *dir, run.plan_hash, run.plan.pp_size, options.seed, run.dtype);
  if (st.ok() && manifest->steps_done >= options.steps)
    st = Status::InvalidArgument("--resume " + *dir + ": the checkpoint is after step " +
                                 std::to_string(manifest->steps_done) + ", --steps is " +
                                 std::to_string(options.steps) + ": nothing left to run");
  if (st.ok()) st = run.engine.LoadCheckpoint(*dir + "/" + manifest->files[run.comm.rank()]);
  PW_RETURN_IF_ERROR(AgreeOnStatus(st, run.comm));
  run.summary.first_step = manifest->steps_done;
  if (run.printer) std::fprintf(run.out, "resumed from %s after step %d\n", dir->c_str(), run.summary.first_step);
  return Status::Ok();
}

// Every rank writes its file of step `done`; rank 0 then writes the manifest
// (last: a step directory with a manifest has every rank's file in place).
// Returns the slowest rank's seconds.
StatusOr<double> WriteStepCheckpoint(RunContext& run, int done) {
  const auto c0 = std::chrono::steady_clock::now();
  const std::string dir = CheckpointStepDir(run.options.checkpoint_dir, done);
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  Status st = ec ? Status::InvalidArgument("--checkpoint-dir: cannot create " + dir + ": " + ec.message())
                 : run.engine.SaveCheckpoint(CheckpointRankFile(dir, run.comm.rank()));
  PW_RETURN_IF_ERROR(AgreeOnStatus(st, run.comm));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - c0).count();
  PW_ASSIGN_OR_RETURN(auto all, AllGatherDoubles(run.comm, {secs, static_cast<double>(FileBytes(
                                                                      CheckpointRankFile(dir, run.comm.rank())))}));
  double max_s = 0, bytes = 0;
  for (const auto& v : all) {
    max_s = std::max(max_s, v[0]);
    bytes += v[1];
  }
  if (run.printer) {
    CheckpointManifest m;
    m.plan_hash = run.plan_hash;
    m.schedule = run.plan.schedule;
    m.pp_size = run.plan.pp_size;
    m.steps_done = done;
    m.seed = run.options.seed;
    m.dtype = run.dtype;
    m.data_position = static_cast<int64_t>(done) * run.shape.batch_rows;
    for (int rr = 0; rr < run.plan.pp_size; ++rr) m.files.push_back("rank_" + std::to_string(rr) + ".pt");
    PW_RETURN_IF_ERROR(WriteManifest(dir, m));
    std::fprintf(run.out, "checkpoint %s | %d files, %.0f bytes | %.3f s\n", dir.c_str(), run.plan.pp_size, bytes,
                 max_s);
    std::fflush(run.out);
  }
  ++run.summary.checkpoints_written;
  run.summary.checkpoint_bytes = static_cast<int64_t>(bytes);
  return max_s;
}

// The training steps from summary.first_step to --steps: logging, the
// non-finite loss stop, checkpoints, fault injection, the traced step.
Status TrainSteps(RunContext& run) {
  const RunOptions& options = run.options;
  RunSummary& summary = run.summary;
  double sum_step = 0, sum_tps = 0, sum_bubble = 0, sum_ckpt = 0;
  int counted = 0;
  const int trace_step = options.trace_step < 0 ? options.steps - 1 : options.trace_step;
  std::vector<ActionSpan> traced;
  StepHooks hooks;
  hooks.board = options.board;
  hooks.record_spans = !options.trace_path.empty();
  const int fault_index = static_cast<int>(run.plan.ranks[run.comm.rank()].size() / 2);
  int current_step = 0;
  const auto started = std::chrono::steady_clock::now();
  if (options.fault_rank == run.comm.rank())
    hooks.before_action = [&](int index) {
      if (current_step != options.fault_step || index != fault_index) return;
      std::fprintf(stderr, "rank %d (pid %d): fault injection: %s at step %d, action %d\n", run.comm.rank(),
                   static_cast<int>(::getpid()), options.fault_kind == "hang" ? "SIGSTOP" : "SIGKILL", current_step,
                   index);
      std::fflush(stderr);
      ::raise(options.fault_kind == "hang" ? SIGSTOP : SIGKILL);
    };
  for (int step = summary.first_step; step < options.steps; ++step) {
    current_step = step;
    run.engine.SetLearningRate(LearningRate(options, step));
    TokenBatch batch = run.data.Batch(step, run.shape.batch_rows);
    StatusOr<StepReport> r = run.engine.Step(batch, /*apply_optimizer=*/true, &hooks);
    if (!r.ok()) return r.status();
    // The loss is all-gathered in Step: every rank sees the same value and
    // stops here at the same step.
    if (!std::isfinite(r->loss))
      return Status::ComputeError(std::string(kNonFiniteLoss) + " (" + Num(r->loss) + ") at step " +
                                  std::to_string(step + 1) + "/" + std::to_string(options.steps) + " (rank " +
                                  std::to_string(run.comm.rank()) + "): training diverged; lower --lr (" +
                                  Num(LearningRate(options, step)) + " at this step) or use --clip-grad-norm");
    if (step == trace_step) traced = r->spans;
    const double tps = static_cast<double>(r->tokens) / r->step_s;
    if (step == summary.first_step) summary.first_loss = r->loss;
    summary.last_loss = r->loss;
    if (step > summary.first_step || options.steps - summary.first_step == 1) {
      sum_step += r->step_s;
      sum_tps += tps;
      sum_bubble += r->bubble_ratio;
      ++counted;
    }
    if (run.printer && (step % std::max(1, options.log_every) == 0 || step + 1 == options.steps)) {
      const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
      const int done_here = step + 1 - summary.first_step;
      const double eta = elapsed / done_here * (options.steps - step - 1);
      std::fprintf(run.out,
                   "step %d/%d | loss %.4f | %.0f tok/s | step %.3f s | bubble %.3f | %.3g GFLOP/s/rank | elapsed %s "
                   "| ETA %s\n",
                   step + 1, options.steps, r->loss, tps, r->step_s, r->bubble_ratio,
                   run.step_flops / r->step_s / run.plan.pp_size / 1e9, Seconds(elapsed).c_str(), Seconds(eta).c_str());
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
  }
  if (summary.checkpoints_written > 0) summary.mean_checkpoint_s = sum_ckpt / summary.checkpoints_written;
  if (!options.trace_path.empty()) {
    if (trace_step < summary.first_step || trace_step >= options.steps)
      traced.clear();  // WriteMeasuredTrace reports it
    PW_RETURN_IF_ERROR(WriteMeasuredTrace(run.plan, traced, run.comm, options.trace_path,
                                          "measured step " + std::to_string(trace_step) + " of " + options.plan_path));
    if (run.printer) std::fprintf(run.out, "trace of step %d -> %s\n", trace_step, options.trace_path.c_str());
  }
  summary.mean_step_s = sum_step / counted;
  summary.mean_tokens_per_s = sum_tps / counted;
  summary.mean_bubble_ratio = sum_bubble / counted;
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
      char tmpl[] = "/tmp/pipewright-stages-XXXXXX";
      if (mkdtemp(tmpl) == nullptr) return Status::Internal("rank 0: mkdtemp failed");
      mine = tmpl;
    }
    PW_ASSIGN_OR_RETURN(auto all, run.comm.AllGather(mine));
    dir = all[0];
  }
  if (!dir.empty()) {
    PW_RETURN_IF_ERROR(run.engine.SaveStages(dir));
    PW_RETURN_IF_ERROR(run.comm.Barrier());
  }
  if (options.sample_tokens > 0 && run.printer) {
    SampleOptions so;
    so.prompt = options.sample_prompt;
    so.tokens = options.sample_tokens;
    so.temperature = options.temperature;
    so.seed = options.seed;
    StatusOr<std::string> text = SampleText(run.plan, dir, so);
    if (text.ok()) {
      run.summary.sample = *text;
      std::fprintf(run.out, "--- sample (%d bytes, temperature %.2f) ---\n%s\n---\n", options.sample_tokens,
                   options.temperature, run.summary.sample.c_str());
    } else {
      *sampled = text.status().WithContext("sampling on rank 0 from " + dir +
                                          " (every rank saves its stages there: on several hosts, pass --save "
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
  StatusOr<TrainingShape> shape = plan.ok() ? ReadTrainingShape(*plan) : StatusOr<TrainingShape>(plan.status());
  StatusOr<TextDataset> data = shape.ok() ? TextDataset::Open(options.data_path, shape->seq_length, options.seed)
                                          : StatusOr<TextDataset>(shape.status());
  if (!data.ok()) {
    Status agreed = AgreeOnPlan(StatusOr<Plan>(data.status()), comm);
    (void)agreed;  // our own error is the one to report
    return data.status().WithContext("rank " + std::to_string(comm.rank()));
  }
  PW_ASSIGN_OR_RETURN(EngineOptions eo, EngineOptionsFor(options, *plan));
  if (options.checkpoint_every > 0 && options.checkpoint_dir.empty())
    return Status::InvalidArgument("--checkpoint-every needs --checkpoint-dir");
  PW_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Create(*plan, comm, eo));
  RunSummary summary;
  RunContext run{options, comm, out, *plan, *shape, *data, *engine, summary, PlanHash(*plan),
                 options.double_precision ? "float64" : "float32", comm.rank() == 0, StepFlops(*plan)};
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
  if (run.printer)
    std::fprintf(out,
                 "pipewright run: %s, P=%d, %d stages, m=%d, batch %d x %d tokens, %lld bytes of text, %d steps\n",
                 plan->schedule.c_str(), plan->pp_size, plan->num_stages, plan->num_microbatches, shape->batch_rows,
                 shape->seq_length, static_cast<long long>(data->num_bytes()), options.steps);
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
    std::fprintf(out, "done: loss %.4f -> %.4f | mean step %.3f s | %.0f tok/s | bubble %.3f\n", summary.first_loss,
                 summary.last_loss, summary.mean_step_s, summary.mean_tokens_per_s, summary.mean_bubble_ratio);
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
