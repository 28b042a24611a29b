#include "models/spec/footprint.h"

namespace pw {

const char* RecomputeName(Recompute r) {
  switch (r) {
    case Recompute::kNone: return "none";
    case Recompute::kSelective: return "selective";
    case Recompute::kFull: return "full";
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
    case Precision::kMixedBf16: return "bf16";
    case Precision::kFp32: return "fp32";
    case Precision::kFp64: return "fp64";
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
    case Precision::kMixedBf16: return 18;
    case Precision::kFp32: return 16;
    case Precision::kFp64: return 32;
  }
  return 16;
}

int64_t ActivationElementBytes(Precision p) {
  switch (p) {
    case Precision::kMixedBf16: return 2;
    case Precision::kFp32: return 4;
    case Precision::kFp64: return 8;
  }
  return 4;
}

const char* LayerKindName(LayerKind k) {
  switch (k) {
    case LayerKind::kEmbedding: return "embedding";
    case LayerKind::kBlock: return "block";
    case LayerKind::kHead: return "head";
  }
  return "?";
}

namespace {

// Parameters of the weight matrices of one decoder block (P_mm).
int64_t BlockMatmulParams(const ModelConfig& m) {
  const int64_t h = m.hidden, q = m.num_heads * m.head_dim, kv = m.num_kv_heads * m.head_dim, f = m.ffn;
  const int64_t attn = h * (q + 2 * kv) + q * h;  // QKV + output projection
  const int64_t mlp = (m.gated_mlp ? 3 : 2) * h * f;  // gate, up, down | fc1, fc2
  return attn + mlp;
}

int64_t NormParams(const ModelConfig& m) { return m.layer_norm ? 2 * m.hidden : m.hidden; }

int64_t BlockParams(const ModelConfig& m) {
  const int64_t h = m.hidden, q = m.num_heads * m.head_dim, kv = m.num_kv_heads * m.head_dim, f = m.ffn;
  int64_t p = BlockMatmulParams(m) + 2 * NormParams(m);
  if (m.attention_bias) p += (q + 2 * kv) + h;          // QKV bias, projection bias
  else if (m.qkv_bias) p += q + 2 * kv;                 // QKV bias only (qwen2)
  if (m.mlp_bias) p += m.gated_mlp ? 2 * f + h : f + h;  // gate+up, down | fc1, fc2
  return p + BlockTerms(m).params;                       // the family's own (model_family.h)
}

}  // namespace

std::vector<LayerSpec> BuildLayerList(const ModelConfig& m) {
  std::vector<LayerSpec> layers;
  const std::vector<std::string> names = LayerNames(m);
  layers.reserve(names.size());
  const int64_t table = m.vocab * m.hidden;
  LayerSpec emb{names.front(), LayerKind::kEmbedding, table + (m.learned_positions ? m.max_positions * m.hidden : 0), 0};
  emb.held_params = emb.params;
  layers.push_back(emb);
  const int64_t block = BlockParams(m);
  for (int i = 0; i < m.num_layers; ++i)
    layers.push_back(LayerSpec{names[i + 1], LayerKind::kBlock, block, block});
  LayerSpec head{names.back(), LayerKind::kHead, NormParams(m) + (m.tied ? 0 : table), NormParams(m) + table};
  layers.push_back(head);
  return layers;
}

int64_t TotalParameters(const ModelConfig& model) {
  int64_t total = 0;
  for (const LayerSpec& l : BuildLayerList(model)) total += l.params;
  return total;
}

LayerFootprint ComputeFootprint(const ModelConfig& m, const LayerSpec& layer, const TrainingShape& shape) {
  LayerFootprint fp;
  const int64_t b = shape.micro_batch_size, s = shape.seq_length, h = m.hidden, f = m.ffn, V = m.vocab;
  const int64_t a = m.num_heads, q = m.num_heads * m.head_dim, kv = m.num_kv_heads * m.head_dim;
  const int64_t e = ActivationElementBytes(shape.precision);
  const int64_t sb = s * b, sbh = s * b * h;
  const double bs = static_cast<double>(b) * s;
  fp.static_bytes = layer.held_params * StaticBytesPerParam(shape.precision);

  switch (layer.kind) {
    case LayerKind::kEmbedding: {
      // A gather of b*s rows (plus the position rows and the add for GPT-2),
      // and in W a scatter-add of the output gradient into the table.
      const double row_bytes = bs * static_cast<double>(h * e);
      fp.memory_traffic_f = (m.learned_positions ? 3.0 : 2.0) * row_bytes;
      fp.memory_traffic_w = 3.0 * row_bytes;
      fp.activation_bytes = 8 * sb + (m.dropout ? sbh : 0);  // int64 ids (+ dropout mask)
      fp.wstash_bytes = 8 * sb + sbh * e;                     // ids + gradient of the output
      fp.output_bytes = sbh * e;
      fp.input_grad_bytes = 0;
      break;
    }
    case LayerKind::kBlock: {
      const double mm = static_cast<double>(BlockMatmulParams(m));
      const double core = 4.0 * bs * static_cast<double>(s) * static_cast<double>(q);  // QK^T and scores x V
      fp.flops_f = 2.0 * bs * mm + core;
      fp.flops_i = 2.0 * bs * mm + 2.0 * core;
      fp.flops_w = 2.0 * bs * mm;
      // Activation bytes kept for the backward, Korthikanti et al. 2022 §4.1.
      int64_t kept = 2 * sbh * e               // two norm inputs
                     + sbh * e                  // QKV GEMM input
                     + sb * (q + 2 * kv) * e    // Q, K, V
                     + sb * q * e               // output projection input
                     + (m.dropout ? sbh : 0)    // attention-output dropout mask
                     + sb * BlockTerms(m).kept_per_token * e;  // the family's own (model_family.h)
      kept += m.gated_mlp ? sbh * e + 4 * sb * f * e             // input, gate, SiLU, up, down input
                          : sbh * e + 2 * sb * f * e + (m.dropout ? sbh : 0);  // fc1 in, act in, fc2 in, mask
      const int64_t scores = a * s * sb * e + (m.dropout ? a * s * sb + a * s * sb * e : 0);
      switch (shape.recompute) {
        case Recompute::kNone:
          fp.activation_bytes = kept + scores;
          break;
        case Recompute::kSelective:
          fp.activation_bytes = kept;
          fp.transient_bytes = scores;
          fp.flops_i += core;  // the attention core's forward runs again before I
          break;
        case Recompute::kFull:
          fp.activation_bytes = sbh * e;  // the block input only
          fp.transient_bytes = kept + scores - sbh * e;
          fp.flops_i += fp.flops_f;  // the whole forward runs again before I
          break;
      }
      // W needs each GEMM's input and the gradient of its output (ZB paper,
      // Qi et al. 2024 Table 1: M_W = 32 sbh for GPT).
      const int64_t gemm_inputs = h + q + (m.gated_mlp ? h + f : h + f);
      const int64_t output_grads = (q + 2 * kv) + h + (m.gated_mlp ? 2 * f + h : f + h);
      fp.wstash_bytes = sb * (gemm_inputs + output_grads) * e;
      fp.output_bytes = sbh * e;
      fp.input_grad_bytes = sbh * e;
      break;
    }
    case LayerKind::kHead: {
      const double mm = static_cast<double>(h * V);
      fp.flops_f = 2.0 * bs * mm;
      fp.flops_i = 2.0 * bs * mm;
      fp.flops_w = 2.0 * bs * mm;
      fp.activation_bytes = 2 * sbh * e + 4 * sb * V;  // norm + LM-head inputs, fp32 logits for the loss
      fp.wstash_bytes = sbh * e + sb * V * e;          // LM-head input + gradient of the logits
      fp.output_bytes = 4;                             // the fp32 loss
      fp.input_grad_bytes = sbh * e;
      break;
    }
  }
  return fp;
}

}  // namespace pw
