// The plan file's one reader and writer (docs/PLAN_FORMAT.md): version 3 is
// written; versions 3 and 2 (no tensor parallelism: tp_size 1) are read;
// version 1 (HF config under "model", layer names under
// "layers", untyped "training") is read and converted.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <limits>
#include <sstream>
#include <tuple>
#include <type_traits>

#include "base/json_text.h"
#include "base/limits.h"
#include "plan/model_section.h"
#include "plan/plan.h"

namespace pw {

namespace {

using plan_json::Join;
using plan_json::ModelToJson;
using plan_json::ParseModel;
using plan_json::Reader;

using nlohmann::json;
using ojson = nlohmann::ordered_json;

// Top-level fields with a typed home; everything else goes to Plan::extra.
const char* const kKnownFields[] = {"format",
                                    "version",
                                    "schedule",
                                    "pp_size",
                                    "dp_size",
                                    "tp_size",
                                    "sequence_parallel",
                                    "num_stages",
                                    "num_microbatches",
                                    "stage_to_rank",
                                    "model",
                                    "layers",
                                    "training",
                                    "device",
                                    "stages",
                                    "comm",
                                    "memory_limit_bytes",
                                    "ranks",
                                    "predicted",
                                    "planner"};

bool IsKnown(const std::string& key) {
  for (const char* k : kKnownFields)
    if (key == k) return true;
  return false;
}

// --- layers and training -----------------------------------------------------

StatusOr<LayerKind> KindOfName(const Reader& rd, const std::string& path, const std::string& name) {
  if (name == "embedding") return LayerKind::kEmbedding;
  if (name == "head") return LayerKind::kHead;
  if (name.rfind("block.", 0) == 0) return LayerKind::kBlock;
  return rd.Error(path, "unknown layer '" + name + "' (embedding, block.N or head)");
}

ojson TrainingToJson(const PlanTraining& t) {
  ojson j;
  j["micro_batch_size"] = t.micro_batch_size;
  j["seq_length"] = t.seq_length;
  j["global_batch_size"] = t.global_batch_size;
  j["microbatch_sizes"] = t.microbatch_sizes;
  j["recompute"] = RecomputeName(t.recompute);
  j["dtype"] = PrecisionName(t.precision);
  j["optimizer"] = t.optimizer;
  j["global_barrier"] = t.global_barrier;
  j["clip_grad_norm"] = t.clip_grad_norm;
  j["distributed_optimizer"] = t.distributed_optimizer;
  return j;
}

// Version 2: every field required. Version 1 (`legacy`): what the old writers
// wrote, with their defaults (micro_batch_size repeated m times when
// microbatch_sizes is absent, dtype fp32, or fp64 when dtype_bytes is 8).
Status ParseTraining(const Reader& rd, const json& j, int m, int dp_size, bool legacy, PlanTraining* t) {
  const std::string p = "training";
  if (!j.is_object()) return rd.Error(p, "expected an object");
  PW_RETURN_IF_ERROR(rd.Positive(j, p, "seq_length", &t->seq_length));
  if (!legacy || j.contains("microbatch_sizes")) {
    const json* v;
    PW_RETURN_IF_ERROR(rd.Get(j, p, "microbatch_sizes", &v));
    if (!v->is_array())
      return rd.Error(p + ".microbatch_sizes", "expected an array of " + std::to_string(m) + " integers");
    for (size_t i = 0; i < v->size(); ++i) {
      int64_t rows = 0;
      PW_RETURN_IF_ERROR(rd.Value((*v)[i], p + ".microbatch_sizes[" + std::to_string(i) + "]", &rows));
      if (rows < 1) return rd.Error(p + ".microbatch_sizes[" + std::to_string(i) + "]", "must be >= 1");
      t->microbatch_sizes.push_back(rows);
    }
  } else {
    int64_t b = 0;
    PW_RETURN_IF_ERROR(rd.Positive(j, p, "micro_batch_size", &b));
    t->microbatch_sizes.assign(static_cast<size_t>(m), b);
  }
  if (static_cast<int>(t->microbatch_sizes.size()) != m)
    return rd.Error(p + ".microbatch_sizes", "has " + std::to_string(t->microbatch_sizes.size()) +
                                                 " entries, num_microbatches is " + std::to_string(m));
  int64_t largest = 0, sum = 0;
  for (int64_t rows : t->microbatch_sizes) {
    largest = std::max(largest, rows);
    sum += rows;
  }
  if (legacy) {
    t->micro_batch_size = largest;
    t->global_batch_size = sum * dp_size;
    std::string dtype = j.value("dtype", j.value("dtype_bytes", 4) == 8 ? "fp64" : "fp32");
    auto prec = ParsePrecision(dtype);
    if (!prec.ok()) return rd.Error(p + ".dtype", prec.status().message());
    t->precision = *prec;
    auto rc = ParseRecompute(j.value("recompute", "none"));
    if (!rc.ok()) return rd.Error(p + ".recompute", rc.status().message());
    t->recompute = *rc;
    t->optimizer = j.value("optimizer", "adamw");
    t->global_barrier = j.value("global_barrier", false);
    t->clip_grad_norm = j.value("clip_grad_norm", 0.0);
    return Status::Ok();
  }
  PW_RETURN_IF_ERROR(rd.Positive(j, p, "micro_batch_size", &t->micro_batch_size));
  PW_RETURN_IF_ERROR(rd.Positive(j, p, "global_batch_size", &t->global_batch_size));
  if (t->micro_batch_size != largest)
    return rd.Error(p + ".micro_batch_size", std::to_string(t->micro_batch_size) +
                                                 " is not the largest of microbatch_sizes (" + std::to_string(largest) +
                                                 ")");
  if (t->global_batch_size != sum * dp_size)
    return rd.Error(p + ".global_batch_size", std::to_string(t->global_batch_size) +
                                                  " is not dp_size x the sum of microbatch_sizes (" +
                                                  std::to_string(dp_size) + " x " + std::to_string(sum) + " = " +
                                                  std::to_string(sum * dp_size) + ")");
  std::string text;
  PW_RETURN_IF_ERROR(rd.Choice(j, p, "recompute", {"none", "selective", "full"}, &text));
  t->recompute = *ParseRecompute(text);
  PW_RETURN_IF_ERROR(rd.Choice(j, p, "dtype", {"bf16", "fp32", "fp64"}, &text));
  t->precision = *ParsePrecision(text);
  PW_RETURN_IF_ERROR(rd.Choice(j, p, "optimizer", {"adamw"}, &t->optimizer));
  PW_RETURN_IF_ERROR(rd.Bool(j, p, "global_barrier", &t->global_barrier));
  PW_RETURN_IF_ERROR(rd.NonNegative(j, p, "clip_grad_norm", &t->clip_grad_norm));
  if (t->clip_grad_norm > 0 && !t->global_barrier)
    return rd.Error(p + ".global_barrier",
                    "must be true when clip_grad_norm > 0 (clipping by the global norm is a barrier)");
  // Optional: files written before data parallelism lack it (false).
  if (j.contains("distributed_optimizer"))
    PW_RETURN_IF_ERROR(rd.Bool(j, p, "distributed_optimizer", &t->distributed_optimizer));
  if (t->distributed_optimizer && dp_size < 2)
    return rd.Error(p + ".distributed_optimizer",
                    "is true but dp_size is " + std::to_string(dp_size) +
                        ": ZeRO-1 shards the optimizer state over >= 2 data-parallel ranks");
  return Status::Ok();
}

// A version-1 file's model is the raw HF config and its layer list only
// names, so an edited model section (a wider model) reads without a
// mismatch, against costs planned for another model. Its stages' message
// sizes were written from the model: a stage's forward output is
// micro_batch_size x seq_length x hidden_size activation elements (what
// every writer of version 1 wrote, and what models/spec/footprint.h
// derives). A stage whose send_forward (any stage but the last) or
// send_backward (any but the first) is neither 0 nor that size is refused,
// naming both numbers.
Status CheckLegacyModelAgainstCosts(const Reader& rd, const Plan& plan) {
  const PlanTraining& t = *plan.training;
  const int64_t e = ActivationElementBytes(t.precision);
  const int64_t want = t.micro_batch_size * t.seq_length * plan.model->hidden * e;
  for (size_t s = 0; s < plan.stages.size(); ++s) {
    const StageMemory& m = plan.stages[s].memory;
    for (const auto& [field, bytes, applies] :
         {std::make_tuple("send_forward", m.send_forward, s + 1 < plan.stages.size()),
          std::make_tuple("send_backward", m.send_backward, s > 0)}) {
      if (!applies || bytes == 0 || bytes == want) continue;
      return rd.Error(
          "model", "the version-1 plan's stages[" + std::to_string(s) + "].memory_bytes." + field + " is " +
                       std::to_string(bytes) + " bytes, but its model section gives micro_batch_size x " +
                       "seq_length x hidden_size x " + std::to_string(e) + " bytes (" + PrecisionName(t.precision) +
                       ") = " + std::to_string(t.micro_batch_size) + " x " + std::to_string(t.seq_length) + " x " +
                       std::to_string(plan.model->hidden) + " x " + std::to_string(e) + " = " + std::to_string(want) +
                       ": the model section was edited after planning (the costs are for another model); plan "
                       "again for this model");
    }
  }
  return Status::Ok();
}

// The model sections of a plan: model, layers, training (each optional, but
// layers need a model). Checks that the layer list is the model's and that
// the stages cover it.
Status ParseModelSections(const Reader& rd, const json& doc, int version, Plan* plan) {
  const bool legacy = version == 1;
  auto model = doc.find("model");
  if (model != doc.end() && !model->is_null()) {
    ModelConfig m;
    if (legacy) {
      // Version 1 held the HF config; the executor then supplied its byte
      // vocabulary when vocab_size was missing.
      json config = *model;
      if (config.is_object() && !config.contains("vocab_size")) config["vocab_size"] = 256;
      auto parsed = ParseModelConfig(config, rd.Error("model", "").message());
      if (!parsed.ok()) return parsed.status();
      m = *parsed;
      m.raw = json();
    } else {
      PW_RETURN_IF_ERROR(ParseModel(rd, *model, &m));
    }
    plan->model = m;
  }
  auto layers = doc.find("layers");
  if (layers != doc.end() && !layers->is_null()) {
    if (!plan->model) return rd.Error("layers", "a layer list needs the model section");
    if (!layers->is_array()) return rd.Error("layers", "expected an array");
    const std::vector<PlanLayer> expected = PlanLayers(*plan->model);
    if (layers->size() != expected.size())
      return rd.Error("layers", "has " + std::to_string(layers->size()) + " entries, but the model has " +
                                    std::to_string(expected.size()) + " layers (embedding, " +
                                    std::to_string(plan->model->num_layers) + " blocks, head)");
    for (size_t i = 0; i < layers->size(); ++i) {
      const std::string path = "layers[" + std::to_string(i) + "]";
      const json& l = (*layers)[i];
      PlanLayer layer;
      if (legacy) {
        if (!l.is_string()) return rd.Error(path, "expected a layer name");
        layer.name = l.get<std::string>();
        PW_ASSIGN_OR_RETURN(layer.kind, KindOfName(rd, path, layer.name));
        layer.params = expected[i].params;
      } else {
        std::string kind;
        PW_RETURN_IF_ERROR(rd.String(l, path, "name", &layer.name));
        PW_RETURN_IF_ERROR(rd.Choice(l, path, "kind", {"embedding", "block", "head"}, &kind));
        PW_ASSIGN_OR_RETURN(layer.kind, KindOfName(rd, path + ".kind", kind == "block" ? "block." : kind));
        PW_RETURN_IF_ERROR(rd.NonNegative(l, path, "params", &layer.params));
      }
      if (layer.name != expected[i].name || layer.kind != expected[i].kind)
        return rd.Error(
            path, "is '" + layer.name + "', the model's layer " + std::to_string(i) + " is '" + expected[i].name + "'");
      if (layer.params != expected[i].params)
        return rd.Error(path + ".params", std::to_string(layer.params) + " does not match the model section (" +
                                              std::to_string(expected[i].params) +
                                              " parameters): the model or the layer list was edited");
      plan->layers.push_back(layer);
    }
  } else if (plan->model) {
    plan->layers = PlanLayers(*plan->model);
  }
  if (!plan->layers.empty() && !plan->stages.empty() &&
      plan->stages.back().layer_end != static_cast<int>(plan->layers.size()))
    return rd.Error("stages[" + std::to_string(plan->stages.size() - 1) + "].layers",
                    "the last stage ends at layer " + std::to_string(plan->stages.back().layer_end) +
                        ", but the model has " + std::to_string(plan->layers.size()) + " layers");
  auto training = doc.find("training");
  if (training != doc.end() && !training->is_null()) {
    PlanTraining t;
    PW_RETURN_IF_ERROR(ParseTraining(rd, *training, plan->num_microbatches, plan->dp_size, legacy, &t));
    plan->training = t;
  }
  if (legacy && plan->model && plan->training) PW_RETURN_IF_ERROR(CheckLegacyModelAgainstCosts(rd, *plan));
  return Status::Ok();
}

// Stands for `ranks` in the tree; replaced by RanksText. It is found as the
// value of the depth-1 key "ranks" after a raw newline, which no string value
// of the plan can contain (dump escapes newlines), so a model name equal to
// the placeholder cannot be mistaken for it.
constexpr const char* kRanksPlaceholder = "pipewright:ranks";

// `ranks` as nlohmann's dump(2) writes it at depth 1 (a test checks the whole
// text against dump(2) of its own parse): action strings need no escaping
// (the grammar is letters, digits and '_').
std::string RanksText(const std::vector<std::vector<Action>>& ranks) {
  if (ranks.empty()) return "[]";
  size_t actions = 0;
  for (const auto& list : ranks) actions += list.size();
  std::string out = "[\n";
  out.reserve(actions * 24 + ranks.size() * 64);
  char number[24];
  for (size_t r = 0; r < ranks.size(); ++r) {
    out += "    {\n      \"rank\": " + std::to_string(r) + ",\n      \"actions\": ";
    if (ranks[r].empty()) {
      out += "[]";
    } else {
      out += "[\n";
      for (size_t i = 0; i < ranks[r].size(); ++i) {
        const Action& a = ranks[r][i];
        out += "        \"";
        if (IsOverlap(a.type)) {  // "(0F7;7B3)OVERLAP_F_B" (Action::ToString)
          out += a.ToString();
        } else {
          out.append(number, static_cast<size_t>(std::snprintf(number, sizeof number, "%d", a.stage)));
          out += ActionTypeName(a.type);
          if (!IsReduceGrad(a.type))  // "<stage>REDUCE_GRAD" has no microbatch (Action::ToString)
            out.append(number, static_cast<size_t>(std::snprintf(number, sizeof number, "%d", a.microbatch)));
        }
        out += i + 1 < ranks[r].size() ? "\",\n" : "\"\n";
      }
      out += "      ]";
    }
    out += r + 1 < ranks.size() ? "\n    },\n" : "\n    }\n";
  }
  out += "  ]";
  return out;
}

}  // namespace

StatusOr<Plan> ParsePlan(const std::string& text, const std::string& source) {
  Reader rd(source);
  // Depth-limited (a hostile nesting never reaches the recursive copy, hash
  // or destructor), never throws, and escapes binary bytes in its message.
  PW_ASSIGN_OR_RETURN(json doc, ParseJsonText(text, source));
  if (!doc.is_object()) return rd.Error("(top level)", "expected a JSON object");
  Plan plan;
  const json* v;
  PW_RETURN_IF_ERROR(rd.Get(doc, "", "format", &v));
  if (*v != kPlanFormat) return rd.Error("format", "expected \"pipewright-plan\", got " + Reader::Dump(*v));
  int version = 0;
  PW_RETURN_IF_ERROR(rd.Number(doc, "", "version", &version));
  if (version < 1 || version > kPlanVersion)
    return rd.Error("version", "this pipewright reads versions 1 to " + std::to_string(kPlanVersion) +
                                   ", the file is version " + std::to_string(version));
  PW_RETURN_IF_ERROR(rd.String(doc, "", "schedule", &plan.schedule));
  PW_RETURN_IF_ERROR(rd.Number(doc, "", "pp_size", &plan.pp_size));
  if (version >= 2) PW_RETURN_IF_ERROR(rd.Number(doc, "", "dp_size", &plan.dp_size));
  if (version >= 3) {
    PW_RETURN_IF_ERROR(rd.Number(doc, "", "tp_size", &plan.tp_size));
    PW_RETURN_IF_ERROR(rd.Bool(doc, "", "sequence_parallel", &plan.sequence_parallel));
    if (plan.tp_size < 1) return rd.Error("tp_size", "must be >= 1");
    if (plan.tp_size > limits::kMaxRanks)
      return rd.Error("tp_size", "is more than " + std::to_string(limits::kMaxRanks));
    if (plan.sequence_parallel && plan.tp_size == 1)
      return rd.Error("sequence_parallel", "is true but tp_size is 1 (sequence parallelism shards over the TP ranks)");
  }
  PW_RETURN_IF_ERROR(rd.Number(doc, "", "num_stages", &plan.num_stages));
  PW_RETURN_IF_ERROR(rd.Number(doc, "", "num_microbatches", &plan.num_microbatches));
  if (plan.pp_size < 1) return rd.Error("pp_size", "must be >= 1");
  if (plan.dp_size < 1) return rd.Error("dp_size", "must be >= 1");
  if (plan.num_stages < 1) return rd.Error("num_stages", "must be >= 1");
  if (plan.num_microbatches < 1) return rd.Error("num_microbatches", "must be >= 1");
  // Before anything is allocated by these sizes.
  for (const auto& [field, value, limit, reason] :
       {std::make_tuple("pp_size", int64_t{plan.pp_size}, limits::kMaxRanks, "pipeline ranks"),
        std::make_tuple("num_stages", int64_t{plan.num_stages}, limits::kMaxStages, "global stages"),
        std::make_tuple("num_microbatches", int64_t{plan.num_microbatches}, limits::kMaxMicrobatches,
                        "microbatches per step"),
        std::make_tuple("num_stages x num_microbatches", int64_t{plan.num_stages} * plan.num_microbatches,
                        limits::kMaxStageMicrobatches, "stage-microbatch pairs")}) {
    Status st = limits::CheckRange(field, value, limit, reason);
    if (!st.ok()) return Status::InvalidArgument(source + ": " + st.message());
  }
  PW_RETURN_IF_ERROR(rd.Get(doc, "", "stage_to_rank", &v));
  if (!v->is_array()) return rd.Error("stage_to_rank", "expected an array");
  if (static_cast<int64_t>(v->size()) != plan.num_stages)
    return rd.Error("stage_to_rank",
                    "has " + std::to_string(v->size()) + " entries, num_stages is " + std::to_string(plan.num_stages));
  for (size_t i = 0; i < v->size(); ++i) {
    int r = 0;
    PW_RETURN_IF_ERROR(rd.Value((*v)[i], "stage_to_rank[" + std::to_string(i) + "]", &r));
    plan.stage_to_rank.push_back(r);
  }
  PW_RETURN_IF_ERROR(rd.Get(doc, "", "stages", &v));
  if (!v->is_array() || static_cast<int64_t>(v->size()) != plan.num_stages)
    return rd.Error("stages", "expected an array of num_stages = " + std::to_string(plan.num_stages) + " objects");
  for (size_t i = 0; i < v->size(); ++i) {
    const json& js = (*v)[i];
    std::string path = "stages[" + std::to_string(i) + "]";
    PlanStage st;
    PW_RETURN_IF_ERROR(rd.Number(js, path, "index", &st.index));
    PW_RETURN_IF_ERROR(rd.Number(js, path, "rank", &st.rank));
    if (st.index != static_cast<int>(i)) return rd.Error(path + ".index", "expected " + std::to_string(i));
    if (st.rank != plan.stage_to_rank[i])
      return rd.Error(path + ".rank", "is " + std::to_string(st.rank) + " but stage_to_rank says " +
                                          std::to_string(plan.stage_to_rank[i]));
    const json* layers;
    PW_RETURN_IF_ERROR(rd.Get(js, path, "layers", &layers));
    if (!layers->is_array() || layers->size() != 2) return rd.Error(path + ".layers", "expected [first, last)");
    PW_RETURN_IF_ERROR(rd.Value((*layers)[0], path + ".layers[0]", &st.layer_begin));
    PW_RETURN_IF_ERROR(rd.Value((*layers)[1], path + ".layers[1]", &st.layer_end));
    if (st.layer_end <= st.layer_begin) return rd.Error(path + ".layers", "a stage may not be empty");
    if (i > 0 && st.layer_begin != plan.stages.back().layer_end)
      return rd.Error(path + ".layers", "must start at " + std::to_string(plan.stages.back().layer_end) +
                                            " where stage " + std::to_string(i - 1) + " ends");
    if (i == 0 && st.layer_begin != 0) return rd.Error(path + ".layers", "the first stage must start at layer 0");
    const json* cost;
    PW_RETURN_IF_ERROR(rd.Get(js, path, "cost_s", &cost));
    PW_RETURN_IF_ERROR(rd.NonNegative(*cost, path + ".cost_s", "F", &st.cost.f));
    PW_RETURN_IF_ERROR(rd.NonNegative(*cost, path + ".cost_s", "I", &st.cost.i));
    PW_RETURN_IF_ERROR(rd.NonNegative(*cost, path + ".cost_s", "W", &st.cost.w));
    st.cost.b = -1;
    if (cost->contains("B")) PW_RETURN_IF_ERROR(rd.NonNegative(*cost, path + ".cost_s", "B", &st.cost.b));
    if (cost->contains("REDUCE_GRAD"))
      PW_RETURN_IF_ERROR(rd.NonNegative(*cost, path + ".cost_s", "REDUCE_GRAD", &st.cost.reduce_grad));
    if (cost->contains("OPTIMIZER"))
      PW_RETURN_IF_ERROR(rd.NonNegative(*cost, path + ".cost_s", "OPTIMIZER", &st.cost.optimizer));
    st.cost.overlap_fb = -1;
    if (cost->contains("F&B")) PW_RETURN_IF_ERROR(rd.NonNegative(*cost, path + ".cost_s", "F&B", &st.cost.overlap_fb));
    const json* mem;
    std::string mpath = path + ".memory_bytes";
    PW_RETURN_IF_ERROR(rd.Get(js, path, "memory_bytes", &mem));
    PW_RETURN_IF_ERROR(rd.NonNegative(*mem, mpath, "static", &st.memory.static_bytes));
    PW_RETURN_IF_ERROR(rd.NonNegative(*mem, mpath, "activation", &st.memory.activation));
    PW_RETURN_IF_ERROR(rd.NonNegative(*mem, mpath, "wstash", &st.memory.wstash));
    PW_RETURN_IF_ERROR(rd.NonNegative(*mem, mpath, "send_forward", &st.memory.send_forward));
    PW_RETURN_IF_ERROR(rd.NonNegative(*mem, mpath, "send_backward", &st.memory.send_backward));
    if (mem->contains("reduce_buffer"))
      PW_RETURN_IF_ERROR(rd.NonNegative(*mem, mpath, "reduce_buffer", &st.memory.reduce_buffer));
    plan.stages.push_back(st);
  }
  PW_RETURN_IF_ERROR(rd.Get(doc, "", "comm", &v));
  PW_RETURN_IF_ERROR(rd.NonNegative(*v, "comm", "latency_s", &plan.comm.latency_s));
  PW_RETURN_IF_ERROR(rd.NonNegative(*v, "comm", "bandwidth_bytes_per_s", &plan.comm.bandwidth_bytes_per_s));
  PW_RETURN_IF_ERROR(rd.Get(doc, "", "memory_limit_bytes", &v));
  if (!v->is_null()) {
    int64_t limit = 0;
    PW_RETURN_IF_ERROR(rd.Value(*v, "memory_limit_bytes", &limit));
    plan.memory_limit_bytes = limit;
  }
  PW_RETURN_IF_ERROR(rd.Get(doc, "", "ranks", &v));
  if (!v->is_array() || static_cast<int64_t>(v->size()) != plan.pp_size)
    return rd.Error("ranks", "expected an array of pp_size = " + std::to_string(plan.pp_size) + " objects");
  for (size_t r = 0; r < v->size(); ++r) {
    std::string path = "ranks[" + std::to_string(r) + "]";
    int rank = -1;
    PW_RETURN_IF_ERROR(rd.Number((*v)[r], path, "rank", &rank));
    if (rank != static_cast<int>(r)) return rd.Error(path + ".rank", "expected " + std::to_string(r));
    const json* actions;
    PW_RETURN_IF_ERROR(rd.Get((*v)[r], path, "actions", &actions));
    if (!actions->is_array()) return rd.Error(path + ".actions", "expected an array of action strings");
    std::vector<Action> list;
    list.reserve(actions->size());
    for (size_t i = 0; i < actions->size(); ++i) {
      std::string apath = path + ".actions[" + std::to_string(i) + "]";
      if (!(*actions)[i].is_string()) return rd.Error(apath, "expected a string");
      auto a = ParseAction((*actions)[i].get<std::string>());
      if (!a.ok()) return rd.Error(apath, a.status().message());
      list.push_back(*a);
    }
    plan.ranks.push_back(std::move(list));
  }
  PW_RETURN_IF_ERROR(rd.Get(doc, "", "predicted", &v));
  PW_RETURN_IF_ERROR(rd.Number(*v, "predicted", "makespan_s", &plan.predicted.makespan_s));
  PW_RETURN_IF_ERROR(rd.Number(*v, "predicted", "steady_step_s", &plan.predicted.steady_step_s));
  PW_RETURN_IF_ERROR(rd.Number(*v, "predicted", "bubble_ratio", &plan.predicted.bubble_ratio));
  const json* per_rank;
  PW_RETURN_IF_ERROR(rd.Get(*v, "predicted", "per_rank", &per_rank));
  if (!per_rank->is_array()) return rd.Error("predicted.per_rank", "expected an array");
  for (size_t r = 0; r < per_rank->size(); ++r) {
    std::string path = "predicted.per_rank[" + std::to_string(r) + "]";
    PlanRankPrediction pr;
    PW_RETURN_IF_ERROR(rd.Number((*per_rank)[r], path, "rank", &pr.rank));
    PW_RETURN_IF_ERROR(rd.Number((*per_rank)[r], path, "busy_s", &pr.busy_s));
    PW_RETURN_IF_ERROR(rd.Number((*per_rank)[r], path, "peak_memory_bytes", &pr.peak_memory_bytes));
    plan.predicted.per_rank.push_back(pr);
  }
  PW_RETURN_IF_ERROR(ParseModelSections(rd, doc, version, &plan));
  if (plan.model && plan.tp_size > 1) {
    Status tp = CheckTensorParallel(*plan.model, plan.tp_size, plan.sequence_parallel,
                                    plan.training ? plan.training->seq_length : 0);
    if (!tp.ok()) return rd.Error("tp_size", tp.message());
  }
  auto device = doc.find("device");
  if (device != doc.end() && !device->is_null()) {
    auto parsed = ParseDeviceSpec(*device, rd.Where("device"));
    if (!parsed.ok()) return parsed.status();
    plan.device = *parsed;
  }
  auto planner = doc.find("planner");
  if (planner != doc.end()) plan.planner = *planner;
  for (auto it = doc.begin(); it != doc.end(); ++it)
    if (!IsKnown(it.key())) plan.extra[it.key()] = it.value();
  Status shape = CheckProgramShape(PlanProgram(plan));
  if (!shape.ok()) return rd.Error("ranks", shape.message());
  return plan;
}

StatusOr<Plan> ReadPlanFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("cannot open plan file '" + path + "'");
  std::stringstream ss;
  ss << in.rdbuf();
  return ParsePlan(ss.str(), path);
}

