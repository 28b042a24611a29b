#include "executor/hf_io.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "executor/hf_load.h"
#include "executor/preflight.h"
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
                        const std::vector<std::pair<std::string, torch::Tensor>>& params) {
  struct Found {
    const safetensors::File* file;
    std::string name;
    bool transpose;
  };
  // Find and check everything first, then copy.
  std::vector<Found> found;
  for (const auto& [ours, p] : params) {
    PW_ASSIGN_OR_RETURN(HfTensorName hf, HfNameOf(family, ours));
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
    std::vector<int64_t> want = p.sizes().vec();
    if (hf.transpose) std::swap(want[0], want[1]);
    if (info->shape != want)
      return Status::InvalidArgument(file->path() + ": tensor '" + name + "' has shape " +
                                     ShapeText(info->shape) + " but the plan's model needs " + ShapeText(want) +
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
    p.copy_(t);
  }
  return Status::Ok();
}

StatusOr<ExportSummary> ExportHfModel(const Plan& plan, const std::string& checkpoint_dir, const std::string& out_dir,
                                      int64_t max_shard_bytes) {
  namespace fs = std::filesystem;
  PW_ASSIGN_OR_RETURN(CheckedPlan checked, PreflightCheck(plan, plan.pp_size));
  if (!plan.model) return Status::InvalidArgument("the plan has no model section");
  if (max_shard_bytes < 1)
    return Status::InvalidArgument("--max-shard-bytes " + std::to_string(max_shard_bytes) + ": must be >= 1");
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
  // Every stage, in order, as run --save wrote it.
  std::vector<safetensors::TensorData> tensors;
  bool fp64 = false;
  ExportSummary summary;
  try {
    for (const PlanStage& s : plan.stages) {
      const std::string path = checkpoint_dir + "/stage_" + std::to_string(s.index) + ".pt";
      if (!fs::exists(path)) return Status::NotFound("checkpoint file " + path + " is missing");
      const torch::Dtype dtype = plan.training && plan.training->precision == Precision::kFp64 ? torch::kDouble
                                                                                               : torch::kFloat;
      models::GptStage module(checked.model, s.layer_begin, s.layer_end, 0, dtype);
      try {
        torch::load(module, path, torch::Device(torch::kCPU));
      } catch (const c10::Error& e) {
        std::string what = e.what_without_backtrace();
        what = what.substr(0, what.find('\n'));
        return Status::InvalidArgument("checkpoint " + checkpoint_dir + " does not match the plan (stage " +
                                       std::to_string(s.index) + ": " + path + ": " + what + ")");
      }
      for (const auto& [ours, p] : module->NamedParameters()) {
        PW_ASSIGN_OR_RETURN(HfTensorName hf, HfNameOf(plan.model->family, ours));
        torch::Tensor t = p.detach().to(torch::kCPU);
        if (hf.transpose) t = t.t();
        t = t.contiguous();
        safetensors::TensorData d;
        d.name = hf.name;
        d.dtype = t.scalar_type() == torch::kDouble ? safetensors::Dtype::kF64 : safetensors::Dtype::kF32;
        if (t.scalar_type() != torch::kDouble && t.scalar_type() != torch::kFloat)
          return Status::InvalidArgument(path + ": parameter " + ours + " is " + std::string(c10::toString(t.scalar_type())) +
                                         ", not float32 or float64");
        fp64 = fp64 || t.scalar_type() == torch::kDouble;
        d.shape = t.sizes().vec();
        const auto* b = static_cast<const unsigned char*>(t.data_ptr());
        d.bytes.assign(b, b + t.numel() * t.element_size());
        summary.bytes += static_cast<int64_t>(d.bytes.size());
        tensors.push_back(std::move(d));
      }
    }
  } catch (const c10::Error& e) {
    return Status::ComputeError("loading checkpoint from " + checkpoint_dir + ": " + e.what_without_backtrace());
  }
  summary.tensors = static_cast<int>(tensors.size());
  // Write into a sibling temporary directory, then rename it into place.
  const fs::path tmp = out_path.parent_path() / (out_path.filename().string() + ".tmp-" + std::to_string(::getpid()));
  fs::remove_all(tmp, ec);
  fs::create_directory(tmp, ec);
  if (ec) return Status::Internal("cannot create " + tmp.string() + ": " + ec.message());
  Status st = [&]() -> Status {
    nlohmann::json config = HfConfigJson(*plan.model);
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
