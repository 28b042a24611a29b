#include "executor/checkpoint_io.h"

#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <type_traits>

#include "models/spec/safetensors.h"

namespace pw::exec {

namespace {

// The key of a parameter's entry in Optimizer::state(): LibTorch 1.13 keys
// it by the TensorImpl address printed as text (c10::guts::to_string), 2.x
// by the address itself. Templated so that only the matching branch is
// compiled.
template <class Optim>
auto StateKey(Optim& optimizer, const torch::Tensor& p) {
  using Key = typename std::decay_t<decltype(optimizer.state())>::key_type;
  if constexpr (std::is_same_v<Key, std::string>) {
    std::ostringstream os;
    os << p.unsafeGetTensorImpl();
    return Key(os.str());
  } else {
    return reinterpret_cast<Key>(p.unsafeGetTensorImpl());
  }
}

safetensors::TensorData ToData(const std::string& name, const torch::Tensor& t) {
  torch::Tensor c = t.detach().to(torch::kCPU).contiguous();
  safetensors::TensorData d;
  d.name = name;
  d.dtype = c.scalar_type() == torch::kDouble ? safetensors::Dtype::kF64 : safetensors::Dtype::kF32;
  d.shape = c.sizes().vec();
  const auto* b = static_cast<const unsigned char*>(c.data_ptr());
  d.bytes.assign(b, b + c.numel() * c.element_size());
  return d;
}

std::string ShapeText(const std::vector<int64_t>& s) {
  std::string out = "[";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + "]";
}

// Reads tensor `name` of `file` into a new CPU tensor shaped and typed like
// `like`, after checking its entry. Errors name the file and tensor.
StatusOr<torch::Tensor> ReadLike(const safetensors::File& file, const std::string& name, const torch::Tensor& like) {
  const safetensors::TensorInfo* info = file.Find(name);
  if (info == nullptr)
    return Status::InvalidArgument("checkpoint file " + file.path() + ": tensor '" + name + "' is missing");
  const bool fp64 = like.scalar_type() == torch::kDouble;
  const safetensors::Dtype want = fp64 ? safetensors::Dtype::kF64 : safetensors::Dtype::kF32;
  if (info->shape != like.sizes().vec() || info->dtype != want)
    return Status::InvalidArgument("checkpoint file " + file.path() + ": tensor '" + name + "' is " +
                                   safetensors::DtypeName(info->dtype) + " " + ShapeText(info->shape) +
                                   ", expected " + safetensors::DtypeName(want) + " " +
                                   ShapeText(like.sizes().vec()));
  torch::Tensor t = torch::empty(like.sizes(), torch::TensorOptions().dtype(like.scalar_type()));
  if (fp64)
    PW_RETURN_IF_ERROR(file.Read(name, t.data_ptr<double>(), t.numel()));
  else
    PW_RETURN_IF_ERROR(file.Read(name, t.data_ptr<float>(), t.numel()));
  return t;
}

}  // namespace

const torch::optim::AdamWParamState* FindAdamWState(torch::optim::AdamW& optimizer, const torch::Tensor& p) {
  auto it = optimizer.state().find(StateKey(optimizer, p));
  if (it == optimizer.state().end()) return nullptr;
  return static_cast<const torch::optim::AdamWParamState*>(it->second.get());
}

std::vector<LayerTensors> GroupByLayer(const std::vector<std::string>& layers,
                                       const std::vector<std::pair<std::string, torch::Tensor>>& params) {
  std::vector<LayerTensors> out;
  for (const std::string& layer : layers) {
    LayerTensors lt;
    lt.layer = layer;
    const std::string prefix = layer + ".";
    for (const auto& np : params)
      if (np.first.compare(0, prefix.size(), prefix) == 0) lt.params.push_back(np);
    out.push_back(std::move(lt));
  }
  return out;
}

StatusOr<std::vector<CheckpointFile>> SaveLayerFiles(const std::string& step_dir,
                                                     const std::vector<LayerTensors>& layers,
                                                     torch::optim::AdamW* optimizer) {
  std::vector<CheckpointFile> written;
  for (const LayerTensors& lt : layers) {
    CheckpointFile f;
    f.layer = lt.layer;
    f.name = CheckpointLayerFileName(lt.layer);
    const std::string path = step_dir + "/" + f.name;
    std::vector<safetensors::TensorData> data;
    std::map<std::string, std::string> metadata = {{"layer", lt.layer}, {"format", kCheckpointFormat}};
    try {
      for (const auto& [name, p] : lt.params) {
        data.push_back(ToData(name, p));
        if (optimizer == nullptr) continue;
        auto it = optimizer->state().find(StateKey(*optimizer, p));
        if (it == optimizer->state().end()) continue;
        const auto& st = static_cast<const torch::optim::AdamWParamState&>(*it->second);
        data.push_back(ToData(name + ":exp_avg", st.exp_avg()));
        data.push_back(ToData(name + ":exp_avg_sq", st.exp_avg_sq()));
        metadata[name + ":step"] = std::to_string(st.step());
      }
    } catch (const c10::Error& e) {
      return Status::ComputeError("writing checkpoint file " + path + ": " + e.what_without_backtrace());
    }
    std::vector<const safetensors::TensorData*> ptrs;
    for (const auto& d : data) ptrs.push_back(&d);
    Status st = safetensors::WriteFile(path, ptrs, metadata);
    if (!st.ok()) return Status::ComputeError("writing checkpoint file " + path + ": " + st.message());
    std::error_code ec;
    f.bytes = static_cast<int64_t>(std::filesystem::file_size(path, ec));
    if (ec) return Status::ComputeError("checkpoint file " + path + ": " + ec.message());
    PW_ASSIGN_OR_RETURN(f.digest, CheckpointFileDigest(path));
    written.push_back(f);
  }
  return written;
}

Status LoadLayerFiles(const std::string& step_dir, const CheckpointManifest& manifest,
                      const std::vector<LayerTensors>& layers, torch::optim::AdamW* optimizer) {
  // Everything read and checked first (CPU tensors), then copied.
  struct Loaded {
    torch::Tensor param;
    torch::Tensor value, exp_avg, exp_avg_sq;  // exp_* undefined: no optimizer state
    int64_t step = 0;
  };
  std::vector<Loaded> loaded;
  try {
    for (const LayerTensors& lt : layers) {
      PW_ASSIGN_OR_RETURN(CheckpointFile entry, ManifestFileOf(manifest, step_dir, lt.layer));
      PW_RETURN_IF_ERROR(VerifyCheckpointFile(step_dir, entry));
      PW_ASSIGN_OR_RETURN(std::unique_ptr<safetensors::File> file,
                          safetensors::File::Open(step_dir + "/" + entry.name));
      for (const auto& [name, p] : lt.params) {
        Loaded l;
        l.param = p;
        PW_ASSIGN_OR_RETURN(l.value, ReadLike(*file, name, p));
        if (optimizer != nullptr && file->Find(name + ":exp_avg") != nullptr) {
          PW_ASSIGN_OR_RETURN(l.exp_avg, ReadLike(*file, name + ":exp_avg", p));
          PW_ASSIGN_OR_RETURN(l.exp_avg_sq, ReadLike(*file, name + ":exp_avg_sq", p));
          const nlohmann::json& meta = file->metadata();
          const std::string key = name + ":step";
          if (!meta.contains(key) || !meta[key].is_string())
            return Status::InvalidArgument("checkpoint file " + file->path() + ": __metadata__ has no '" + key +
                                           "' (the AdamW step count of " + name + ")");
          try {
            l.step = std::stoll(meta[key].get<std::string>());
          } catch (const std::exception&) {
            return Status::InvalidArgument("checkpoint file " + file->path() + ": __metadata__ '" + key +
                                           "' is not an integer");
          }
        }
        loaded.push_back(std::move(l));
      }
    }
    torch::NoGradGuard no_grad;
    for (Loaded& l : loaded) {
      l.param.copy_(l.value);
      if (optimizer == nullptr) continue;
      auto key = StateKey(*optimizer, l.param);
      if (!l.exp_avg.defined()) {
        optimizer->state().erase(key);
        continue;
      }
      auto state = std::make_unique<torch::optim::AdamWParamState>();
      state->step(l.step);
      state->exp_avg(l.exp_avg.to(l.param.device()));
      state->exp_avg_sq(l.exp_avg_sq.to(l.param.device()));
      optimizer->state()[key] = std::move(state);
    }
  } catch (const c10::Error& e) {
    return Status::ComputeError("reading checkpoint " + step_dir + ": " + e.what_without_backtrace());
  }
  return Status::Ok();
}

}  // namespace pw::exec
