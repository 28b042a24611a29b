#include "executor/checkpoint/checkpoint.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "base/file_io.h"
#include "base/hash.h"
#include "base/json_text.h"
#include "models/spec/hf_weights.h"
#include "plan/plan.h"

namespace pw::exec {

std::string CheckpointStepDir(const std::string& root, int steps_done) {
  char name[32];
  std::snprintf(name, sizeof(name), "step_%06d", steps_done);
  return root + "/" + name;
}

std::string CheckpointLayerFileName(const std::string& layer) { return layer + ".safetensors"; }

std::string CheckpointShardFileName(const std::string& layer, int shard, int shards) {
  return layer + ".adamw_shard_" + std::to_string(shard) + "_of_" + std::to_string(shards) + ".safetensors";
}

StatusOr<std::string> CheckpointFileDigest(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return Status::NotFound("checkpoint file " + path + " cannot be read");
  uint64_t h = kFnv1aOffsetBasis;
  std::vector<char> buf(1 << 20);  // a multiple of 8: only the last chunk has a tail
  while (in) {
    in.read(buf.data(), static_cast<std::streamsize>(buf.size()));
    h = Fnv1a64Words(buf.data(), static_cast<size_t>(in.gcount()), h);
  }
  return HashHex(h);
}

nlohmann::json CheckpointModelJson(const ModelConfig& model) { return HfConfigJson(model); }

Status WriteManifest(const std::string& step_dir, const CheckpointManifest& m) {
  nlohmann::json files = nlohmann::json::array();
  for (const CheckpointFile& f : m.files) {
    files.push_back({{"name", f.name}, {"layer", f.layer}, {"bytes", f.bytes}, {"digest", f.digest}});
    if (f.shard >= 0) files.back()["shard"] = f.shard;
  }
  nlohmann::json j = {
      {"format", kCheckpointFormat},
      {"version", kCheckpointVersion},
      {"steps_done", m.steps_done},
      {"seed", m.seed},
      {"dtype", m.dtype},
      {"data_position", m.data_position},
      {"batch_rows", m.batch_rows},
      {"seq_length", m.seq_length},
      {"model", m.model},
      {"dp_size", m.dp_size},
      {"optimizer_shards", m.optimizer_shards},
      {"written_by",
       {{"plan_hash", m.plan_hash}, {"schedule", m.schedule}, {"pp_size", m.pp_size}, {"tp_size", m.tp_size}}},
      {"files", files}};
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
  // A cut-off or corrupt file is named as such (the one JSON reader); valid
  // JSON of another shape is "not a JSON object".
  PW_ASSIGN_OR_RETURN(nlohmann::json j, ParseJsonText(ss.str(), path));
  if (!j.is_object()) return Status::InvalidArgument(path + ": not a JSON object");
  CheckpointManifest m;
  std::string field;
  try {
    field = "format";
    if (!j.contains("format") || !j["format"].is_string() || j["format"] != kCheckpointFormat)
      return Status::InvalidArgument(path + ": field 'format' is not \"" + std::string(kCheckpointFormat) + "\"");
    field = "version";
    const int version = j.at("version").get<int>();
    if (version == 1)
      return Status::InvalidArgument(path +
                                     ": field 'version' is 1: a checkpoint of per-rank files (rank_<r>.pt) "
                                     "from an older pipewright, readable only by it; this one reads version " +
                                     std::to_string(kCheckpointVersion) + " (per-layer files)");
    if (version != kCheckpointVersion)
      return Status::InvalidArgument(path + ": field 'version' is " + std::to_string(version) +
                                     ", this pipewright reads " + std::to_string(kCheckpointVersion));
    field = "steps_done";
    m.steps_done = j.at(field).get<int>();
    field = "seed";
    m.seed = j.at(field).get<uint64_t>();
    field = "dtype";
    m.dtype = j.at(field).get<std::string>();
    if (m.dtype != "float32" && m.dtype != "float64")
      return Status::InvalidArgument(path + ": field 'dtype' is \"" + m.dtype + "\" (float32 or float64)");
    field = "data_position";
    m.data_position = j.at(field).get<int64_t>();
    field = "batch_rows";
    m.batch_rows = j.at(field).get<int>();
    field = "seq_length";
    m.seq_length = j.at(field).get<int>();
    field = "model";
    m.model = j.at(field);
    if (!m.model.is_object()) return Status::InvalidArgument(path + ": field 'model' is not an object");
    field = "dp_size";
    m.dp_size = j.value(field, 1);
    field = "optimizer_shards";
    m.optimizer_shards = j.value(field, 1);
    if (m.optimizer_shards < 1)
      return Status::InvalidArgument(path + ": field 'optimizer_shards' is " + std::to_string(m.optimizer_shards) +
                                     " (1, or the ZeRO-1 data-parallel size)");
    field = "written_by";
    if (j.contains(field)) {
      const nlohmann::json& w = j[field];
      m.plan_hash = w.value("plan_hash", "");
      m.schedule = w.value("schedule", "");
      m.pp_size = w.value("pp_size", 0);
      m.tp_size = w.value("tp_size", 1);
    }
    field = "files";
    for (const nlohmann::json& f : j.at(field)) {
      CheckpointFile cf;
      cf.name = f.at("name").get<std::string>();
      cf.layer = f.at("layer").get<std::string>();
      cf.bytes = f.at("bytes").get<int64_t>();
      cf.digest = f.at("digest").get<std::string>();
      cf.shard = f.value("shard", -1);
      if (cf.shard < -1 || cf.shard >= m.optimizer_shards || (cf.shard >= 0 && m.optimizer_shards == 1))
        return Status::InvalidArgument(path + ": field 'files': '" + cf.name + "' has shard " +
                                       std::to_string(cf.shard) + ", optimizer_shards is " +
                                       std::to_string(m.optimizer_shards));
      if (cf.name.empty() || cf.name.find('/') != std::string::npos || cf.name == "." || cf.name == "..")
        return Status::InvalidArgument(path + ": field 'files': '" + cf.name + "' is not a plain file name");
      m.files.push_back(cf);
    }
  } catch (const nlohmann::json::exception& e) {
    return Status::InvalidArgument(path + ": field '" + field + "': " + e.what());
  }
  return m;
}

StatusOr<ModelConfig> ManifestModel(const CheckpointManifest& manifest, const std::string& step_dir) {
  return ParseModelConfig(manifest.model, step_dir + "/manifest.json (model)");
}

StatusOr<std::string> ResolveCheckpointDir(const std::string& path, const std::string& flag) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (fs::exists(path + "/manifest.json", ec)) return path;
  if (!fs::is_directory(path, ec)) return Status::NotFound(flag + " " + path + ": no such directory");
  std::string best;
  for (const auto& entry : fs::directory_iterator(path, ec)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("step_", 0) != 0 || !fs::exists(entry.path() / "manifest.json", ec)) continue;
    if (name > best) best = name;  // zero-padded: lexicographic = numeric
  }
  if (best.empty())
    return Status::NotFound(flag + " " + path + ": no complete checkpoint (no manifest.json, no step_*/manifest.json)");
  return path + "/" + best;
}

