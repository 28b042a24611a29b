#include "planner/cost_model.h"

#include <algorithm>
#include <cmath>
#include <optional>

#include "planner/data_parallel.h"

namespace pw {

CommModel TensorParallelLink(const DeviceSpec& device, int tp_size) { return device.DataParallelLink(tp_size); }

namespace {

const CollectiveFit* FindCollectiveFit(const std::vector<CollectiveFit>& measured, CollectiveKind kind, int ranks) {
  for (const CollectiveFit& f : measured)
    if (f.ranks == ranks && f.kind == CollectiveKindName(kind)) return &f;
  return nullptr;
}

}  // namespace

double TensorParallelSeconds(const std::vector<Collective>& collectives, int tp_size, const CommModel& link,
                             const std::vector<CollectiveFit>& measured) {
  if (tp_size <= 1) return 0.0;
  double s = 0.0;
  for (const Collective& c : collectives) {
    if (const CollectiveFit* f = FindCollectiveFit(measured, c.kind, tp_size)) {
      if (c.bytes > 0)
        s += f->model.latency_s +
             (f->model.bandwidth_bytes_per_s > 0 ? static_cast<double>(c.bytes) / f->model.bandwidth_bytes_per_s : 0.0);
      continue;
    }
    s += c.kind == CollectiveKind::kAllReduce ? RingAllReduceSeconds(c.bytes, tp_size, link)
                                              : RingReduceScatterSeconds(c.bytes, tp_size, link);
  }
  return s;
}

StatusOr<LayerCostTable> TensorParallelProfileCosts(const LayerCostTable& whole, const ModelConfig& model,
                                                    const TrainingShape& shape,
                                                    const std::vector<CollectiveFit>& measured,
                                                    const std::optional<CommModel>& link) {
  const std::vector<LayerSpec> specs = BuildLayerList(model);
  if (specs.size() != whole.layers.size())
    return Status::InvalidArgument("the profile's layer costs have " + std::to_string(whole.layers.size()) +
                                   " layers, the model " + std::to_string(specs.size()));
  TrainingShape one = shape;
  one.tp_size = 1;
  one.sequence_parallel = false;
  auto ratio = [](double at_t, double at_1) { return at_1 > 0 ? at_t / at_1 : 1.0; };
  auto bytes = [&](int64_t v, int64_t at_t, int64_t at_1) {
    return static_cast<int64_t>(std::llround(static_cast<double>(v) * ratio(static_cast<double>(at_t), at_1)));
  };
  LayerCostTable t = whole;
  for (size_t l = 0; l < specs.size(); ++l) {
    const LayerFootprint ft = ComputeFootprint(model, specs[l], shape);
    const LayerFootprint f1 = ComputeFootprint(model, specs[l], one);
    for (const auto* list : {&ft.tp_comm_f, &ft.tp_comm_i, &ft.tp_comm_w})
      for (const Collective& c : *list)
        if (!link && !FindCollectiveFit(measured, c.kind, shape.tp_size))
          return Status::InvalidArgument(std::string("the profile has no ") + CollectiveKindName(c.kind) +
                                         " measured over " + std::to_string(shape.tp_size) +
                                         " ranks (run `mpirun -np " + std::to_string(shape.tp_size) +
                                         " pipewright profile`) and no --device gives a link to cost it on");
    const CommModel on = link.value_or(CommModel{});
    LayerCost& c = t.layers[l];
    const double rf = f1.flops_f > 0 ? ratio(ft.flops_f, f1.flops_f) : ratio(ft.memory_traffic_f, f1.memory_traffic_f);
    const double ri = ratio(ft.flops_i, f1.flops_i);
    const double rw = f1.flops_w > 0 ? ratio(ft.flops_w, f1.flops_w) : ratio(ft.memory_traffic_w, f1.memory_traffic_w);
    const double rb = ratio(ft.flops_i + ft.flops_w, f1.flops_i + f1.flops_w);
    const double comm_f = TensorParallelSeconds(ft.tp_comm_f, shape.tp_size, on, measured);
    const double comm_i = TensorParallelSeconds(ft.tp_comm_i, shape.tp_size, on, measured);
    const double comm_w = TensorParallelSeconds(ft.tp_comm_w, shape.tp_size, on, measured);
    c.f = c.f * rf + comm_f;
    c.i = c.i * ri + comm_i;
    c.w = c.w * rw + comm_w;
    if (c.b >= 0) c.b = c.b * rb + comm_i + comm_w;
    // The optimizer step touches each parameter a fixed number of times:
    // it scales with the rank's share of the layer's static bytes.
    c.optimizer *= ratio(static_cast<double>(ft.static_bytes), static_cast<double>(f1.static_bytes));
    c.activation_bytes = bytes(c.activation_bytes, ft.activation_bytes, f1.activation_bytes);
    c.wstash_bytes = bytes(c.wstash_bytes, ft.wstash_bytes, f1.wstash_bytes);
    c.static_bytes = bytes(c.static_bytes, ft.static_bytes, f1.static_bytes);
    c.output_bytes = bytes(c.output_bytes, ft.output_bytes, f1.output_bytes);
    c.transient_bytes = bytes(c.transient_bytes, ft.transient_bytes, f1.transient_bytes);
  }
  return t;
}

LayerCostTable BuildLayerCosts(const ModelConfig& model, const DeviceSpec& device, const TrainingShape& shape) {
  const CommModel tp_link = TensorParallelLink(device, shape.tp_size);
  LayerCostTable t;
  t.recompute = RecomputeName(shape.recompute);
  t.micro_batch_size = shape.micro_batch_size;
  t.seq_length = shape.seq_length;
  t.model = model.raw;
  t.comm = device.Comm();
  for (const LayerSpec& spec : BuildLayerList(model)) {
    const LayerFootprint fp = ComputeFootprint(model, spec, shape);
    LayerCost c;
    c.name = spec.name;
    c.kind = LayerKindName(spec.kind);
    c.f = device.ComputeSeconds(fp.flops_f) + device.MemorySeconds(fp.memory_traffic_f);
    c.i = device.ComputeSeconds(fp.flops_i);
    c.w = device.ComputeSeconds(fp.flops_w) + device.MemorySeconds(fp.memory_traffic_w);
    if (shape.tp_size > 1) {
      c.f += TensorParallelSeconds(fp.tp_comm_f, shape.tp_size, tp_link);
      c.i += TensorParallelSeconds(fp.tp_comm_i, shape.tp_size, tp_link);
      c.w += TensorParallelSeconds(fp.tp_comm_w, shape.tp_size, tp_link);
    }
    c.activation_bytes = fp.activation_bytes;
    c.wstash_bytes = fp.wstash_bytes;
    c.static_bytes = fp.static_bytes;
    c.output_bytes = fp.output_bytes;
    c.transient_bytes = fp.transient_bytes;
    t.layers.push_back(std::move(c));
  }
  return t;
}

StageSum SumStage(const LayerCostTable& table, int begin, int end) {
  StageSum s;
  s.cost.f = s.cost.i = s.cost.w = 0.0;
  s.memory.activation = s.memory.wstash = 0;
  // A measured full backward (B) is used only when every layer has one.
  bool all_b = true;
  double sum_b = 0.0;
  for (int l = begin; l < end; ++l) {
    const LayerCost& c = table.layers[l];
    all_b = all_b && c.b >= 0;
    sum_b += c.b;
    s.cost.f += c.f;
    s.cost.i += c.i;
    s.cost.w += c.w;
    s.cost.optimizer += c.optimizer;
    s.memory.static_bytes += c.static_bytes;
    s.memory.activation += c.activation_bytes;
    s.memory.wstash += c.wstash_bytes;
    s.transient_bytes = std::max(s.transient_bytes, c.transient_bytes);
  }
  s.cost.b = all_b ? sum_b : -1.0;
  s.memory.send_forward = table.layers[end - 1].output_bytes;
  s.memory.send_backward = begin > 0 ? table.layers[begin - 1].output_bytes : 0;
  return s;
}

StageCosts BuildStageCosts(const LayerCostTable& table, const Boundaries& boundaries, const CommModel& comm) {
  StageCosts out;
  out.comm = comm;
  for (size_t s = 0; s + 1 < boundaries.size(); ++s) {
    StageSum sum = SumStage(table, boundaries[s], boundaries[s + 1]);
    out.stages.push_back(sum.cost);
    out.memory.push_back(sum.memory);
  }
  return out;
}

}  // namespace pw
