// Launch configurations for torchtitan and Megatron-LM (launch/launch_config.h).
//
// Names and rules, from the targets' own code:
// - torchtitan 0.3.0 (PyPI): torchtitan/config/configs.py (ParallelismConfig,
//   TrainingConfig), torchtitan/trainer.py (Trainer.Config.__post_init__:
//   local_batch_size divisible by pipeline_parallel_microbatch_size; pp > 1
//   needs --training.disable_cuda_graphs), torchtitan/config/manager.py
//   (tyro; list[str] values are comma-separated, --module/--config required),
//   torchtitan/distributed/activation_checkpoint.py (the subcommands
//   activation_checkpoint:{selective,full,memory-budget,none}),
//   torchtitan/distributed/pipeline_parallel.py (a CSV runs under
//   _PipelineScheduleRuntime; stages are placed "v" for ZBVZeroBubble and
//   DualPipeV, "loop" otherwise), torchtitan/models/common/decoder.py (module
//   names tok_embeddings, layers.<i>, norm, lm_head).
// - Megatron-LM: megatron/training/arguments.py (flags; at most one of
//   --num-layers-per-virtual-pipeline-stage, --num-virtual-stages-per-
//   pipeline-rank, --pipeline-model-parallel-layout), megatron-core 0.16
//   megatron/core/transformer/pipeline_parallel_layer_layout.py (layout
//   string: stages split by '|', E embedding, t decoder layer, L loss; stage
//   k of the flat list on pp rank k % P, virtual stage k / P),
//   transformer_config.py (first/last stage layers > 0, middle stages
//   divisible), pipeline_parallel/schedules.py (interleaving: microbatches a
//   multiple of P, at least P, with the default group size P).
#include "launch/launch_config.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <cstdlib>

#include "schedules/csv.h"
#include "schedules/program.h"

