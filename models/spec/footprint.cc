#include "models/spec/footprint.h"

#include <algorithm>

namespace pw {

const char* RecomputeName(Recompute r) {
  switch (r) {
    case Recompute::kNone:
      return "none";
    case Recompute::kSelective:
      return "selective";
    case Recompute::kFull:
      return "full";
  }
  return "?";
}

StatusOr<Recompute> ParseRecompute(const std::string& text) {
  if (text == "none") return Recompute::kNone;
  if (text == "selective") return Recompute::kSelective;
  if (text == "full") return Recompute::kFull;
  return Status::InvalidArgument("--recompute-granularity must be none, selective or full, got '" + text + "'");
}

const char* PrecisionName(Precision p) {
  switch (p) {
    case Precision::kMixedBf16:
      return "bf16";
    case Precision::kFp32:
      return "fp32";
    case Precision::kFp64:
      return "fp64";
  }
  return "?";
}

StatusOr<Precision> ParsePrecision(const std::string& text) {
  if (text == "bf16") return Precision::kMixedBf16;
  if (text == "fp32") return Precision::kFp32;
  if (text == "fp64") return Precision::kFp64;
  return Status::InvalidArgument("--dtype must be bf16, fp32 or fp64, got '" + text + "'");
}

int64_t StaticBytesPerParam(Precision p) {
  switch (p) {
    case Precision::kMixedBf16:
      return 18;
    case Precision::kFp32:
      return 16;
    case Precision::kFp64:
      return 32;
  }
  return 16;
}

int64_t ActivationElementBytes(Precision p) {
  switch (p) {
    case Precision::kMixedBf16:
      return 2;
    case Precision::kFp32:
      return 4;
    case Precision::kFp64:
      return 8;
  }
  return 4;
}

const char* LayerKindName(LayerKind k) {
  switch (k) {
    case LayerKind::kEmbedding:
      return "embedding";
    case LayerKind::kBlock:
      return "block";
    case LayerKind::kHead:
      return "head";
  }
  return "?";
}

namespace {

// Parameters of the weight matrices of one decoder block (P_mm).
int64_t BlockMatmulParams(const ModelConfig& m) {
  const int64_t h = m.hidden, q = m.num_heads * m.head_dim, kv = m.num_kv_heads * m.head_dim, f = m.ffn;
  const int64_t attn = h * (q + 2 * kv) + q * h;      // QKV + output projection
  const int64_t mlp = (m.gated_mlp ? 3 : 2) * h * f;  // gate, up, down | fc1, fc2
  return attn + mlp;
}

int64_t NormParams(const ModelConfig& m) { return m.layer_norm ? 2 * m.hidden : m.hidden; }

int64_t BlockParams(const ModelConfig& m) {
  const int64_t h = m.hidden, q = m.num_heads * m.head_dim, kv = m.num_kv_heads * m.head_dim, f = m.ffn;
  int64_t p = BlockMatmulParams(m) + 2 * NormParams(m);
  if (m.attention_bias)
    p += (q + 2 * kv) + h;  // QKV bias, projection bias
  else if (m.qkv_bias)
    p += q + 2 * kv;                                     // QKV bias only (qwen2)
  if (m.mlp_bias) p += m.gated_mlp ? 2 * f + h : f + h;  // gate+up, down | fc1, fc2
  return p + BlockTerms(m).params;                       // the family's own (model_family.h)
}

}  // namespace

std::vector<LayerSpec> BuildLayerList(const ModelConfig& m) {
  std::vector<LayerSpec> layers;
  const std::vector<std::string> names = LayerNames(m);
  layers.reserve(names.size());
  const int64_t table = m.vocab * m.hidden;
  LayerSpec emb{names.front(), LayerKind::kEmbedding, table + (m.learned_positions ? m.max_positions * m.hidden : 0),
                0};
  emb.held_params = emb.params;
  layers.push_back(emb);
  const int64_t block = BlockParams(m);
  for (int i = 0; i < m.num_layers; ++i) layers.push_back(LayerSpec{names[i + 1], LayerKind::kBlock, block, block});
  LayerSpec head{names.back(), LayerKind::kHead, NormParams(m) + (m.tied ? 0 : table), NormParams(m) + table};
  layers.push_back(head);
  return layers;
}

int64_t TotalParameters(const ModelConfig& model) {
  int64_t total = 0;
  for (const LayerSpec& l : BuildLayerList(model)) total += l.params;
  return total;
}

const char* CollectiveKindName(CollectiveKind k) {
  switch (k) {
    case CollectiveKind::kAllReduce:
      return "all-reduce";
    case CollectiveKind::kReduceScatter:
      return "reduce-scatter";
    case CollectiveKind::kAllGather:
      return "all-gather";
  }
  return "?";
}

int64_t PaddedVocab(int64_t vocab, int tp_size) {
  if (tp_size <= 1) return vocab;
  const int64_t multiple = int64_t{128} * tp_size;
  return (vocab + multiple - 1) / multiple * multiple;
}

Status CheckTensorParallel(const ModelConfig& m, int t, bool sp, int64_t seq_length) {
  const std::string flag = "--tensor-model-parallel-size " + std::to_string(t);
  if (t < 1) return Status::InvalidArgument("--tensor-model-parallel-size must be >= 1, got " + std::to_string(t));
  if (m.num_heads % t != 0)
    return Status::InvalidArgument(flag + " does not divide the model's " + std::to_string(m.num_heads) +
                                   " attention heads (each TP rank holds a / t heads)");
  if (m.num_kv_heads % t != 0)
    return Status::InvalidArgument(flag + " does not divide the model's " + std::to_string(m.num_kv_heads) +
                                   " kv heads (each TP rank holds k / t of them)");
  if (m.ffn % t != 0)
    return Status::InvalidArgument(flag + " does not divide the MLP width " + std::to_string(m.ffn) +
                                   " (each TP rank holds f / t columns)");
  if (sp && t == 1)
    return Status::InvalidArgument(
        "--sequence-parallel needs --tensor-model-parallel-size > 1 (it shards the "
        "sequence over the tensor-parallel ranks)");
  if (sp && seq_length % t != 0)
    return Status::InvalidArgument("--sequence-parallel with " + flag + ": the sequence length " +
                                   std::to_string(seq_length) + " is not a multiple of " + std::to_string(t));
  return Status::Ok();
}

int64_t HeldParamsPerTensorRank(const ModelConfig& m, const LayerSpec& layer, int t) {
  if (t <= 1) return layer.held_params;
  const int64_t h = m.hidden, q = m.num_heads * m.head_dim, kv = m.num_kv_heads * m.head_dim, f = m.ffn;
  const int64_t table = PaddedVocab(m.vocab, t) * h / t;
  switch (layer.kind) {
    case LayerKind::kEmbedding:
      return table + (m.learned_positions ? m.max_positions * h : 0);
    case LayerKind::kHead:
      return NormParams(m) + table;
    case LayerKind::kBlock: {
      int64_t p = BlockMatmulParams(m) / t + 2 * NormParams(m);
      if (m.attention_bias)
        p += (q + 2 * kv) / t + h;
      else if (m.qkv_bias)
        p += (q + 2 * kv) / t;
      if (m.mlp_bias) p += m.gated_mlp ? 2 * f / t + h : f / t + h;
      // The family's own (Qwen3's q/k norm weights act on each head's d
      // channels: every tensor rank holds them whole, as transformers' tensor
      // parallel plan replicates them).
      return p + BlockTerms(m).params;
    }
  }
  return layer.held_params;
}

LayerFootprint ComputeFootprint(const ModelConfig& m, const LayerSpec& layer, const TrainingShape& shape) {
  LayerFootprint fp;
  const int64_t b = shape.micro_batch_size, s = shape.seq_length, h = m.hidden, f = m.ffn;
  const int64_t t = std::max(shape.tp_size, 1);
  const bool sp = shape.sequence_parallel && t > 1;
  const int64_t V = PaddedVocab(m.vocab, static_cast<int>(t));
  const int64_t a = m.num_heads, q = m.num_heads * m.head_dim, kv = m.num_kv_heads * m.head_dim;
  const int64_t e = ActivationElementBytes(shape.precision);
  const int64_t sb = s * b, sbh = s * b * h;
  const double bs = static_cast<double>(b) * s;
  // Bytes outside the tensor-parallel regions: whole on every TP rank, or a
  // sequence shard with SP. Inside them: split by heads / MLP columns.
  auto outside = [&](int64_t bytes) { return sp ? (bytes + t - 1) / t : bytes; };
  auto inside = [&](int64_t bytes) { return (bytes + t - 1) / t; };
  fp.static_bytes = HeldParamsPerTensorRank(m, layer, static_cast<int>(t)) * StaticBytesPerParam(shape.precision);
  // One all-reduce (or with SP: reduce-scatter then all-gather) of sbh e.
  const Collective ar{CollectiveKind::kAllReduce, sbh * e}, rs{CollectiveKind::kReduceScatter, sbh * e},
      ag{CollectiveKind::kAllGather, sbh * e};

  switch (layer.kind) {
    case LayerKind::kEmbedding: {
      // A gather of b*s rows (plus the position rows and the add for GPT-2),
      // and in W a scatter-add of the output gradient into the table.
      const double row_bytes = bs * static_cast<double>(h * e);
      fp.memory_traffic_f = (m.learned_positions ? 3.0 : 2.0) * row_bytes;
      fp.memory_traffic_w = 3.0 * row_bytes;
      fp.activation_bytes = 8 * sb + (m.dropout ? outside(sbh) : 0);  // int64 ids (+ dropout mask)
      fp.wstash_bytes = 8 * sb + sbh * e;                             // ids + gradient of the output
      fp.output_bytes = outside(sbh * e);
      fp.input_grad_bytes = 0;
      if (t > 1) {
        fp.tp_comm_f.push_back(sp ? rs : ar);  // vocab-parallel lookup: partial rows summed
        // The output gradient, gathered back to the whole sequence: on the
        // backward's autograd path, so in I (the embedding has no input
        // gradient; W is the scatter-add of the gathered gradient).
        if (sp) fp.tp_comm_i.push_back(ag);
      }
      break;
    }
    case LayerKind::kBlock: {
      const double mm = static_cast<double>(BlockMatmulParams(m));
      const double core = 4.0 * bs * static_cast<double>(s) * static_cast<double>(q);  // QK^T and scores x V
      fp.flops_f = (2.0 * bs * mm + core) / static_cast<double>(t);
      fp.flops_i = (2.0 * bs * mm + 2.0 * core) / static_cast<double>(t);
      fp.flops_w = 2.0 * bs * mm / static_cast<double>(t);
      // Activation bytes kept for the backward, Korthikanti et al. 2022 §4.1
      // (t = 1) and §4.2 (the split under tensor / sequence parallelism).
      int64_t kept = outside(2 * sbh * e)                              // two norm inputs
                     + outside(sbh * e)                                // QKV GEMM input
                     + inside(sb * (q + 2 * kv) * e)                   // Q, K, V
                     + inside(sb * q * e)                              // output projection input
                     + (m.dropout ? outside(sbh) : 0)                  // attention-output dropout mask
                     + inside(sb * BlockTerms(m).kept_per_token * e);  // the family's own, per head (model_family.h)
      kept += m.gated_mlp ? outside(sbh * e) + inside(4 * sb * f * e)  // input, gate, SiLU, up, down input
                          : outside(sbh * e) + inside(2 * sb * f * e) + (m.dropout ? outside(sbh) : 0);
      const int64_t scores = inside(a * s * sb * e + (m.dropout ? a * s * sb + a * s * sb * e : 0));
      const int64_t input = outside(sbh * e);
      const std::vector<Collective> forward_comm = t == 1 ? std::vector<Collective>{}
                                                   : sp   ? std::vector<Collective>{ag, rs, ag, rs}
                                                          : std::vector<Collective>{ar, ar};
      fp.tp_comm_f = forward_comm;
      fp.tp_comm_i = forward_comm;  // the backward of each f / g operator (Shoeybi et al. 2019 Fig. 3)
      switch (shape.recompute) {
        case Recompute::kNone:
          fp.activation_bytes = kept + scores;
          break;
        case Recompute::kSelective:
          fp.activation_bytes = kept;
          fp.transient_bytes = scores;
          fp.flops_i += core / static_cast<double>(t);  // the attention core's forward runs again before I
          break;
        case Recompute::kFull:
          fp.activation_bytes = input;  // the block input only
          fp.transient_bytes = kept + scores - input;
          fp.flops_i += fp.flops_f;  // the whole forward runs again before I, with its collectives
          fp.tp_comm_i.insert(fp.tp_comm_i.end(), forward_comm.begin(), forward_comm.end());
          break;
      }
      // W needs each GEMM's input and the gradient of its output (ZB paper,
      // Qi et al. 2024 Table 1: M_W = 32 sbh for GPT): inside terms / t,
      // the norm-side inputs and output gradients outside.
      const int64_t gemm_inputs = outside(sb * 2 * h * e) + inside(sb * (q + f) * e);
      const int64_t output_grads =
          inside(sb * ((q + 2 * kv) + (m.gated_mlp ? 2 * f : f)) * e) + outside(sb * 2 * h * e);
      fp.wstash_bytes = gemm_inputs + output_grads;
      fp.output_bytes = input;
      fp.input_grad_bytes = input;
      break;
    }
    case LayerKind::kHead: {
      const double mm = static_cast<double>(h * V) / static_cast<double>(t);
      fp.flops_f = 2.0 * bs * mm;
      fp.flops_i = 2.0 * bs * mm;
      fp.flops_w = 2.0 * bs * mm;
      // Norm + LM-head inputs, fp32 logits (the rank's vocabulary slice) for the loss.
      fp.activation_bytes = outside(2 * sbh * e) + inside(4 * sb * V);
      fp.wstash_bytes = outside(sbh * e) + inside(sb * V * e);  // LM-head input + gradient of the logits
      fp.output_bytes = 4;                                      // the fp32 loss
      fp.input_grad_bytes = outside(sbh * e);
      if (t > 1) {
        if (sp) fp.tp_comm_f.push_back(ag);  // the head's input, gathered to the whole sequence
        for (int k = 0; k < 3; ++k) fp.tp_comm_f.push_back(Collective{CollectiveKind::kAllReduce, 4 * sb});
        fp.tp_comm_i.push_back(sp ? rs : ar);
      }
      break;
    }
  }
  return fp;
}

}  // namespace pw