Status CheckResumable(const CheckpointManifest& m, const std::string& step_dir, const ModelConfig& model, uint64_t seed,
                      const std::string& dtype, int batch_rows, int seq_length) {
  const std::string where = "--resume " + step_dir + ": ";
  PW_ASSIGN_OR_RETURN(ModelConfig saved, ManifestModel(m, step_dir));
  // CheckSameModel names the first differing field by its HF name.
  Status same = CheckSameModel(model, saved, "checkpoint model (manifest.json)");
  if (!same.ok())
    return Status::InvalidArgument(where + same.message() + "; a checkpoint resumes only the model it holds");
  if (m.dtype != dtype)
    return Status::InvalidArgument(where + "field 'dtype': the checkpoint is " + m.dtype + ", this run is --dtype " +
                                   dtype);
  if (m.seed != seed)
    return Status::InvalidArgument(where + "field 'seed': the checkpoint was written with --seed " +
                                   std::to_string(m.seed) + ", this run has --seed " + std::to_string(seed) +
                                   " (the data order differs)");
  if (m.batch_rows != batch_rows)
    return Status::InvalidArgument(
        where + "field 'batch_rows': the checkpoint's run took " + std::to_string(m.batch_rows) +
        " sequences per step, this plan's "
        "training.global_batch_size is " +
        std::to_string(batch_rows) + " (data position " + std::to_string(m.data_position) + " would not continue)");
  if (m.seq_length != seq_length)
    return Status::InvalidArgument(where + "field 'seq_length': the checkpoint's run used " +
                                   std::to_string(m.seq_length) +
                                   " tokens per sequence, this plan's "
                                   "training.seq_length is " +
                                   std::to_string(seq_length));
  return Status::Ok();
}

StatusOr<CheckpointFile> ManifestFileOf(const CheckpointManifest& m, const std::string& step_dir,
                                        const std::string& layer) {
  for (const CheckpointFile& f : m.files)
    if (f.layer == layer && f.shard < 0) return f;
  return Status::InvalidArgument(step_dir + "/manifest.json: no file for layer '" + layer + "'");
}

StatusOr<std::vector<CheckpointFile>> ManifestShardFilesOf(const CheckpointManifest& m, const std::string& step_dir,
                                                           const std::string& layer) {
  std::vector<CheckpointFile> out;
  if (m.optimizer_shards <= 1) return out;
  for (int d = 0; d < m.optimizer_shards; ++d) {
    const CheckpointFile* found = nullptr;
    for (const CheckpointFile& f : m.files)
      if (f.layer == layer && f.shard == d) found = &f;
    if (found == nullptr)
      return Status::InvalidArgument(step_dir + "/manifest.json: no ZeRO-1 optimizer shard " + std::to_string(d) +
                                     " of " + std::to_string(m.optimizer_shards) + " for layer '" + layer + "' (" +
                                     CheckpointShardFileName(layer, d, m.optimizer_shards) + ")");
    out.push_back(*found);
  }
  return out;
}

Status VerifyCheckpointFile(const std::string& step_dir, const CheckpointFile& f) {
  namespace fs = std::filesystem;
  const std::string path = step_dir + "/" + f.name;
  std::error_code ec;
  if (!fs::exists(path, ec))
    return Status::NotFound("checkpoint file " + path + " is missing (listed in the manifest)");
  const auto size = fs::file_size(path, ec);
  if (ec) return Status::InvalidArgument("checkpoint file " + path + ": " + ec.message());
  if (static_cast<int64_t>(size) != f.bytes)
    return Status::InvalidArgument("checkpoint file " + path + " is " +
                                   (static_cast<int64_t>(size) < f.bytes ? "truncated" : "of the wrong size") + ": " +
                                   std::to_string(size) + " bytes, the manifest says " + std::to_string(f.bytes));
  PW_ASSIGN_OR_RETURN(std::string digest, CheckpointFileDigest(path));
  if (digest != f.digest)
    return Status::InvalidArgument("checkpoint file " + path + " is corrupt: its digest is " + digest +
                                   ", the manifest says " + f.digest);
  return Status::Ok();
}

}  // namespace pw::exec