std::string PlanToJson(const Plan& plan) {
  // ordered_json keeps insertion order: docs/PLAN_FORMAT.md's order, then
  // "planner", then the extra fields sorted by key.
  ojson doc;
  doc["format"] = kPlanFormat;
  doc["version"] = kPlanVersion;
  doc["schedule"] = plan.schedule;
  doc["pp_size"] = plan.pp_size;
  doc["dp_size"] = plan.dp_size;
  doc["tp_size"] = plan.tp_size;
  doc["sequence_parallel"] = plan.sequence_parallel;
  doc["num_stages"] = plan.num_stages;
  doc["num_microbatches"] = plan.num_microbatches;
  doc["stage_to_rank"] = plan.stage_to_rank;
  if (plan.model) doc["model"] = ModelToJson(*plan.model);
  if (!plan.layers.empty()) {
    doc["layers"] = ojson::array();
    for (const PlanLayer& l : plan.layers)
      doc["layers"].push_back(ojson{{"name", l.name}, {"kind", LayerKindName(l.kind)}, {"params", l.params}});
  }
  if (plan.training) doc["training"] = TrainingToJson(*plan.training);
  if (plan.device) doc["device"] = ojson::parse(DeviceSpecToJson(*plan.device).dump());
  doc["stages"] = ojson::array();
  for (const PlanStage& s : plan.stages) {
    ojson js;
    js["index"] = s.index;
    js["rank"] = s.rank;
    js["layers"] = {s.layer_begin, s.layer_end};
    js["cost_s"]["F"] = s.cost.f;
    js["cost_s"]["I"] = s.cost.i;
    js["cost_s"]["W"] = s.cost.w;
    if (s.cost.b >= 0) js["cost_s"]["B"] = s.cost.b;
    if (plan.dp_size > 1) js["cost_s"]["REDUCE_GRAD"] = s.cost.reduce_grad;
    if (s.cost.overlap_fb >= 0) js["cost_s"]["F&B"] = s.cost.overlap_fb;
    if (s.cost.optimizer > 0) js["cost_s"]["OPTIMIZER"] = s.cost.optimizer;
    js["memory_bytes"]["static"] = s.memory.static_bytes;
    js["memory_bytes"]["activation"] = s.memory.activation;
    js["memory_bytes"]["wstash"] = s.memory.wstash;
    js["memory_bytes"]["send_forward"] = s.memory.send_forward;
    js["memory_bytes"]["send_backward"] = s.memory.send_backward;
    if (plan.dp_size > 1) js["memory_bytes"]["reduce_buffer"] = s.memory.reduce_buffer;
    doc["stages"].push_back(js);
  }
  doc["comm"]["latency_s"] = plan.comm.latency_s;
  doc["comm"]["bandwidth_bytes_per_s"] = plan.comm.bandwidth_bytes_per_s;
  if (plan.memory_limit_bytes)
    doc["memory_limit_bytes"] = *plan.memory_limit_bytes;
  else
    doc["memory_limit_bytes"] = nullptr;
  // The action lists (most of a large plan's bytes) are written straight into
  // the text below, in dump(2)'s exact layout, instead of through the tree.
  doc["ranks"] = kRanksPlaceholder;
  doc["predicted"]["makespan_s"] = plan.predicted.makespan_s;
  doc["predicted"]["steady_step_s"] = plan.predicted.steady_step_s;
  doc["predicted"]["bubble_ratio"] = plan.predicted.bubble_ratio;
  doc["predicted"]["per_rank"] = ojson::array();
  for (const PlanRankPrediction& pr : plan.predicted.per_rank) {
    ojson j;
    j["rank"] = pr.rank;
    j["busy_s"] = pr.busy_s;
    j["peak_memory_bytes"] = pr.peak_memory_bytes;
    doc["predicted"]["per_rank"].push_back(j);
  }
  if (!plan.planner.is_null()) doc["planner"] = ojson::parse(plan.planner.dump());
  // plan.extra is an (ordered-by-key) nlohmann::json object.
  for (auto it = plan.extra.begin(); it != plan.extra.end(); ++it) doc[it.key()] = ojson::parse(it.value().dump());
  const std::string tree = doc.dump(2);
  const std::string marker = "\n  \"ranks\": \"" + std::string(kRanksPlaceholder) + "\"";
  const size_t at = tree.find(marker);
  std::string text = tree.substr(0, at) + "\n  \"ranks\": ";
  text += RanksText(plan.ranks);
  text.append(tree, at + marker.size(), std::string::npos);
  text += "\n";
  return text;
}

}  // namespace pw
