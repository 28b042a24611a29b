// `pipewright plan`: this model, these devices, this batch -> the best plan
// file (docs/PLAN_FORMAT.md). Prints the ranked candidate table (and every
// rejection with its reason), writes the chosen plan atomically; on an
// infeasible request writes nothing and names the smallest P that fits.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>
#include <sstream>

#include "base/file_io.h"
#include "launch/commands.h"
#include "launch/flags.h"
#include "models/spec/device.h"
#include "models/spec/layer_costs.h"
#include "models/spec/model_config.h"
#include "plan/plan.h"
#include "planner/explain.h"
#include "planner/optimal_candidate.h"
#include "planner/planner.h"
#include "schedules/csv.h"

namespace pw::cli {

namespace {

struct PlanCommandOptions {
  std::string model_config;
  std::string profile;
  std::string device;
  std::string output = "plan.json";
  std::string csv;  // --csv FILE: the chosen plan as a compute-only PyTorch CSV
  int pp = 0;
  int dp = 1;
  int tp = 1;
  bool sequence_parallel = false;
  bool no_sequence_parallel = false;
  int num_devices = 0;
  bool distributed_optimizer = false;
  int num_microbatches = 0;
  int64_t micro_batch_size = 0;
  int64_t global_batch_size = 0;
  int64_t seq_length = 0;
  int virtual_stages = 0;
  int max_virtual_stages = 4;
  std::string schedule = "auto";
  std::string memory_limit;
  std::string memory_reserve;
  std::string recompute = "auto";
  int first_stage_num_layers = 0;
  int last_stage_num_layers = 0;
  std::vector<int> layers_per_stage;
  std::string objective = "makespan";
  double clip_grad_norm = 0.0;
  std::string dtype;  // empty: bf16, or fp32 with --profile (what the profile measured)
  bool no_min_pp = false;
  bool explain = false;              // --explain / -v: every candidate and rejection
  std::string format = "text";       // text | json (the candidate table, for tools)
  bool try_optimal = false;          // --try-optimal (planner/optimal_candidate.h)
  double optimal_time_limit_s = 10;  // --optimal-time-limit
  std::set<std::string> given;       // the long names of the options given on the command line
};

std::vector<std::string> SplitComma(const std::string& s) {
  std::vector<std::string> out;
  std::stringstream ss(s);
  for (std::string item; std::getline(ss, item, ',');)
    if (!item.empty()) out.push_back(item);
  return out;
}

// Warns on stderr, once per layer kind, when the profile's fits are
// evaluated outside the measured tokens range at any shape the search costs
// (each micro-batch size it tries, at the planned sequence length). A flag
// error is left for SearchPlans to report.
void WarnProfileExtrapolation(const Profile& profile, const PlannerOptions& o) {
  auto batches = ResolveBatch(o);
  if (!batches.ok()) return;
  const int64_t s = o.seq_length > 0 ? o.seq_length : profile.seq_length;
  std::vector<Extrapolation> found;
  std::set<int64_t> seen;
  for (const BatchSplit& b : *batches)
    if (seen.insert(b.micro_batch_size).second) {
      std::vector<Extrapolation> e = FindExtrapolations(profile, b.micro_batch_size, s);
      found.insert(found.end(), e.begin(), e.end());
    }
  for (const std::string& line : FormatExtrapolationWarnings(found, profile.source))
    std::fprintf(stderr, "pipewright plan: warning: %s\n", line.c_str());
}

// "model: llama-2-7b (6738415616 parameters); device: H100-80GB; P=8 x D=8",
// with tensor parallelism "...; TP4 x PP8 x DP4 (128 devices, sequence parallel)".
void PrintModelLine(const PlanCommandOptions& c, const PlannerModel& model, const std::string& path, int pp, int dp,
                    int tp, bool sp) {
  const std::string what = model.profile  ? "measured profile " + c.profile
                           : model.config ? std::to_string(TotalParameters(*model.config)) + " parameters"
                                          : std::string("layer costs");
  const std::string layout = tp > 1 ? LayoutName(tp, pp, dp) + " (" + std::to_string(tp * pp * dp) + " devices" +
                                          (sp ? ", sequence parallel)" : ")")
                                    : "P=" + std::to_string(pp) + (dp > 1 ? " x D=" + std::to_string(dp) : "");
  std::printf("model: %s (%s); device: %s; %s\n", model.config ? model.config->name.c_str() : path.c_str(),
              what.c_str(), model.device ? model.device->name.c_str() : "-", layout.c_str());
}

// What `pipewright run` will refuse of `plan`, one line each (the executor's
// pre-flight checks, executor/preflight.h, that a planner can meet: dropout,
// mixed precision, recomputation). The plan is still written: it is right
// for the model and devices asked for, and other runtimes (--csv) may run it.
// `config` is the HF config the model was read from (null for none), whose
// dropout fields the note names.
std::vector<std::string> RunRefusals(const Plan& plan, const nlohmann::json& config) {
  std::vector<std::string> out;
  if (plan.model && plan.model->dropout) {
    std::string fields;
    const nlohmann::json& raw = config;
    const bool gpt2 = plan.model->family == ModelFamily::kGpt2;
    for (const char* f : gpt2 ? std::vector<const char*>{"attn_pdrop", "embd_pdrop", "resid_pdrop"}
                              : std::vector<const char*>{"attention_dropout"}) {
      auto it = raw.is_object() ? raw.find(f) : raw.end();
      if (it == raw.end() || it->is_null())
        fields += std::string(fields.empty() ? "" : ", ") + f + " absent (HF's default 0.1)";
      else if (it->is_number() && it->get<double>() > 0)
        fields += std::string(fields.empty() ? "" : ", ") + f + " " + it->dump();
    }
    out.push_back("the model has dropout (" + fields + "): the executor has no dropout layers; set " +
                  (gpt2 ? "attn_pdrop, embd_pdrop and resid_pdrop" : "attention_dropout") +
                  " to 0 in the config and plan again (the activation bytes then count no dropout masks)");
  }
  if (plan.training && plan.training->precision == Precision::kMixedBf16)
    out.push_back(
        "the plan is dtype bf16 (mixed precision): the executor trains fp32 or fp64; plan with --dtype "
        "fp32 (or fp64) to run it with pipewright");
  if (plan.training && plan.training->recompute != Recompute::kNone)
    out.push_back(std::string("the plan recomputes activations (recompute ") + RecomputeName(plan.training->recompute) +
                  "): the executor keeps every activation; plan with --recompute-granularity none");
  return out;
}

// Prints RunRefusals on stderr as notes: planning succeeds, but a user who
// goes on to `pipewright run` learns now what to change.
void NoteRunRefusals(const Plan& plan, const PlannerModel& model) {
  for (const std::string& why : RunRefusals(plan, model.config ? model.config->raw : nlohmann::json()))
    std::fprintf(stderr, "pipewright plan: note: `pipewright run` will refuse this plan: %s\n", why.c_str());
}

// --csv FILE: the chosen plan's compute order as the compute-only PyTorch CSV
// that torchtitan's pipeline_parallel_schedule_csv reads (docs/PLAN_FORMAT.md).
Status WriteCsvIfAsked(const PlanCommandOptions& c, const Plan& plan) {
  if (c.csv.empty()) return Status::Ok();
  PW_RETURN_IF_ERROR(WriteFileAtomic(c.csv, ScheduleToCsv(PlanProgram(plan), CsvFormat::kComputeOnly)));
  if (c.format != "json")
    std::printf("wrote %s (compute_only PyTorch CSV: %d rows, one per pipeline rank)\n", c.csv.c_str(), plan.pp_size);
  return Status::Ok();
}

// --num-devices N: one search per split P x D = N; the best split's plan is
// written, and every split is reported (its best candidate or why none fits).
Status RunDeviceSplits(const PlanCommandOptions& c, const PlannerModel& model, const PlannerOptions& o,
                       const std::string& path) {
  const auto t0 = std::chrono::steady_clock::now();
  PW_ASSIGN_OR_RETURN(DeviceSplitSearch search, SearchDeviceSplits(model, o, c.num_devices));
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  const DeviceSplit& best = search.splits[search.chosen];
  PlannerOptions chosen = o;
  chosen.tp_size = best.tp_size;
  chosen.pp_size = best.pp_size;
  chosen.dp_size = best.dp_size;
  chosen.distributed_optimizer = best.distributed_optimizer;
  PW_ASSIGN_OR_RETURN(Plan plan, BuildPlan(best.result, model, chosen));
  plan.planner["device_splits"] = DeviceSplitsToJson(search);
  PW_RETURN_IF_ERROR(WriteFileAtomic(c.output, PlanToJson(plan)));
  PW_RETURN_IF_ERROR(WriteCsvIfAsked(c, plan));
  NoteRunRefusals(plan, model);
  if (c.format == "json") {
    nlohmann::json table = DeviceSplitsToJson(search);
    table["plan_file"] = c.output;
    table["plan_hash"] = PlanHash(plan);
    table["search_seconds"] = secs;
    std::printf("%s\n", table.dump(2).c_str());
    return Status::Ok();
  }
  PrintModelLine(c, model, path, best.pp_size, best.dp_size, best.tp_size, best.sequence_parallel);
  std::fputs(FormatDeviceSplits(search).c_str(), stdout);
  if (c.explain) std::fputs(FormatCandidateTable(best.result).c_str(), stdout);
  std::fputs(FormatPlanSummary(best.result).c_str(), stdout);
  size_t searched = 0;
  for (const DeviceSplit& sp : search.splits)
    for (const Candidate& cand : sp.result.candidates) searched += cand.reject == RejectKind::kBound ? 0 : 1;
  std::printf("wrote %s (hash %s); searched %zu candidates over %zu splits in %.3f s\n", c.output.c_str(),
              PlanHash(plan).c_str(), searched, search.splits.size(), secs);
  return Status::Ok();
}

Status RunPlan(const PlanCommandOptions& c) {
  PlannerModel model;
  std::string path = c.profile;
  // --profile: measured costs (`pipewright profile`) instead of the analytic
  // model; --model-config then only picks the number of blocks (same width).
  if (!c.profile.empty()) {
    auto pdoc = ReadJsonFile(c.profile);
    if (!pdoc.ok()) return pdoc.status().WithContext("--profile");
    auto parsed = ParseProfile(*pdoc, "--profile " + c.profile);
    if (!parsed.ok()) return parsed.status();
    model.profile = std::move(*parsed);
  }
  if (c.model_config.empty() && !model.profile)
    return Status::InvalidArgument("give --model-config (or --profile FILE written by `pipewright profile`)");
  nlohmann::json doc;
  if (!c.model_config.empty()) {
    PW_ASSIGN_OR_RETURN(path, ResolveShippedFile(c.model_config, "configs", "--model-config"));
    PW_ASSIGN_OR_RETURN(doc, ReadJsonFile(path));
  }
  if (model.profile && IsLayerCostDocument(doc))
    return Status::InvalidArgument("--model-config " + c.model_config +
                                   " is a layer-cost file; with --profile give a HF config (or none)");
  if (model.profile) {
    if (!doc.is_null()) {
      PW_ASSIGN_OR_RETURN(ModelConfig m, LoadModelConfig(path));
      model.config = std::move(m);
    }
  } else if (IsLayerCostDocument(doc)) {
    PW_ASSIGN_OR_RETURN(LayerCostTable t, ParseLayerCosts(doc, path));
    model.table = std::move(t);
  } else {
    PW_ASSIGN_OR_RETURN(ModelConfig m, LoadModelConfig(path));
    model.config = std::move(m);
  }
  if (!c.device.empty()) {
    PW_ASSIGN_OR_RETURN(DeviceSpec d, LoadDeviceSpec(c.device));
    model.device = std::move(d);
  } else if (model.config && !model.profile) {
    return Status::InvalidArgument("--device is required with a HF --model-config (e.g. --device H100-80GB)");
  }
  PlannerOptions o;
  if (c.try_optimal) {  // before the search
    if (!std::isfinite(c.optimal_time_limit_s) || c.optimal_time_limit_s <= 0)
      return Status::InvalidArgument("--optimal-time-limit must be a positive number of seconds");
    if (c.given.count("--num-devices"))
      return Status::InvalidArgument("--try-optimal works with a fixed --pp, not with --num-devices");
  }
  if (c.given.count("--num-devices")) {
    if (c.given.count("--pipeline-model-parallel-size") || c.given.count("--data-parallel-size"))
      return Status::InvalidArgument(
          "--num-devices chooses the split P x D itself: give it without --pp and --dp "
          "(or give --pp and --dp without it)");
  } else if (!c.given.count("--pipeline-model-parallel-size")) {
    return Status::InvalidArgument(
        "give --pp P (with --dp D for data-parallel replicas), or --num-devices N to "
        "choose the split P x D = N");
  }
  o.pp_size = c.pp;
  o.dp_size = c.dp;
  o.tp_size = c.tp;
  o.distributed_optimizer = c.distributed_optimizer;
  if (c.sequence_parallel && c.no_sequence_parallel)
    return Status::InvalidArgument("--sequence-parallel with --no-sequence-parallel: give one");
  if (c.sequence_parallel) o.sequence_parallel = true;
  if (c.no_sequence_parallel) o.sequence_parallel = false;
  // --num-devices searches T (unless --tp fixes it) and ZeRO-1 on and off
  // (unless --use-distributed-optimizer fixes it on).
  o.search_tensor_parallel = c.given.count("--tensor-model-parallel-size") == 0;
  o.search_distributed_optimizer = true;
  o.prune_by_bound = c.given.count("--num-devices") > 0;  // branch and bound over the T x P x D splits
  // A flag given on the command line is passed on as given (the planner
  // refuses values < 1, naming the flag); only an absent flag means "unset".
  if (c.given.count("--num-microbatches")) o.num_microbatches = c.num_microbatches;
  if (c.given.count("--micro-batch-size")) o.micro_batch_size = c.micro_batch_size;
  if (c.given.count("--global-batch-size")) o.global_batch_size = c.global_batch_size;
  if (c.given.count("--seq-length") && c.seq_length < 1)
    return Status::InvalidArgument("--seq-length must be >= 1, got " + std::to_string(c.seq_length) +
                                   " (omit it for the model's max positions)");
  o.seq_length = c.seq_length;
  if (c.given.count("--num-virtual-stages-per-pipeline-rank")) o.virtual_stages = c.virtual_stages;
  o.max_virtual_stages = c.max_virtual_stages;
  if (!std::isfinite(c.clip_grad_norm) || c.clip_grad_norm < 0) {
    std::ostringstream v;
    v << c.clip_grad_norm;
    return Status::InvalidArgument("--clip-grad-norm " + v.str() +
                                   ": expected a finite max norm > 0 (0 = no clipping)");
  }
  if (c.schedule != "auto") o.schedules = SplitComma(c.schedule);
  if (!c.memory_limit.empty()) {
    PW_ASSIGN_OR_RETURN(int64_t limit, ParseBytes(c.memory_limit));
    o.memory_limit_bytes = limit;
  }
  if (!c.memory_reserve.empty()) {
    if (c.memory_reserve == "0") {
      o.memory_reserve_bytes = 0;  // plan up to the reported capacity
    } else {
      PW_ASSIGN_OR_RETURN(int64_t reserve, ParseBytes(c.memory_reserve, "--memory-reserve"));
      o.memory_reserve_bytes = reserve;
    }
  }
  if (c.recompute != "auto") {
    PW_ASSIGN_OR_RETURN(Recompute r, ParseRecompute(c.recompute));
    o.recompute = r;
  }
  if (c.given.count("--first-stage-num-layers")) o.first_stage_num_layers = c.first_stage_num_layers;
  if (c.given.count("--last-stage-num-layers")) o.last_stage_num_layers = c.last_stage_num_layers;
  o.layers_per_stage = c.layers_per_stage;
  PW_ASSIGN_OR_RETURN(o.objective, ParseObjective(c.objective));
  o.clip_grad_norm = c.clip_grad_norm;
  // A profile's times and bytes were measured in float32 (pipewright profile
  // on the executor's CPU path), so its plans default to fp32.
  PW_ASSIGN_OR_RETURN(o.precision, ParsePrecision(!c.dtype.empty() ? c.dtype : model.profile ? "fp32" : "bf16"));
  o.find_min_pp = !c.no_min_pp;

  if (model.profile) WarnProfileExtrapolation(*model.profile, o);
  if (c.given.count("--num-devices")) return RunDeviceSplits(c, model, o, path);

  const auto t0 = std::chrono::steady_clock::now();
  // A search that takes seconds (large m: each candidate simulates S*m
  // actions) says what it is doing on stderr: after 2 s, then every 5 s.
  double next_report_s = 2.0;
  o.progress = [&t0, &next_report_s](int pp, int done, int family, int families, const std::string& name) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    if (elapsed < next_report_s) return;
    next_report_s = elapsed + 5.0;
    std::fprintf(stderr,
                 "pipewright plan: searching P=%d: %s (schedule family %d of %d), %d candidates evaluated, %.0f s\n",
                 pp, name.c_str(), family, families, done, elapsed);
  };
  auto result = SearchPlans(model, o);
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!result.ok()) {
    if (c.explain && result.status().code() == StatusCode::kInfeasible) {
      auto all = EvaluateCandidates(model, o);
      if (all.ok()) std::fputs(FormatCandidateTable(*all).c_str(), stdout);
    }
    return result.status();
  }
  std::string optimal_note;
  if (c.try_optimal) {
    OptimalOptions oo;
    oo.time_limit_s = c.optimal_time_limit_s;
    PW_ASSIGN_OR_RETURN(optimal_note, TryOptimalCandidate(&*result, o, oo));
    std::fprintf(stderr, "%s\n", optimal_note.c_str());
  }
  PW_ASSIGN_OR_RETURN(Plan plan, BuildPlan(*result, model, o));
  PW_RETURN_IF_ERROR(WriteFileAtomic(c.output, PlanToJson(plan)));
  PW_RETURN_IF_ERROR(WriteCsvIfAsked(c, plan));
  NoteRunRefusals(plan, model);
  if (c.format == "json") {
    nlohmann::json table = CandidatesToJson(*result);
    table["plan_file"] = c.output;
    table["plan_hash"] = PlanHash(plan);
    table["search_seconds"] = secs;
    std::printf("%s\n", table.dump(2).c_str());
    return Status::Ok();
  }
  PrintModelLine(c, model, path, o.pp_size, o.dp_size, o.tp_size, SequenceParallelOn(o));
  if (c.explain) std::fputs(FormatCandidateTable(*result).c_str(), stdout);
  std::fputs(FormatPlanSummary(*result).c_str(), stdout);
  std::printf("wrote %s (hash %s); searched %zu candidates in %.3f s%s\n", c.output.c_str(), PlanHash(plan).c_str(),
              result->candidates.size(), secs,
              c.explain ? "" : " (--explain lists every candidate, --format json the table for tools)");
  return Status::Ok();
}

}  // namespace

