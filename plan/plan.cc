#include "plan/plan.h"

#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <unistd.h>

namespace pw {

namespace {

using nlohmann::json;

// Fields defined by PLAN_FORMAT.md; everything else goes to Plan::extra.
const char* const kKnownFields[] = {"format",      "version", "schedule", "pp_size",            "num_stages",
                                    "num_microbatches", "stage_to_rank", "stages", "comm", "memory_limit_bytes",
                                    "ranks",       "predicted"};

bool IsKnown(const std::string& key) {
  for (const char* k : kKnownFields)
    if (key == k) return true;
  return false;
}

// Field access with errors that name the path, e.g. "stages[2].cost_s.F".
class Reader {
 public:
  explicit Reader(std::string source) : source_(std::move(source)) {}
  Status Error(const std::string& path, const std::string& why) const {
    return Status::InvalidArgument(source_ + ": " + path + ": " + why);
  }
  Status Get(const json& obj, const std::string& path, const char* key, const json** out) const {
    if (!obj.is_object()) return Error(path, "expected an object");
    auto it = obj.find(key);
    if (it == obj.end()) return Error(path.empty() ? key : path + "." + key, "field is missing");
    *out = &*it;
    return Status::Ok();
  }
  template <typename T>
  Status Number(const json& obj, const std::string& path, const char* key, T* out) const {
    const json* v;
    PW_RETURN_IF_ERROR(Get(obj, path, key, &v));
    std::string p = path.empty() ? key : path + "." + key;
    if constexpr (std::is_integral_v<T>) {
      if (!v->is_number_integer()) return Error(p, "expected an integer, got " + v->dump());
    } else {
      if (!v->is_number()) return Error(p, "expected a number, got " + v->dump());
    }
    *out = v->get<T>();
    return Status::Ok();
  }
  // A finite number >= 0 (seconds, bytes per second): negative or
  // non-finite costs would make the simulation meaningless.
  template <typename T>
  Status NonNegative(const json& obj, const std::string& path, const char* key, T* out) const {
    PW_RETURN_IF_ERROR(Number(obj, path, key, out));
    const double x = static_cast<double>(*out);
    if (!std::isfinite(x) || x < 0)
      return Error(path.empty() ? key : path + "." + key, "must be a finite number >= 0, got " + obj.at(key).dump());
    return Status::Ok();
  }
  const std::string& source() const { return source_; }

