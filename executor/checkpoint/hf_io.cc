#include "executor/checkpoint/hf_io.h"

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <fstream>

#include "executor/checkpoint/checkpoint.h"
#include "executor/checkpoint/hf_load.h"
#include "models/spec/hf_weights.h"
#include "models/torch/gpt.h"

namespace pw::exec {

namespace {

std::string ShapeText(c10::IntArrayRef s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

}  // namespace

Status LoadHfParameters(const safetensors::Checkpoint& ckpt, ModelFamily family,
                        const std::vector<std::pair<std::string, torch::Tensor>>& params, bool tied,
                        const TensorParallelShards& tp) {
  struct Found {
    const safetensors::File* file;
    std::string name;
    bool transpose;
  };
  // Find and check everything first, then copy.
  std::vector<Found> found;
  for (const auto& [ours, p] : params) {
    PW_ASSIGN_OR_RETURN(HfTensorName hf, HfNameOf(family, ours, tied));
    const safetensors::File* file = nullptr;
    std::string name;
    for (const std::string& c : hf.candidates) {
      if ((file = ckpt.FileOf(c)) != nullptr) {
        name = c;
        break;
      }
    }
    if (file == nullptr)
      return Status::InvalidArgument(ckpt.dir() + ": tensor '" + hf.name + "' is missing (parameter " + ours +
                                     " of the plan's model)");
    const safetensors::TensorInfo* info = file->Find(name);
    PW_ASSIGN_OR_RETURN(std::vector<int64_t> want, FullShapeOf(ours, p.sizes().vec(), tp));
    if (hf.transpose) std::swap(want[0], want[1]);
    if (info->shape != want)
      return Status::InvalidArgument(file->path() + ": tensor '" + name + "' has shape " + ShapeText(info->shape) +
                                     " but the plan's model needs " + ShapeText(want) +
                                     (hf.transpose ? " (Conv1D layout, (in, out))" : ""));
    found.push_back({file, name, hf.transpose});
  }
  torch::NoGradGuard no_grad;
  for (size_t i = 0; i < params.size(); ++i) {
    const torch::Tensor& p = params[i].second;
    const Found& f = found[i];
    const safetensors::TensorInfo* info = f.file->Find(f.name);
    torch::Tensor t = torch::empty(info->shape, torch::TensorOptions().dtype(p.scalar_type()));
    if (p.scalar_type() == torch::kDouble)
      PW_RETURN_IF_ERROR(f.file->Read(f.name, t.data_ptr<double>(), t.numel()));
    else if (p.scalar_type() == torch::kFloat)
      PW_RETURN_IF_ERROR(f.file->Read(f.name, t.data_ptr<float>(), t.numel()));
    else
      return Status::Internal("parameter " + params[i].first + " is neither float32 nor float64");
    if (f.transpose) t = t.t();
    if (tp.size > 1) {
      PW_ASSIGN_OR_RETURN(t, SliceFullForTp(params[i].first, t.contiguous(), tp));
    }
    p.copy_(t);
  }
  return Status::Ok();
}

StatusOr<ExportSummary> ExportHfModel(const std::string& checkpoint, const std::string& out_dir,
                                      int64_t max_shard_bytes, const Plan* plan) {
  namespace fs = std::filesystem;
  if (max_shard_bytes < 1)
    return Status::InvalidArgument("--max-shard-bytes " + std::to_string(max_shard_bytes) + ": must be >= 1");
  PW_ASSIGN_OR_RETURN(std::string step_dir, ResolveCheckpointDir(checkpoint, "--checkpoint"));
  PW_ASSIGN_OR_RETURN(CheckpointManifest manifest, ReadManifest(step_dir));
  PW_ASSIGN_OR_RETURN(ModelConfig model, ManifestModel(manifest, step_dir));
  if (plan != nullptr) {
    if (!plan->model) return Status::InvalidArgument("the plan has no model section");
    PW_RETURN_IF_ERROR(CheckSameModel(*plan->model, model, "checkpoint " + step_dir));
  }
  std::error_code ec;
  if (fs::exists(out_dir, ec)) {
    if (!fs::is_directory(out_dir, ec))
      return Status::InvalidArgument("-o " + out_dir + ": exists and is not a directory");
    if (!fs::is_empty(out_dir, ec))
      return Status::InvalidArgument("-o " + out_dir + ": exists and is not empty (export writes a new directory)");
  }
  fs::path out_path = fs::absolute(out_dir, ec).lexically_normal();
  if (!out_path.has_filename()) out_path = out_path.parent_path();  // "out/" -> "out"
  if (!out_path.has_parent_path() || !fs::is_directory(out_path.parent_path(), ec))
    return Status::InvalidArgument("-o " + out_dir + ": its parent directory does not exist");
  // Every layer file in layer order, its parameters (not the optimizer
  // state, "<name>:exp_avg...") under their HF names.
  std::vector<safetensors::TensorData> tensors;
  const bool fp64 = manifest.dtype == "float64";
  ExportSummary summary;
  for (const CheckpointFile& f : manifest.files) {
    if (f.shard >= 0) continue;  // ZeRO-1 optimizer state only
    PW_RETURN_IF_ERROR(VerifyCheckpointFile(step_dir, f));
    PW_ASSIGN_OR_RETURN(std::unique_ptr<safetensors::File> file, safetensors::File::Open(step_dir + "/" + f.name));
    for (const auto& [ours, info] : file->tensors()) {
      if (ours.find(':') != std::string::npos) continue;  // optimizer state
      // HF's tied layout: the head shares the token table, written once.
      if (model.tied && ours == "head.lm_head.weight") continue;
      PW_ASSIGN_OR_RETURN(HfTensorName hf, HfNameOf(model.family, ours));
      safetensors::TensorData d;
      d.name = hf.name;
      d.dtype = info.dtype;
      if (d.dtype != (fp64 ? safetensors::Dtype::kF64 : safetensors::Dtype::kF32))
        return Status::InvalidArgument(file->path() + ": tensor '" + ours + "' is " + safetensors::DtypeName(d.dtype) +
                                       ", the manifest says " + manifest.dtype);
      const unsigned char* src = file->Data(info);
      const size_t e = static_cast<size_t>(safetensors::DtypeBytes(info.dtype));
      d.shape = info.shape;
      d.bytes.assign(src, src + (info.end - info.begin));
      if (hf.transpose && info.shape.size() == 2) {
        // (out, in) -> (in, out), GPT-2's Conv1D layout.
        const size_t r = static_cast<size_t>(info.shape[0]), c = static_cast<size_t>(info.shape[1]);
        for (size_t i = 0; i < r; ++i)
          for (size_t j = 0; j < c; ++j) std::memcpy(&d.bytes[(j * r + i) * e], src + (i * c + j) * e, e);
        d.shape = {info.shape[1], info.shape[0]};
      }
      summary.bytes += static_cast<int64_t>(d.bytes.size());
      tensors.push_back(std::move(d));
    }
  }
  summary.tensors = static_cast<int>(tensors.size());
  // Write into a sibling temporary directory, then rename it into place.
  const fs::path tmp = out_path.parent_path() / (out_path.filename().string() + ".tmp-" + std::to_string(::getpid()));
  fs::remove_all(tmp, ec);
  fs::create_directory(tmp, ec);
  if (ec) return Status::Internal("cannot create " + tmp.string() + ": " + ec.message());
  Status st = [&]() -> Status {
    nlohmann::json config = HfConfigJson(model);
    config["torch_dtype"] = fp64 ? "float64" : "float32";
    {
      std::ofstream out(tmp / "config.json");
      out << config.dump(2) << "\n";
      if (!out) return Status::Internal("cannot write " + (tmp / "config.json").string());
    }
    PW_ASSIGN_OR_RETURN(summary.files,
                        safetensors::WriteCheckpoint(tmp.string(), tensors, max_shard_bytes,
                                                     {{"format", "pt"}, {"producer", "pipewright export"}}));
    // rename(2) replaces an empty directory.
    fs::rename(tmp, out_path, ec);
    if (ec) return Status::Internal("renaming " + tmp.string() + " to " + out_dir + ": " + ec.message());
    return Status::Ok();
  }();
  if (!st.ok()) fs::remove_all(tmp, ec);
  PW_RETURN_IF_ERROR(st);
  return summary;
}

}  // namespace pw::exec
