#include "executor/train.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <unistd.h>

#include "executor/data.h"
#include "executor/plan_builder.h"
#include "executor/preflight.h"

namespace pw::exec {

namespace {

// Linear warm-up over warmup_steps, then cosine decay to lr/10 at the end.
double LearningRate(const RunOptions& o, int step) {
  if (step < o.warmup_steps) return o.lr * (step + 1) / o.warmup_steps;
  const int decay_steps = std::max(1, o.steps - o.warmup_steps);
  const double progress = std::min(1.0, static_cast<double>(step - o.warmup_steps) / decay_steps);
  return o.lr * (0.1 + 0.9 * 0.5 * (1.0 + std::cos(3.14159265358979323846 * progress)));
}

}  // namespace

StatusOr<RunSummary> RunTraining(const RunOptions& options, Communicator& comm, std::FILE* out) {
  if (options.steps < 1) return Status::InvalidArgument("--steps must be >= 1");
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
  EngineOptions eo;
  eo.double_precision = options.double_precision;
  eo.init_seed = options.seed;
  eo.lr = options.lr;
  eo.weight_decay = options.weight_decay;
  eo.beta2 = options.beta2;
  PW_ASSIGN_OR_RETURN(std::unique_ptr<Engine> engine, Engine::Create(*plan, comm, eo));
  const bool printer = comm.rank() == 0;
  if (printer)
    std::fprintf(out,
                 "pipewright run: %s, P=%d, %d stages, m=%d, batch %d x %d tokens, %lld bytes of text, %d steps\n",
                 plan->schedule.c_str(), plan->pp_size, plan->num_stages, plan->num_microbatches, shape->batch_rows,
                 shape->seq_length, static_cast<long long>(data->num_bytes()), options.steps);
  RunSummary summary;
  double sum_step = 0, sum_tps = 0, sum_bubble = 0;
  int counted = 0;
  for (int step = 0; step < options.steps; ++step) {
    engine->SetLearningRate(LearningRate(options, step));
    TokenBatch batch = data->Batch(step, shape->batch_rows);
    StatusOr<StepReport> r = engine->Step(batch);
    if (!r.ok()) return r.status();
    const double tps = static_cast<double>(r->tokens) / r->step_s;
    if (step == 0) summary.first_loss = r->loss;
    summary.last_loss = r->loss;
    if (step > 0 || options.steps == 1) {
      sum_step += r->step_s;
      sum_tps += tps;
      sum_bubble += r->bubble_ratio;
      ++counted;
    }
    if (printer && (step % std::max(1, options.log_every) == 0 || step + 1 == options.steps)) {
      std::fprintf(out, "step %d/%d | loss %.4f | %.0f tok/s | step %.3f s | bubble %.3f\n", step + 1,
                   options.steps, r->loss, tps, r->step_s, r->bubble_ratio);
      std::fflush(out);
    }
  }
  summary.mean_step_s = sum_step / counted;
  summary.mean_tokens_per_s = sum_tps / counted;
  summary.mean_bubble_ratio = sum_bubble / counted;

  std::string dir = options.save_dir;
  if (dir.empty() && options.sample_tokens > 0) {
    // Rank 0 picks a temporary directory and tells the others (same host).
    std::string mine;
    if (printer) {
      char tmpl[] = "/tmp/pipewright-stages-XXXXXX";
      if (mkdtemp(tmpl) == nullptr) return Status::Internal("rank 0: mkdtemp failed");
      mine = tmpl;
    }
    PW_ASSIGN_OR_RETURN(auto all, comm.AllGather(mine));
    dir = all[0];
  }
  if (!dir.empty()) {
    PW_RETURN_IF_ERROR(engine->SaveStages(dir));
    PW_RETURN_IF_ERROR(comm.Barrier());
  }
  if (options.sample_tokens > 0 && printer) {
    SampleOptions so;
    so.prompt = options.sample_prompt;
    so.tokens = options.sample_tokens;
    so.temperature = options.temperature;
    so.seed = options.seed;
    PW_ASSIGN_OR_RETURN(summary.sample, SampleText(*plan, dir, so));
    std::fprintf(out, "--- sample (%d bytes, temperature %.2f) ---\n%s\n---\n", options.sample_tokens,
                 options.temperature, summary.sample.c_str());
    if (options.save_dir.empty()) std::filesystem::remove_all(dir);
  }
  if (printer)
    std::fprintf(out, "done: loss %.4f -> %.4f | mean step %.3f s | %.0f tok/s | bubble %.3f\n", summary.first_loss,
                 summary.last_loss, summary.mean_step_s, summary.mean_tokens_per_s, summary.mean_bubble_ratio);
  return summary;
}

}  // namespace pw::exec