 private:
  std::string source_;
};

}  // namespace

Program PlanProgram(const Plan& plan) {
  Program p;
  p.pp_size = plan.pp_size;
  p.num_stages = plan.num_stages;
  p.num_microbatches = plan.num_microbatches;
  p.stage_to_rank = plan.stage_to_rank;
  p.ranks = plan.ranks;
  return p;
}

StageCosts PlanCosts(const Plan& plan) {
  StageCosts c;
  for (const PlanStage& s : plan.stages) {
    c.stages.push_back(s.cost);
    c.memory.push_back(s.memory);
  }
  c.comm = plan.comm;
  return c;
}

Plan MakePlan(const std::string& schedule, const Program& lowered, const StageCosts& costs, const SimResult& sim,
              std::optional<int64_t> memory_limit_bytes) {
  Plan plan;
  plan.schedule = schedule;
  plan.pp_size = lowered.pp_size;
  plan.num_stages = lowered.num_stages;
  plan.num_microbatches = lowered.num_microbatches;
  plan.stage_to_rank = lowered.stage_to_rank;
  for (int s = 0; s < lowered.num_stages; ++s) {
    PlanStage st;
    st.index = s;
    st.rank = lowered.stage_to_rank[s];
    st.layer_begin = s;
    st.layer_end = s + 1;
    st.cost = costs.stages[s];
    st.memory = costs.memory[s];
    plan.stages.push_back(st);
  }
  plan.comm = costs.comm;
  plan.memory_limit_bytes = memory_limit_bytes;
  plan.ranks = lowered.ranks;
  plan.predicted.makespan_s = sim.makespan_s;
  plan.predicted.steady_step_s = sim.steady_step_s;
  plan.predicted.bubble_ratio = sim.bubble_ratio;
  for (int r = 0; r < lowered.pp_size; ++r)
    plan.predicted.per_rank.push_back({r, sim.per_rank[r].busy_s, sim.per_rank[r].peak_memory_bytes});
  return plan;
}

StatusOr<Plan> ParsePlan(const std::string& text, const std::string& source) {
  Reader rd(source);
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::parse_error& e) {
    return Status::InvalidArgument(source + ": not valid JSON (truncated or corrupt file?): " + e.what());
  }
  if (!doc.is_object()) return rd.Error("(top level)", "expected a JSON object");
  Plan plan;
  const json* v;
  PW_RETURN_IF_ERROR(rd.Get(doc, "", "format", &v));
  if (*v != kPlanFormat) return rd.Error("format", "expected \"pipewright-plan\", got " + v->dump());
  int version = 0;
  PW_RETURN_IF_ERROR(rd.Number(doc, "", "version", &version));
  if (version != kPlanVersion)
    return rd.Error("version", "this pipewright reads version " + std::to_string(kPlanVersion) + ", the file is " +
                                   std::to_string(version));
  PW_RETURN_IF_ERROR(rd.Get(doc, "", "schedule", &v));
  if (!v->is_string()) return rd.Error("schedule", "expected a string");
  plan.schedule = v->get<std::string>();
  PW_RETURN_IF_ERROR(rd.Number(doc, "", "pp_size", &plan.pp_size));
  PW_RETURN_IF_ERROR(rd.Number(doc, "", "num_stages", &plan.num_stages));
  PW_RETURN_IF_ERROR(rd.Number(doc, "", "num_microbatches", &plan.num_microbatches));
  if (plan.pp_size < 1) return rd.Error("pp_size", "must be >= 1");
  if (plan.num_stages < 1) return rd.Error("num_stages", "must be >= 1");
  if (plan.num_microbatches < 1) return rd.Error("num_microbatches", "must be >= 1");
  PW_RETURN_IF_ERROR(rd.Get(doc, "", "stage_to_rank", &v));
  if (!v->is_array()) return rd.Error("stage_to_rank", "expected an array");
  for (size_t i = 0; i < v->size(); ++i) {
    if (!(*v)[i].is_number_integer()) return rd.Error("stage_to_rank[" + std::to_string(i) + "]", "expected an integer");
    plan.stage_to_rank.push_back((*v)[i].get<int>());
  }
  if (static_cast<int>(plan.stage_to_rank.size()) != plan.num_stages)
    return rd.Error("stage_to_rank", "has " + std::to_string(plan.stage_to_rank.size()) + " entries, num_stages is " +
                                         std::to_string(plan.num_stages));
  PW_RETURN_IF_ERROR(rd.Get(doc, "", "stages", &v));
  if (!v->is_array() || static_cast<int>(v->size()) != plan.num_stages)
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
    if (!layers->is_array() || layers->size() != 2 || !(*layers)[0].is_number_integer() ||
        !(*layers)[1].is_number_integer())
      return rd.Error(path + ".layers", "expected [first, last)");
    st.layer_begin = (*layers)[0].get<int>();
    st.layer_end = (*layers)[1].get<int>();
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
    const json* mem;
    std::string mpath = path + ".memory_bytes";
    PW_RETURN_IF_ERROR(rd.Get(js, path, "memory_bytes", &mem));
    PW_RETURN_IF_ERROR(rd.NonNegative(*mem, mpath, "static", &st.memory.static_bytes));
    PW_RETURN_IF_ERROR(rd.NonNegative(*mem, mpath, "activation", &st.memory.activation));
    PW_RETURN_IF_ERROR(rd.NonNegative(*mem, mpath, "wstash", &st.memory.wstash));
    PW_RETURN_IF_ERROR(rd.NonNegative(*mem, mpath, "send_forward", &st.memory.send_forward));
    PW_RETURN_IF_ERROR(rd.NonNegative(*mem, mpath, "send_backward", &st.memory.send_backward));
    plan.stages.push_back(st);
  }
  PW_RETURN_IF_ERROR(rd.Get(doc, "", "comm", &v));
  PW_RETURN_IF_ERROR(rd.NonNegative(*v, "comm", "latency_s", &plan.comm.latency_s));
  PW_RETURN_IF_ERROR(rd.NonNegative(*v, "comm", "bandwidth_bytes_per_s", &plan.comm.bandwidth_bytes_per_s));
  PW_RETURN_IF_ERROR(rd.Get(doc, "", "memory_limit_bytes", &v));
  if (!v->is_null()) {
    if (!v->is_number_integer()) return rd.Error("memory_limit_bytes", "expected an integer or null");
    plan.memory_limit_bytes = v->get<int64_t>();
  }
  PW_RETURN_IF_ERROR(rd.Get(doc, "", "ranks", &v));
  if (!v->is_array() || static_cast<int>(v->size()) != plan.pp_size)
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
  // nlohmann's ordered_json keeps insertion order: required fields first, in
  // PLAN_FORMAT.md's order, then the extra fields sorted by key.
  nlohmann::ordered_json doc;
  doc["format"] = kPlanFormat;
  doc["version"] = kPlanVersion;
  doc["schedule"] = plan.schedule;
  doc["pp_size"] = plan.pp_size;
  doc["num_stages"] = plan.num_stages;
  doc["num_microbatches"] = plan.num_microbatches;
  doc["stage_to_rank"] = plan.stage_to_rank;
  doc["stages"] = nlohmann::ordered_json::array();
  for (const PlanStage& s : plan.stages) {
    nlohmann::ordered_json js;
    js["index"] = s.index;
    js["rank"] = s.rank;
    js["layers"] = {s.layer_begin, s.layer_end};
    js["cost_s"]["F"] = s.cost.f;
    js["cost_s"]["I"] = s.cost.i;
    js["cost_s"]["W"] = s.cost.w;
    if (s.cost.b >= 0) js["cost_s"]["B"] = s.cost.b;
    js["memory_bytes"]["static"] = s.memory.static_bytes;
    js["memory_bytes"]["activation"] = s.memory.activation;
    js["memory_bytes"]["wstash"] = s.memory.wstash;
    js["memory_bytes"]["send_forward"] = s.memory.send_forward;
    js["memory_bytes"]["send_backward"] = s.memory.send_backward;
    doc["stages"].push_back(js);
  }
  doc["comm"]["latency_s"] = plan.comm.latency_s;
  doc["comm"]["bandwidth_bytes_per_s"] = plan.comm.bandwidth_bytes_per_s;
  if (plan.memory_limit_bytes) doc["memory_limit_bytes"] = *plan.memory_limit_bytes;
  else doc["memory_limit_bytes"] = nullptr;
  doc["ranks"] = nlohmann::ordered_json::array();
  for (int r = 0; r < static_cast<int>(plan.ranks.size()); ++r) {
    nlohmann::ordered_json jr;
    jr["rank"] = r;
    jr["actions"] = nlohmann::ordered_json::array();
    for (const Action& a : plan.ranks[r]) jr["actions"].push_back(a.ToString());
    doc["ranks"].push_back(jr);
  }
  doc["predicted"]["makespan_s"] = plan.predicted.makespan_s;
  doc["predicted"]["steady_step_s"] = plan.predicted.steady_step_s;
  doc["predicted"]["bubble_ratio"] = plan.predicted.bubble_ratio;
  doc["predicted"]["per_rank"] = nlohmann::ordered_json::array();
  for (const PlanRankPrediction& pr : plan.predicted.per_rank) {
    nlohmann::ordered_json j;
    j["rank"] = pr.rank;
    j["busy_s"] = pr.busy_s;
    j["peak_memory_bytes"] = pr.peak_memory_bytes;
    doc["predicted"]["per_rank"].push_back(j);
  }
  // plan.extra is an (ordered-by-key) nlohmann::json object.
  for (auto it = plan.extra.begin(); it != plan.extra.end(); ++it)
    doc[it.key()] = nlohmann::ordered_json::parse(it.value().dump());
  std::string text = doc.dump(2);
  text += "\n";
  return text;
}

Status WriteFileAtomic(const std::string& path, const std::string& text) {
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) return Status::InvalidArgument("cannot write '" + path + "' (cannot create '" + tmp + "')");
    out << text;
    out.flush();
    if (!out) {
      std::remove(tmp.c_str());
      return Status::InvalidArgument("cannot write '" + path + "' (write to '" + tmp + "' failed)");
    }
  }
  if (std::rename(tmp.c_str(), path.c_str()) != 0) {
    std::remove(tmp.c_str());
    return Status::InvalidArgument("cannot write '" + path + "' (rename from '" + tmp + "' failed)");
  }
  return Status::Ok();
}

std::string PlanHash(const Plan& plan) {
  std::string text = PlanToJson(plan);
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : text) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

}  // namespace pw
