#include "executor/checkpoint.h"

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "plan/plan.h"

namespace pw::exec {

std::string CheckpointStepDir(const std::string& root, int steps_done) {
  char name[32];
  std::snprintf(name, sizeof(name), "step_%06d", steps_done);
  return root + "/" + name;
}

std::string CheckpointRankFile(const std::string& step_dir, int rank) {
  return step_dir + "/rank_" + std::to_string(rank) + ".pt";
}

Status WriteManifest(const std::string& step_dir, const CheckpointManifest& m) {
  nlohmann::json j = {{"format", kCheckpointFormat}, {"version", kCheckpointVersion},
                      {"plan_hash", m.plan_hash},     {"schedule", m.schedule},
                      {"pp_size", m.pp_size},         {"steps_done", m.steps_done},
                      {"seed", m.seed},               {"dtype", m.dtype},
                      {"data_position", m.data_position}, {"files", m.files}};
  Status st = WriteFileAtomic(step_dir + "/manifest.json", j.dump(1) + "\n");
  if (!st.ok()) return Status::InvalidArgument("writing " + step_dir + "/manifest.json: " + st.message());
  return Status::Ok();
}

StatusOr<CheckpointManifest> ReadManifest(const std::string& step_dir) {
  const std::string path = step_dir + "/manifest.json";
  std::ifstream in(path);
  if (!in) return Status::NotFound(path + " not found (not a complete checkpoint)");
  std::stringstream ss;
  ss << in.rdbuf();
  nlohmann::json j = nlohmann::json::parse(ss.str(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) return Status::InvalidArgument(path + ": not a JSON object");
  if (j.value("format", "") != kCheckpointFormat)
    return Status::InvalidArgument(path + ": field 'format' is not \"" + std::string(kCheckpointFormat) + "\"");
  if (j.value("version", 0) != kCheckpointVersion)
    return Status::InvalidArgument(path + ": field 'version' is not " + std::to_string(kCheckpointVersion));
  CheckpointManifest m;
  try {
    m.plan_hash = j.at("plan_hash").get<std::string>();
    m.schedule = j.value("schedule", "");
    m.pp_size = j.at("pp_size").get<int>();
    m.steps_done = j.at("steps_done").get<int>();
    m.seed = j.at("seed").get<uint64_t>();
    m.dtype = j.at("dtype").get<std::string>();
    m.data_position = j.value("data_position", int64_t{0});
    m.files = j.at("files").get<std::vector<std::string>>();
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(path + ": " + e.what());
  }
  return m;
}

StatusOr<std::string> ResolveResumeDir(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(path + "/manifest.json", ec)) return path;
  if (!fs::is_directory(path, ec)) return Status::NotFound("--resume " + path + ": no such directory");
  std::string best;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step_", 0) != 0 || !fs::exists(entry.path() / "manifest.json", ec)) continue;
    if (name > best) best = name;  // zero-padded: lexicographic = numeric
  }
  if (best.empty())
    return Status::NotFound("--resume " + path + ": no complete checkpoint (no manifest.json, no step_*/manifest.json)");
  return path + "/" + best;
}

Status CheckResumable(const CheckpointManifest& m, const std::string& step_dir, const std::string& plan_hash,
                      int pp_size, uint64_t seed, const std::string& dtype) {
  const std::string where = "--resume " + step_dir + ": ";
  if (m.plan_hash != plan_hash)
    return Status::InvalidArgument(where + "checkpoint was written by plan " + m.plan_hash + " (" + m.schedule +
                                   ", P=" + std::to_string(m.pp_size) + "), this run's plan is " + plan_hash +
                                   ": stages and optimizer state belong to another plan");
  if (m.pp_size != pp_size || static_cast<int>(m.files.size()) != pp_size)
    return Status::InvalidArgument(where + "checkpoint has " + std::to_string(m.files.size()) +
                                   " rank files, the plan has pp_size=" + std::to_string(pp_size));
  if (m.seed != seed)
    return Status::InvalidArgument(where + "checkpoint was written with --seed " + std::to_string(m.seed) +
                                   ", this run has --seed " + std::to_string(seed) + " (the data order differs)");
  if (m.dtype != dtype)
    return Status::InvalidArgument(where + "checkpoint is " + m.dtype + ", this run is --dtype " + dtype);
  return Status::Ok();
}

}  // namespace pw::exec
