#include "planner/cost_model.h"

#include <algorithm>

#include "planner/data_parallel.h"

namespace pw {

CommModel TensorParallelLink(const DeviceSpec& device, int tp_size) { return device.DataParallelLink(tp_size); }

double TensorParallelSeconds(const std::vector<Collective>& collectives, int tp_size, const CommModel& link) {
  double s = 0.0;
  for (const Collective& c : collectives)
    s += c.kind == CollectiveKind::kAllReduce ? RingAllReduceSeconds(c.bytes, tp_size, link)
                                              : RingReduceScatterSeconds(c.bytes, tp_size, link);
  return s;
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
