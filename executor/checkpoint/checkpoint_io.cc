#include "executor/checkpoint/checkpoint_io.h"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <type_traits>

#include "models/spec/safetensors.h"
#include "models/spec/tensor_parallel.h"
#include "models/torch/tensor_parallel.h"

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
                                   safetensors::DtypeName(info->dtype) + " " + ShapeText(info->shape) + ", expected " +
                                   safetensors::DtypeName(want) + " " + ShapeText(like.sizes().vec()));
  torch::Tensor t = torch::empty(like.sizes(), torch::TensorOptions().dtype(like.scalar_type()));
  if (fp64)
    PW_RETURN_IF_ERROR(file.Read(name, t.data_ptr<double>(), t.numel()));
  else
    PW_RETURN_IF_ERROR(file.Read(name, t.data_ptr<float>(), t.numel()));
  return t;
}

// Writes one checkpoint file (safetensors::WriteFile: temp file, then
// rename) and fills f->bytes and f->digest from what landed on disk.
// ComputeError names the file.
Status WriteCheckpointFile(const std::string& path, const std::vector<safetensors::TensorData>& data,
                           const std::map<std::string, std::string>& metadata, CheckpointFile* f) {
  std::vector<const safetensors::TensorData*> ptrs;
  for (const auto& d : data) ptrs.push_back(&d);
  Status st = safetensors::WriteFile(path, ptrs, metadata);
  if (!st.ok()) return Status::ComputeError("writing checkpoint file " + path + ": " + st.message());
  std::error_code ec;
  f->bytes = static_cast<int64_t>(std::filesystem::file_size(path, ec));
  if (ec) return Status::ComputeError("checkpoint file " + path + ": " + ec.message());
  PW_ASSIGN_OR_RETURN(f->digest, CheckpointFileDigest(path));
  return Status::Ok();
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

StatusOr<std::vector<CheckpointFile>> SaveFullLayerFiles(const std::string& step_dir,
                                                         const std::vector<FullLayer>& layers) {
  std::vector<CheckpointFile> written;
  for (const FullLayer& fl : layers) {
    CheckpointFile f;
    f.layer = fl.layer;
    f.name = CheckpointLayerFileName(fl.layer);
    const std::string path = step_dir + "/" + f.name;
    std::vector<safetensors::TensorData> data;
    std::map<std::string, std::string> metadata = {{"layer", fl.layer}, {"format", kCheckpointFormat}};
    try {
      for (const FullParameter& p : fl.params) {
        data.push_back(ToData(p.name, p.value));
        if (!p.exp_avg.defined()) continue;
        data.push_back(ToData(p.name + ":exp_avg", p.exp_avg));
        data.push_back(ToData(p.name + ":exp_avg_sq", p.exp_avg_sq));
        metadata[p.name + ":step"] = std::to_string(p.step);
      }
    } catch (const c10::Error& e) {
      return Status::ComputeError("writing checkpoint file " + path + ": " + e.what_without_backtrace());
    }
    PW_RETURN_IF_ERROR(WriteCheckpointFile(path, data, metadata, &f));
    written.push_back(f);
  }
  return written;
}

StatusOr<std::vector<CheckpointFile>> SaveLayerFiles(const std::string& step_dir,
                                                     const std::vector<LayerTensors>& layers,
                                                     torch::optim::AdamW* optimizer) {
  std::vector<FullLayer> full;
  for (const LayerTensors& lt : layers) {
    FullLayer fl;
    fl.layer = lt.layer;
    for (const auto& [name, p] : lt.params) {
      FullParameter fp;
      fp.name = name;
      fp.value = p;
      if (const torch::optim::AdamWParamState* st = optimizer ? FindAdamWState(*optimizer, p) : nullptr) {
        fp.exp_avg = st->exp_avg();
        fp.exp_avg_sq = st->exp_avg_sq();
        fp.step = st->step();
      }
      fl.params.push_back(std::move(fp));
    }
    full.push_back(std::move(fl));
  }
  return SaveFullLayerFiles(step_dir, full);
}

MomentsOf OptimizerMoments(torch::optim::AdamW& optimizer) {
  return [&optimizer](const torch::Tensor& p) -> StatusOr<ParamMoments> {
    ParamMoments m;
    if (const torch::optim::AdamWParamState* st = FindAdamWState(optimizer, p)) {
      m.exp_avg = st->exp_avg();
      m.exp_avg_sq = st->exp_avg_sq();
      m.step = st->step();
    }
    return m;
  };
}

namespace {

ElementType ElementTypeOf(const torch::Tensor& t) {
  return t.scalar_type() == torch::kDouble ? ElementType::kFloat64 : ElementType::kFloat32;
}

// Posts `id` and waits for it.
Status Complete(Communicator& comm, StatusOr<RequestId> id) {
  if (!id.ok()) return id.status();
  return comm.Wait(*id);
}

// All-gathers `x` (any shape, the same on every rank of `comm`) into the
// list of every rank's x (index = rank), on the CPU.
StatusOr<std::vector<torch::Tensor>> AllGatherTensor(Communicator& comm, const torch::Tensor& x) {
  torch::Tensor send = x.detach().to(torch::kCPU).contiguous();
  torch::Tensor recv = torch::empty({static_cast<int64_t>(comm.size()), send.numel()}, send.options());
  PW_RETURN_IF_ERROR(
      Complete(comm, comm.IallGatherBlocks(send.data_ptr(), recv.data_ptr(), send.numel(), ElementTypeOf(send))));
  std::vector<torch::Tensor> out;
  for (int r = 0; r < comm.size(); ++r) out.push_back(recv[r].view(send.sizes()));
  return out;
}

}  // namespace

StatusOr<ParamMoments> JoinShardMoments(Communicator& dp, const torch::Tensor& p, const MomentSliceOf& slice_of) {
  try {
    // [exp_avg (n) | exp_avg_sq (n) | step | slices]: the slices are
    // disjoint, so their sum is the whole; step / slices is the step count
    // every slice holder has (exact: steps are small integers).
    const int64_t n = p.numel();
    torch::Tensor buf = torch::zeros({2 * n + 2}, torch::TensorOptions().dtype(torch::kDouble));
    if (std::optional<MomentSlice> s = slice_of(p)) {
      const int64_t k = s->exp_avg.numel();
      buf.narrow(0, s->offset, k).copy_(s->exp_avg.detach().reshape({-1}));
      buf.narrow(0, n + s->offset, k).copy_(s->exp_avg_sq.detach().reshape({-1}));
      buf[2 * n] = static_cast<double>(s->step);
      buf[2 * n + 1] = 1.0;
    }
    PW_RETURN_IF_ERROR(Complete(dp, dp.IallReduceSum(buf.data_ptr(), buf.numel(), ElementType::kFloat64)));
    ParamMoments m;
    const double slices = buf[2 * n + 1].item<double>();
    if (slices == 0) return m;
    const torch::TensorOptions like = torch::TensorOptions().dtype(p.scalar_type());
    m.exp_avg = buf.narrow(0, 0, n).to(like).view(p.sizes()).clone();
    m.exp_avg_sq = buf.narrow(0, n, n).to(like).view(p.sizes()).clone();
    m.step = static_cast<int64_t>(std::llround(buf[2 * n].item<double>() / slices));
    return m;
  } catch (const c10::Error& e) {
    return Status::ComputeError(std::string("joining ZeRO-1 moments: ") + e.what_without_backtrace());
  }
}

StatusOr<std::vector<int64_t>> FullShapeOf(const std::string& name, const std::vector<int64_t>& shard_shape,
                                           const TensorParallelShards& tp) {
  if (tp.size <= 1) return shard_shape;
  if (tp.model == nullptr) return Status::Internal("tensor-parallel checkpoint I/O without a model");
  PW_ASSIGN_OR_RETURN(TensorParallelLayout layout, TensorParallelLayoutOf(*tp.model, name, tp.size));
  std::vector<int64_t> full = shard_shape;
  if (!layout.split) return full;
  if (layout.dim < 0 || layout.dim >= static_cast<int>(full.size()))
    return Status::Internal("parameter " + name + " has no dimension " + std::to_string(layout.dim) + " to split");
  full[layout.dim] = layout.vocab > 0 ? layout.vocab : full[layout.dim] * tp.size;
  return full;
}

StatusOr<torch::Tensor> SliceFullForTp(const std::string& name, const torch::Tensor& full,
                                       const TensorParallelShards& tp) {
  if (tp.size <= 1) return full;
  if (tp.model == nullptr) return Status::Internal("tensor-parallel checkpoint I/O without a model");
  PW_ASSIGN_OR_RETURN(TensorParallelLayout layout, TensorParallelLayoutOf(*tp.model, name, tp.size));
  PW_RETURN_IF_ERROR(TensorParallelShardShape(full.sizes().vec(), layout, tp.size).status());
  try {
    return models::SliceForTpRank(full, layout, tp.size, tp.rank);
  } catch (const c10::Error& e) {
    return Status::InvalidArgument("slicing " + name + " for tensor-parallel rank " + std::to_string(tp.rank) + ": " +
                                   e.what_without_backtrace());
  }
}

StatusOr<std::vector<FullLayer>> GatherFullLayers(const std::vector<LayerTensors>& layers, const MomentsOf& moments_of,
                                                  const TensorParallelShards& tp) {
  // Phase 1: every parameter's moments (moments_of may be a collective over
  // the data-parallel group: all of them before any TP collective).
  std::vector<std::vector<ParamMoments>> moments;
  for (const LayerTensors& lt : layers) {
    std::vector<ParamMoments> mine;
    for (const auto& np : lt.params) {
      ParamMoments m;
      if (moments_of) {
        PW_ASSIGN_OR_RETURN(m, moments_of(np.second));
      }
      mine.push_back(std::move(m));
    }
    moments.push_back(std::move(mine));
  }
  // Phase 2: the TP gathers, in layer and parameter order on every TP rank.
  const bool gather = tp.size > 1;
  if (gather && (tp.comm == nullptr || tp.model == nullptr || tp.comm->size() != tp.size))
    return Status::Internal("tensor-parallel checkpoint gather without its group");
  std::vector<FullLayer> out;
  try {
    for (size_t li = 0; li < layers.size(); ++li) {
      FullLayer fl;
      fl.layer = layers[li].layer;
      for (size_t pi = 0; pi < layers[li].params.size(); ++pi) {
        const auto& [name, p] = layers[li].params[pi];
        const ParamMoments& m = moments[li][pi];
        FullParameter fp;
        fp.name = name;
        fp.step = m.step;
        TensorParallelLayout layout;
        if (gather) {
          PW_ASSIGN_OR_RETURN(layout, TensorParallelLayoutOf(*tp.model, name, tp.size));
        }
        auto full = [&](const torch::Tensor& x) -> StatusOr<torch::Tensor> {
          if (!gather || !layout.split) return x.detach().to(torch::kCPU);
          PW_ASSIGN_OR_RETURN(std::vector<torch::Tensor> shards, AllGatherTensor(*tp.comm, x));
          return models::GatherTpShards(shards, layout);
        };
        PW_ASSIGN_OR_RETURN(fp.value, full(p));
        // Every TP rank steps together: all have state or none has.
        if (m.exp_avg.defined()) {
          PW_ASSIGN_OR_RETURN(fp.exp_avg, full(m.exp_avg));
          PW_ASSIGN_OR_RETURN(fp.exp_avg_sq, full(m.exp_avg_sq));
        }
        fl.params.push_back(std::move(fp));
      }
      out.push_back(std::move(fl));
    }
  } catch (const c10::Error& e) {
    return Status::ComputeError(std::string("gathering tensor-parallel shards for the checkpoint: ") +
                                e.what_without_backtrace());
  }
  return out;
}

namespace {

// The integer __metadata__ entry `key` of `file`. Errors name the file,
// the key and what it is (`what`).
StatusOr<int64_t> MetaInt(const safetensors::File& file, const std::string& key, const std::string& what) {
  const nlohmann::json& meta = file.metadata();
  if (!meta.contains(key) || !meta[key].is_string())
    return Status::InvalidArgument("checkpoint file " + file.path() + ": __metadata__ has no '" + key + "' (" + what +
                                   ")");
  try {
    size_t used = 0;
    const std::string text = meta[key].get<std::string>();
    const long long v = std::stoll(text, &used);
    if (used != text.size()) throw std::invalid_argument(text);
    return static_cast<int64_t>(v);
  } catch (const std::exception&) {
    return Status::InvalidArgument("checkpoint file " + file.path() + ": __metadata__ '" + key + "' is not an integer");
  }
}

// Reads 1-D tensor `name` of `file` (dtype `dtype`) into a new CPU tensor.
StatusOr<torch::Tensor> ReadVector(const safetensors::File& file, const std::string& name, torch::Dtype dtype) {
  const safetensors::TensorInfo* info = file.Find(name);
  if (info == nullptr)
    return Status::InvalidArgument("checkpoint file " + file.path() + ": tensor '" + name + "' is missing");
  const bool fp64 = dtype == torch::kDouble;
  const safetensors::Dtype want = fp64 ? safetensors::Dtype::kF64 : safetensors::Dtype::kF32;
  if (info->shape.size() != 1 || info->dtype != want)
    return Status::InvalidArgument("checkpoint file " + file.path() + ": tensor '" + name + "' is " +
                                   safetensors::DtypeName(info->dtype) + " " + ShapeText(info->shape) +
                                   ", expected 1-D " + safetensors::DtypeName(want));
  torch::Tensor t = torch::empty({info->shape[0]}, torch::TensorOptions().dtype(dtype));
  if (fp64)
    PW_RETURN_IF_ERROR(file.Read(name, t.data_ptr<double>(), t.numel()));
  else
    PW_RETURN_IF_ERROR(file.Read(name, t.data_ptr<float>(), t.numel()));
  return t;
}

// Joins the ZeRO-1 slices of parameter `l.name` from the shard files of its
// layer into whole moments (l.exp_avg, l.exp_avg_sq, l.step) shaped like
// `like` (the parameter, or its full tensor under TP). No slice in any
// file: no state. Errors name the files when the slices do not tile
// [0, numel) or their step counts differ.
Status JoinShardSlices(const std::vector<std::unique_ptr<safetensors::File>>& shards, LoadedParameter& l,
                       const torch::Tensor& like) {
  struct Piece {
    int64_t offset;
    torch::Tensor m, v;
    const safetensors::File* file;
  };
  std::vector<Piece> pieces;
  int64_t step = -1;
  const safetensors::File* step_file = nullptr;
  for (const auto& f : shards) {
    if (f->Find(l.name + ":exp_avg") == nullptr) continue;
    Piece pc;
    pc.file = f.get();
    PW_ASSIGN_OR_RETURN(pc.offset, MetaInt(*f, l.name + ":offset", "the first element of the slice"));
    PW_ASSIGN_OR_RETURN(pc.m, ReadVector(*f, l.name + ":exp_avg", like.scalar_type()));
    PW_ASSIGN_OR_RETURN(pc.v, ReadVector(*f, l.name + ":exp_avg_sq", like.scalar_type()));
    if (pc.m.numel() != pc.v.numel())
      return Status::InvalidArgument("checkpoint file " + f->path() + ": '" + l.name + ":exp_avg' has " +
                                     std::to_string(pc.m.numel()) + " elements, ':exp_avg_sq' " +
                                     std::to_string(pc.v.numel()));
    PW_ASSIGN_OR_RETURN(int64_t s, MetaInt(*f, l.name + ":step", "the AdamW step count of " + l.name));
    if (step >= 0 && s != step)
      return Status::InvalidArgument("checkpoint files " + step_file->path() + " and " + f->path() + ": " + l.name +
                                     " has AdamW step " + std::to_string(step) + " in one, " + std::to_string(s) +
                                     " in the other");
    step = s;
    step_file = f.get();
    pieces.push_back(std::move(pc));
  }
  if (pieces.empty()) return Status::Ok();
  std::sort(pieces.begin(), pieces.end(), [](const Piece& a, const Piece& b) { return a.offset < b.offset; });
  const int64_t numel = like.numel();
  int64_t next = 0;
  std::vector<torch::Tensor> ms, vs;
  for (const Piece& pc : pieces) {
    if (pc.offset != next || pc.offset + pc.m.numel() > numel)
      return Status::InvalidArgument("checkpoint file " + pc.file->path() + ": the slice of " + l.name +
                                     "'s AdamW moments at elements [" + std::to_string(pc.offset) + ", " +
                                     std::to_string(pc.offset + pc.m.numel()) + ") does not continue at element " +
                                     std::to_string(next) + " of " + std::to_string(numel) +
                                     " (the shard files do not tile the parameter)");
    next += pc.m.numel();
    ms.push_back(pc.m);
    vs.push_back(pc.v);
  }
  if (next != numel)
    return Status::InvalidArgument("checkpoint shard files of " + l.name + ": its AdamW moments cover " +
                                   std::to_string(next) + " of " + std::to_string(numel) + " elements");
  l.exp_avg = torch::cat(ms).view(like.sizes());
  l.exp_avg_sq = torch::cat(vs).view(like.sizes());
  l.step = step;
  return Status::Ok();
}

}  // namespace

void SetAdamWState(torch::optim::AdamW& optimizer, const torch::Tensor& p, const torch::Tensor& exp_avg,
                   const torch::Tensor& exp_avg_sq, int64_t step) {
  auto state = std::make_unique<torch::optim::AdamWParamState>();
  state->step(step);
  state->exp_avg(exp_avg.to(p.device()).view(p.sizes()).clone());
  state->exp_avg_sq(exp_avg_sq.to(p.device()).view(p.sizes()).clone());
  optimizer.state()[StateKey(optimizer, p)] = std::move(state);
}

void ClearAdamWState(torch::optim::AdamW& optimizer, const torch::Tensor& p) {
  optimizer.state().erase(StateKey(optimizer, p));
}

StatusOr<std::vector<LoadedParameter>> ReadLayerFiles(const std::string& step_dir, const CheckpointManifest& manifest,
                                                      const std::vector<LayerTensors>& layers, bool optimizer_state,
                                                      const TensorParallelShards& tp) {
  std::vector<LoadedParameter> loaded;
  const bool sharded = optimizer_state && manifest.optimizer_shards > 1;
  try {
    // Every file of these layers is checked against the manifest before
    // any is parsed: a missing or truncated shard is named up front.
    for (const LayerTensors& lt : layers) {
      PW_ASSIGN_OR_RETURN(CheckpointFile entry, ManifestFileOf(manifest, step_dir, lt.layer));
      PW_RETURN_IF_ERROR(VerifyCheckpointFile(step_dir, entry));
      if (!sharded) continue;
      PW_ASSIGN_OR_RETURN(std::vector<CheckpointFile> shards, ManifestShardFilesOf(manifest, step_dir, lt.layer));
      for (const CheckpointFile& f : shards) PW_RETURN_IF_ERROR(VerifyCheckpointFile(step_dir, f));
    }
    for (const LayerTensors& lt : layers) {
      PW_ASSIGN_OR_RETURN(CheckpointFile entry, ManifestFileOf(manifest, step_dir, lt.layer));
      PW_ASSIGN_OR_RETURN(std::unique_ptr<safetensors::File> file,
                          safetensors::File::Open(step_dir + "/" + entry.name));
      std::vector<std::unique_ptr<safetensors::File>> shard_files;
      if (sharded) {
        PW_ASSIGN_OR_RETURN(std::vector<CheckpointFile> shards, ManifestShardFilesOf(manifest, step_dir, lt.layer));
        for (const CheckpointFile& f : shards) {
          PW_ASSIGN_OR_RETURN(std::unique_ptr<safetensors::File> sf, safetensors::File::Open(step_dir + "/" + f.name));
          shard_files.push_back(std::move(sf));
        }
      }
      for (const auto& [name, p] : lt.params) {
        LoadedParameter l;
        l.name = name;
        l.param = p;
        // Tensor parallel: the files hold the full tensor; read it as such,
        // then cut this rank's shard.
        torch::Tensor like = p;
        if (tp.size > 1) {
          PW_ASSIGN_OR_RETURN(std::vector<int64_t> full, FullShapeOf(name, p.sizes().vec(), tp));
          like = torch::empty(full, torch::TensorOptions().dtype(p.scalar_type()));
        }
        PW_ASSIGN_OR_RETURN(l.value, ReadLike(*file, name, like));
        if (sharded) {
          PW_RETURN_IF_ERROR(JoinShardSlices(shard_files, l, like));
        } else if (optimizer_state && file->Find(name + ":exp_avg") != nullptr) {
          PW_ASSIGN_OR_RETURN(l.exp_avg, ReadLike(*file, name + ":exp_avg", like));
          PW_ASSIGN_OR_RETURN(l.exp_avg_sq, ReadLike(*file, name + ":exp_avg_sq", like));
          PW_ASSIGN_OR_RETURN(l.step, MetaInt(*file, name + ":step", "the AdamW step count of " + name));
        }
        if (tp.size > 1) {
          PW_ASSIGN_OR_RETURN(l.value, SliceFullForTp(name, l.value, tp));
          if (l.exp_avg.defined()) {
            PW_ASSIGN_OR_RETURN(l.exp_avg, SliceFullForTp(name, l.exp_avg, tp));
            PW_ASSIGN_OR_RETURN(l.exp_avg_sq, SliceFullForTp(name, l.exp_avg_sq, tp));
          }
        }
        loaded.push_back(std::move(l));
      }
    }
  } catch (const c10::Error& e) {
    return Status::ComputeError("reading checkpoint " + step_dir + ": " + e.what_without_backtrace());
  }
  return loaded;
}

Status LoadLayerFiles(const std::string& step_dir, const CheckpointManifest& manifest,
                      const std::vector<LayerTensors>& layers, torch::optim::AdamW* optimizer,
                      const TensorParallelShards& tp) {
  PW_ASSIGN_OR_RETURN(std::vector<LoadedParameter> loaded,
                      ReadLayerFiles(step_dir, manifest, layers, optimizer != nullptr, tp));
  try {
    torch::NoGradGuard no_grad;
    for (LoadedParameter& l : loaded) {
      l.param.copy_(l.value);
      if (optimizer == nullptr) continue;
      if (!l.exp_avg.defined())
        ClearAdamWState(*optimizer, l.param);
      else
        SetAdamWState(*optimizer, l.param, l.exp_avg, l.exp_avg_sq, l.step);
    }
  } catch (const c10::Error& e) {
    return Status::ComputeError("reading checkpoint " + step_dir + ": " + e.what_without_backtrace());
  }
  return Status::Ok();
}

StatusOr<std::vector<CheckpointFile>> SaveShardFiles(const std::string& step_dir,
                                                     const std::vector<LayerTensors>& layers, int shard, int shards,
                                                     const MomentSliceOf& slice_of) {
  std::vector<CheckpointFile> written;
  for (const LayerTensors& lt : layers) {
    CheckpointFile f;
    f.layer = lt.layer;
    f.shard = shard;
    f.name = CheckpointShardFileName(lt.layer, shard, shards);
    const std::string path = step_dir + "/" + f.name;
    std::vector<safetensors::TensorData> data;
    std::map<std::string, std::string> metadata = {{"layer", lt.layer},
                                                   {"format", kCheckpointFormat},
                                                   {"shard", std::to_string(shard)},
                                                   {"shards", std::to_string(shards)}};
    try {
      for (const auto& [name, p] : lt.params) {
        std::optional<MomentSlice> slice = slice_of(p);
        if (!slice) continue;
        data.push_back(ToData(name + ":exp_avg", slice->exp_avg));
        data.push_back(ToData(name + ":exp_avg_sq", slice->exp_avg_sq));
        metadata[name + ":offset"] = std::to_string(slice->offset);
        metadata[name + ":step"] = std::to_string(slice->step);
      }
    } catch (const c10::Error& e) {
      return Status::ComputeError("writing checkpoint file " + path + ": " + e.what_without_backtrace());
    }
    PW_RETURN_IF_ERROR(WriteCheckpointFile(path, data, metadata, &f));
    written.push_back(f);
  }
  return written;
}

}  // namespace pw::exec