void RegisterPlanCommand(CLI::App& app, CommandContext& ctx) {
  auto opts = std::make_shared<PlanCommandOptions>();
  CLI::App* cmd = app.add_subcommand("plan", "search schedules x v x microbatches x recompute; write the best plan");
  cmd->add_option("--model-config", opts->model_config,
                  "HF config.json, a shipped model name (e.g. llama-2-7b), or a layer-cost/profile JSON");
  cmd->add_option("--profile", opts->profile,
                  "measured profile (`pipewright profile`): its fitted costs replace the analytic model");
  cmd->add_option("--device", opts->device,
                  "the device each rank computes on, by its spec (memory, FLOP/s, links): a shipped name (A100-40GB, "
                  "A100-80GB, H100-80GB, H200-141GB, cpu-core) or a JSON file; `run --device` then says its kind, "
                  "cpu or cuda");
  AddPipelineSizeFlag(cmd, &opts->pp);
  cmd->add_option("--dp,--data-parallel-size", opts->dp,
                  "data-parallel replicas D of the pipeline (world size P x D; the batch flags count all replicas)")
      ->capture_default_str();
  cmd->add_option("--tensor-model-parallel-size,--tp", opts->tp,
                  "tensor-parallel ranks T sharing every layer (Megatron TP inside a node; world size T x P x D)")
      ->capture_default_str();
  cmd->add_flag("--sequence-parallel", opts->sequence_parallel,
                "shard norms and dropout over the sequence on the T ranks (default on when T > 1)");
  cmd->add_flag("--no-sequence-parallel", opts->no_sequence_parallel,
                "tensor parallelism without sequence parallelism");
  cmd->add_option("--num-devices", opts->num_devices,
                  "choose the split T x P x D = N (instead of --pp/--dp; T searched unless --tp is given, ZeRO-1 "
                  "searched unless --use-distributed-optimizer): the best of each split is reported");
  cmd->add_flag("--use-distributed-optimizer", opts->distributed_optimizer,
                "ZeRO-1: shard AdamW state over the D replicas (reduce-scatter + all-gather instead of all-reduce)");
  cmd->add_option("--num-microbatches", opts->num_microbatches, "microbatches m per step");
  cmd->add_option("--micro-batch-size", opts->micro_batch_size, "sequences per microbatch (unset: try 1, 2, 4, 8)");
  cmd->add_option("--global-batch-size", opts->global_batch_size, "sequences per step");
  cmd->add_option("--seq-length", opts->seq_length, "tokens per sequence (default: the model's max positions)");
  AddVirtualStagesFlag(cmd, &opts->virtual_stages, "stages per rank v (unset: search 1..--max-virtual-stages)");
  cmd->add_option("--max-virtual-stages", opts->max_virtual_stages, "largest v searched")->capture_default_str();
  cmd->add_option("--schedule", opts->schedule, "auto, or schedule name(s), comma-separated")->capture_default_str();
  cmd->add_option("--memory-limit", opts->memory_limit,
                  "per-rank memory limit itself, e.g. 70GiB (default: the device's capacity - its runtime reserve)");
  cmd->add_option("--memory-reserve", opts->memory_reserve,
                  "bytes of each device kept free for the runtime (CUDA context, NCCL buffers, fragmentation) instead "
                  "of the device file's runtime_reserve, e.g. 10GiB; 0 plans up to the capacity");
  cmd->add_option("--recompute-granularity", opts->recompute, "auto|none|selective|full")->capture_default_str();
  cmd->add_option("--first-stage-num-layers", opts->first_stage_num_layers, "decoder layers on the first stage");
  cmd->add_option("--last-stage-num-layers", opts->last_stage_num_layers, "decoder layers on the last stage");
  cmd->add_option("--layers-per-stage", opts->layers_per_stage,
                  "the split itself: layers of each global stage, e.g. 3,2,2,3 (P*v counts summing to the layer "
                  "count: embedding + blocks + head)")
      ->delimiter(',');
  cmd->add_option("--objective", opts->objective,
                  "makespan (global optimizer barrier: makespan_s) | steady (no barrier: steady_step_s)")
      ->capture_default_str();
  cmd->add_option("--clip-grad-norm", opts->clip_grad_norm,
                  "the run clips gradients by their global norm: a global barrier per step, so the plan minimises "
                  "makespan_s and records training.global_barrier (0 = no clipping)");
  AddDtypeFlag(cmd, &opts->dtype,
               std::string(kDtypeHelp) +
                   "; `pipewright run` trains fp32 and fp64 plans. Default bf16, fp32 with "
                   "--profile");
  cmd->add_flag("--no-min-pp", opts->no_min_pp, "skip the search for the smallest P that fits");
  cmd->add_flag("--try-optimal", opts->try_optimal,
                "also solve the exact schedule (CBC) of the best one-stage-per-rank candidate (P x m <= 32) and "
                "choose it when its makespan is shorter");
  cmd->add_option("--optimal-time-limit", opts->optimal_time_limit_s, "seconds CBC may search with --try-optimal")
      ->capture_default_str();
  cmd->add_flag("--explain,-v", opts->explain, "print every candidate and every rejection, not only the summary");
  cmd->add_option("--format", opts->format, "text (a summary) | json (the whole candidate table, for tools)")
      ->check(CLI::IsMember({"text", "json"}))
      ->capture_default_str();
  cmd->add_option("-o,--output", opts->output, "plan file to write")->capture_default_str();
  cmd->add_option("--csv", opts->csv,
                  "also write the chosen schedule as a compute-only PyTorch CSV (torchtitan's "
                  "pipeline_parallel_schedule_csv)");
  cmd->callback([opts, cmd, &ctx]() {
    opts->given.clear();
    for (const char* name :
         {"--pipeline-model-parallel-size", "--data-parallel-size", "--num-devices", "--tensor-model-parallel-size",
          "--num-microbatches", "--micro-batch-size", "--global-batch-size", "--seq-length",
          "--num-virtual-stages-per-pipeline-rank", "--first-stage-num-layers", "--last-stage-num-layers"})
      if (cmd->count(name) > 0) opts->given.insert(name);
    Status st = RunPlan(*opts);
    if (!st.ok()) Fail(ctx, "plan", st);
  });
}

}  // namespace pw::cli