namespace pw::interop {

namespace {

std::string JoinNames(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "" : ", ") + n;
  return out;
}

std::string Num(int64_t v) { return std::to_string(v); }

// Shortest text of a double that reads back the same (clip norms: 1.0 -> "1.0").
std::string Real(double v) {
  char buf[64];
  for (int prec = 1; prec <= 17; ++prec) {
    std::snprintf(buf, sizeof buf, "%.*g", prec, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  return s;
}

// What both targets need: a model with its layer list, the training shape,
// equal microbatches, a dtype they run, and the stages' layer ranges.
struct Shape {
  int pp = 1;
  int dp = 1;
  int v = 1;                                        // stages per rank
  int m = 1;                                        // microbatches
  int64_t micro_batch = 1;                          // b
  int64_t local_batch = 1;                          // per data-parallel rank: m * b
  int64_t global_batch = 1;                         // D * local_batch
  std::vector<std::vector<LayerKind>> stage_kinds;  // the kinds of each stage's layers, in order
  std::vector<std::vector<int>> stage_blocks;       // block indices (0-based) of each stage
};

StatusOr<Shape> ReadShape(const Plan& plan, const std::string& src, const std::string& target) {
  if (!plan.model || plan.layers.empty())
    return Status::InvalidArgument(src + ": model: the plan has no model and layer list (a schedule-only plan?); " +
                                   target + " needs a plan from `pipewright plan --model-config`");
  if (!plan.training)
    return Status::InvalidArgument(src + ": training: the plan has no training section; " + target +
                                   " needs the batch shape");
  const PlanTraining& t = *plan.training;
  Shape s;
  s.pp = plan.pp_size;
  s.dp = plan.dp_size;
  s.m = plan.num_microbatches;
  if (plan.num_stages % plan.pp_size != 0)
    return Status::InvalidArgument(src + ": num_stages: " + Num(plan.num_stages) + " stages on " + Num(plan.pp_size) +
                                   " ranks is not a whole number of stages per rank; " + target +
                                   " gives every rank the same number");
  s.v = plan.num_stages / plan.pp_size;
  if (t.microbatch_sizes.empty()) return Status::InvalidArgument(src + ": training.microbatch_sizes: empty");
  for (int64_t mb : t.microbatch_sizes)
    if (mb != t.microbatch_sizes.front())
      return Status::InvalidArgument(src + ": training.microbatch_sizes: " + target +
                                     " splits the local batch into equal microbatches; this plan's differ (" +
                                     Num(t.microbatch_sizes.front()) + " and " + Num(mb) +
                                     "); plan with a global batch that divides evenly");
  s.micro_batch = t.microbatch_sizes.front();
  s.local_batch = s.micro_batch * static_cast<int64_t>(t.microbatch_sizes.size());
  s.global_batch = s.local_batch * s.dp;
  if (t.precision == Precision::kFp64)
    return Status::InvalidArgument(src + ": training.dtype: " + target +
                                   " does not train in fp64; plan with bf16 or fp32");
  for (const PlanStage& st : plan.stages) {
    std::vector<LayerKind> kinds;
    std::vector<int> blocks;
    for (int l = st.layer_begin; l < st.layer_end; ++l) {
      if (l < 0 || l >= static_cast<int>(plan.layers.size()))
        return Status::InvalidArgument(src + ": stages[" + Num(st.index) + "].layers: layer " + Num(l) +
                                       " is outside the layer list");
      kinds.push_back(plan.layers[l].kind);
      if (plan.layers[l].kind == LayerKind::kBlock) blocks.push_back(l - 1);
    }
    s.stage_kinds.push_back(std::move(kinds));
    s.stage_blocks.push_back(std::move(blocks));
  }
  return s;
}

Status RequireSchedule(const Plan& plan, const std::string& src, const LaunchTarget& target) {
  if (std::find(target.schedules.begin(), target.schedules.end(), plan.schedule) != target.schedules.end())
    return Status::Ok();
  return Status::InvalidArgument(src + ": schedule: " + target.display_name + " cannot run '" + plan.schedule +
                                 "'; it runs: " + JoinNames(target.schedules) +
                                 " (plan again with --schedule one of these)");
}

// True if `s` survives shell word splitting and globbing unchanged.
bool IsShellWord(const std::string& s) {
  if (s.empty()) return false;
  for (unsigned char c : s)
    if (!(std::isalnum(c) || std::string("._-/+,=:@%").find(static_cast<char>(c)) != std::string::npos)) return false;
  return true;
}

// ---------------------------------------------------------------- torchtitan

// The plan schedules torchtitan 0.3 (torch.distributed.pipelining's
// get_schedule_class) has a class for; every other one runs from the plan's
// own order as a CSV.
struct TorchtitanSchedule {
  const char* plan_name;
  const char* class_name;
};
constexpr TorchtitanSchedule kTorchtitanNamed[] = {
    {"gpipe", "GPipe"},
    {"1f1b", "1F1B"},
    {"interleaved-1f1b", "Interleaved1F1B"},
    {"looped-bfs", "LoopedBFS"},
    {"interleaved-zb", "InterleavedZeroBubble"},
    {"zb-v", "ZBVZeroBubble"},
    {"dualpipev", "DualPipeV"},
};
// Run as a CSV (the plan's exact compute order).
const char* const kTorchtitanCsv[] = {"zb-h1", "zb-h2", "zb-auto", "v-half", "v-min", "v-auto", "optimal", "custom"};

std::vector<std::string> TorchtitanSchedules() {
  std::vector<std::string> out;
  for (const TorchtitanSchedule& s : kTorchtitanNamed) out.push_back(s.plan_name);
  for (const char* s : kTorchtitanCsv) out.push_back(s);
  return out;
}

// torchtitan's module names of one plan layer.
std::vector<std::string> TorchtitanModules(LayerKind kind, int block) {
  switch (kind) {
    case LayerKind::kEmbedding:
      return {"tok_embeddings"};
    case LayerKind::kBlock:
      return {"layers." + Num(block)};
    case LayerKind::kHead:
      return {"norm", "lm_head"};
  }
  return {};
}

StatusOr<LaunchConfig> WriteTorchtitan(const Plan& plan, const std::string& src, const LaunchConfigOptions& o);

// ------------------------------------------------------------------ Megatron

StatusOr<LaunchConfig> WriteMegatron(const Plan& plan, const std::string& src, const LaunchConfigOptions& o);

}  // namespace

const std::vector<LaunchTarget>& LaunchTargets() {
  static const std::vector<LaunchTarget> targets = {
      {"torchtitan", "torchtitan 0.3", TorchtitanSchedules(), WriteTorchtitan},
      {"megatron", "Megatron-LM (megatron-core >= 0.13)", {"1f1b", "interleaved-1f1b"}, WriteMegatron},
  };
  return targets;
}

StatusOr<const LaunchTarget*> FindLaunchTarget(const std::string& name) {
  std::vector<std::string> names;
  for (const LaunchTarget& t : LaunchTargets()) {
    if (t.name == name) return &t;
    names.push_back(t.name);
  }
  return Status::InvalidArgument("--for: unknown target '" + name + "'; choose one of: " + JoinNames(names));
}

StatusOr<LaunchConfig> MakeLaunchConfig(const Plan& plan, const std::string& plan_source, const std::string& target,
                                        const LaunchConfigOptions& options) {
  PW_ASSIGN_OR_RETURN(const LaunchTarget* t, FindLaunchTarget(target));
  PW_RETURN_IF_ERROR(RequireSchedule(plan, plan_source, *t));
  return t->write(plan, plan_source, options);
}

std::string ArgsFileText(const LaunchConfig& config) {
  std::string out;
  for (const ArgLine& line : config.lines) {
    for (size_t i = 0; i < line.size(); ++i) out += (i ? " " : "") + line[i];
    out += "\n";
  }
  return out;
}

std::string ScheduleCsvPathFor(const std::string& args_path) {
  std::string base = args_path;
  const std::string ext = ".args";
  const size_t slash = base.find_last_of('/');
  const size_t name_start = slash == std::string::npos ? 0 : slash + 1;
  if (base.size() - name_start > ext.size() && base.compare(base.size() - ext.size(), ext.size(), ext) == 0)
    base.resize(base.size() - ext.size());
  return base + ".schedule.csv";
}

namespace {

StatusOr<LaunchConfig> WriteTorchtitan(const Plan& plan, const std::string& src, const LaunchConfigOptions& o) {
  const std::string target = "torchtitan";
  PW_ASSIGN_OR_RETURN(Shape s, ReadShape(plan, src, target));
  if (plan.model->family != ModelFamily::kLlama)
    return Status::InvalidArgument(src + ": model.architecture: torchtitan has no " +
                                   std::string(ModelFamilyName(plan.model->family)) +
                                   " model (its decoders are Llama-family: tok_embeddings, layers.<i>, norm, lm_head); "
                                   "plan a llama-architecture model");
  // Stage placement: torchtitan places stages "loop" (rank s % P) or, for
  // ZBVZeroBubble and DualPipeV, "v" with two stages per rank.
  const bool loop = plan.stage_to_rank == MakeStageToRank(Placement::kLoop, s.pp, s.v);
  const bool vee = s.v == 2 && plan.stage_to_rank == MakeStageToRank(Placement::kV, s.pp, s.v);
  if (!loop && !vee)
    return Status::InvalidArgument(
        src + ": stage_to_rank: torchtitan places stages in loop order (stage s on rank s % " + Num(s.pp) +
        ") or in V order with 2 stages per rank; this plan's placement is neither");
  const char* class_name = nullptr;
  for (const TorchtitanSchedule& n : kTorchtitanNamed)
    if (plan.schedule == n.plan_name) class_name = n.class_name;
  const bool csv = class_name == nullptr;
  LaunchConfig out;
  if (csv) {
    if (o.schedule_csv_path.empty())
      return Status::InvalidArgument("-o: schedule '" + plan.schedule +
                                     "' runs in torchtitan from a CSV written beside the arguments; give -o FILE");
    if (!IsShellWord(o.schedule_csv_path))
      return Status::InvalidArgument("-o: the CSV path '" + o.schedule_csv_path +
                                     "' goes into the arguments file; use letters, digits and ._-/+,=:@% only");
    // The runtime class reads the file; the class name only sets the
    // placement style ("v" for ZBVZeroBubble, "loop" for the others).
    class_name = vee ? "ZBVZeroBubble" : "PipelineScheduleMulti";
    out.csv = ScheduleToCsv(PlanProgram(plan), CsvFormat::kComputeOnly);
  }
  if (!o.module.empty()) out.lines.push_back({"--module", o.module});
  if (!o.config.empty()) out.lines.push_back({"--config", o.config});
  for (const std::string* v : {&o.module, &o.config})
    if (!v->empty() && !IsShellWord(*v))
      return Status::InvalidArgument((v == &o.module ? "--module" : "--config") + std::string(": '") + *v +
                                     "' is not a plain word");
  const PlanTraining& t = *plan.training;
  const bool fsdp = t.distributed_optimizer;
  out.lines.push_back({"--parallelism.pipeline_parallel_degree", Num(s.pp)});
  out.lines.push_back({"--parallelism.data_parallel_replicate_degree", Num(fsdp ? 1 : s.dp)});
  out.lines.push_back({"--parallelism.data_parallel_shard_degree", Num(fsdp ? s.dp : 1)});
  out.lines.push_back({"--parallelism.tensor_parallel_degree", Num(plan.tp_size)});
  // torchtitan's enable_sequence_parallel defaults to true; it only acts with TP.
  if (plan.tp_size > 1)
    out.lines.push_back({plan.sequence_parallel ? "--parallelism.enable_sequence_parallel"
                                                : "--parallelism.no_enable_sequence_parallel"});
  out.lines.push_back({"--parallelism.pipeline_parallel_schedule", class_name});
  if (csv) out.lines.push_back({"--parallelism.pipeline_parallel_schedule_csv", o.schedule_csv_path});
  ArgLine parts = {"--parallelism.module_fqns_per_model_part"};
  for (size_t st = 0; st < s.stage_kinds.size(); ++st) {
    std::string part;
    size_t block = 0;
    for (LayerKind k : s.stage_kinds[st]) {
      const int b = k == LayerKind::kBlock ? s.stage_blocks[st][block++] : -1;
      for (const std::string& name : TorchtitanModules(k, b)) part += (part.empty() ? "" : ",") + name;
    }
    parts.push_back(part);
  }
  out.lines.push_back(parts);
  out.lines.push_back({"--parallelism.pipeline_parallel_microbatch_size", Num(s.micro_batch)});
  out.lines.push_back({"--training.local_batch_size", Num(s.local_batch)});
  out.lines.push_back({"--training.global_batch_size", Num(s.global_batch)});
  out.lines.push_back({"--training.seq_len", Num(t.seq_length)});
  out.lines.push_back(
      {"--training.mixed_precision_param", t.precision == Precision::kMixedBf16 ? "bfloat16" : "float32"});
  if (t.clip_grad_norm > 0) out.lines.push_back({"--training.max_norm", Real(t.clip_grad_norm)});
  // Trainer.Config refuses pipeline parallelism with CUDA graphs on.
  if (s.pp > 1) out.lines.push_back({"--training.disable_cuda_graphs"});
  const char* ac = t.recompute == Recompute::kFull        ? "full"
                   : t.recompute == Recompute::kSelective ? "selective"
                                                          : "none";
  out.lines.push_back({std::string("activation_checkpoint:") + ac});  // a tyro subcommand: last

  if (fsdp)
    out.notes.push_back(
        "torchtitan has no ZeRO-1: training.distributed_optimizer is written as FSDP "
        "(data_parallel_shard_degree " +
        Num(s.dp) + "), which also shards parameters and gradients");
  if (t.precision == Precision::kMixedBf16 && !(fsdp && s.dp > 1))
    out.notes.push_back(
        "torchtitan applies mixed_precision_param through FSDP (or autocast without other "
        "parallelism): with pipeline parallelism and no FSDP it trains in float32");
  if (t.clip_grad_norm <= 0)
    out.notes.push_back(
        "the plan does not clip; torchtitan always clips by the global norm "
        "(training.max_norm, 1.0 unless the config says otherwise)");
  if (t.recompute == Recompute::kSelective)
    out.notes.push_back(
        "torchtitan's selective checkpointing is per operator (saves matmul outputs), "
        "not the plan's attention-core recomputation: memory differs");
  if (!csv)
    out.notes.push_back("torchtitan runs its own " + std::string(class_name) +
                        " order, not the plan's lists (same family, stages and microbatches)");
  return out;
}

StatusOr<LaunchConfig> WriteMegatron(const Plan& plan, const std::string& src, const LaunchConfigOptions& o) {
  const std::string target = "Megatron-LM";
  if (!o.module.empty() || !o.config.empty())
    return Status::InvalidArgument(std::string(o.module.empty() ? "--config" : "--module") +
                                   ": only for --for torchtitan (Megatron-LM has no model registry flag)");
  PW_ASSIGN_OR_RETURN(Shape s, ReadShape(plan, src, target));
  const bool loop = plan.stage_to_rank == MakeStageToRank(Placement::kLoop, s.pp, s.v);
  if (!loop)
    return Status::InvalidArgument(src + ": stage_to_rank: Megatron-LM places virtual stage k on rank k % " +
                                   Num(s.pp) + "; this plan's placement differs");
  if (s.v > 1) {
    if (s.pp < 2)
      return Status::InvalidArgument(src +
                                     ": pp_size: Megatron-LM interleaves only with pipeline-model-parallel "
                                     "size > 1; this plan has " +
                                     Num(s.v) + " stages on 1 rank");
    if (s.m < s.pp || s.m % s.pp != 0)
      return Status::InvalidArgument(src +
                                     ": num_microbatches: Megatron-LM's interleaved schedule runs a multiple "
                                     "of pipeline-model-parallel-size (" +
                                     Num(s.pp) + ") microbatches, at least " + Num(s.pp) + "; this plan has " +
                                     Num(s.m));
  }
  const ModelConfig& model = *plan.model;
  const PlanTraining& t = *plan.training;
  LaunchConfig out;
  out.lines.push_back({"--tensor-model-parallel-size", Num(plan.tp_size)});
  out.lines.push_back({"--pipeline-model-parallel-size", Num(s.pp)});
  // The split: Megatron's default (even), then the first/last overrides
  // (one stage per rank), else the explicit layout.
  const int S = static_cast<int>(s.stage_blocks.size());
  std::vector<int> counts;
  for (const auto& b : s.stage_blocks) counts.push_back(static_cast<int>(b.size()));
  const bool even = std::all_of(counts.begin(), counts.end(), [&](int c) { return c == counts.front() && c > 0; });
  bool done = false;
  if (even) {
    if (s.v > 1) out.lines.push_back({"--num-layers-per-virtual-pipeline-stage", Num(counts.front())});
    done = true;
  } else if (s.v == 1 && S >= 2 && counts.front() > 0 && counts.back() > 0) {
    bool middle_equal = true;
    for (int i = 2; i + 1 < S; ++i) middle_equal = middle_equal && counts[i] == counts[1];
    if (S == 2) {
      out.lines.push_back({"--decoder-first-pipeline-num-layers", Num(counts.front())});
      out.lines.push_back({"--decoder-last-pipeline-num-layers", Num(counts.back())});
      done = true;
    } else if (middle_equal && counts[1] > 0) {
      if (counts.front() != counts[1])
        out.lines.push_back({"--decoder-first-pipeline-num-layers", Num(counts.front())});
      if (counts.back() != counts[1]) out.lines.push_back({"--decoder-last-pipeline-num-layers", Num(counts.back())});
      done = true;
    }
  }
  if (!done) {
    std::string layout;
    for (int st = 0; st < S; ++st) {
      if (st) layout += "|";
      for (LayerKind k : s.stage_kinds[st])
        layout += k == LayerKind::kEmbedding ? "E" : k == LayerKind::kBlock ? "t" : "L";
    }
    out.lines.push_back({"--pipeline-model-parallel-layout", layout});
  }
  out.lines.push_back({"--num-layers", Num(model.num_layers)});
  out.lines.push_back({"--hidden-size", Num(model.hidden)});
  out.lines.push_back({"--ffn-hidden-size", Num(model.ffn)});
  out.lines.push_back({"--num-attention-heads", Num(model.num_heads)});
  if (model.num_kv_heads != model.num_heads) {
    out.lines.push_back({"--group-query-attention"});
    out.lines.push_back({"--num-query-groups", Num(model.num_kv_heads)});
  }
  out.lines.push_back({"--seq-length", Num(t.seq_length)});
  out.lines.push_back({"--max-position-embeddings", Num(model.max_positions)});
  out.lines.push_back({"--micro-batch-size", Num(s.micro_batch)});
  out.lines.push_back({"--global-batch-size", Num(s.global_batch)});
  if (t.recompute == Recompute::kSelective) {
    out.lines.push_back({"--recompute-granularity", "selective"});
  } else if (t.recompute == Recompute::kFull) {
    out.lines.push_back({"--recompute-granularity", "full"});
    out.lines.push_back({"--recompute-method", "uniform"});
    out.lines.push_back({"--recompute-num-layers", "1"});
  }
  if (t.distributed_optimizer) out.lines.push_back({"--use-distributed-optimizer"});
  if (plan.sequence_parallel) out.lines.push_back({"--sequence-parallel"});
  if (t.precision == Precision::kMixedBf16) out.lines.push_back({"--bf16"});
  out.lines.push_back({"--clip-grad", Real(t.clip_grad_norm)});
  out.notes.push_back("Megatron-LM runs its own " + std::string(s.v > 1 ? "interleaved 1F1B" : "1F1B") +
                      " order over the same split and microbatches, not the plan's lists; its data-parallel size is "
                      "world size / (tensor x pipeline) = " +
                      Num(s.dp) + " when launched on " + Num(s.pp * s.dp * plan.tp_size) + " GPUs");
  return out;
}

}  // namespace

}  // namespace pw::interop
