#include "models/spec/tensor_parallel.h"

#include <cstddef>

#include "models/spec/footprint.h"

namespace pw {

namespace {

bool EndsWith(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

// "block.<i>.<rest>" -> rest; "" when `name` is not a block parameter.
std::string BlockParameter(const std::string& name) {
  if (name.rfind("block.", 0) != 0) return "";
  const size_t dot = name.find('.', 6);
  if (dot == std::string::npos || dot == 6) return "";
  for (size_t i = 6; i < dot; ++i)
    if (name[i] < '0' || name[i] > '9') return "";
  return name.substr(dot + 1);
}

TensorParallelLayout Split(int dim, int groups = 1) {
  TensorParallelLayout l;
  l.split = true;
  l.dim = dim;
  l.groups = groups;
  return l;
}

}  // namespace

StatusOr<TensorParallelLayout> TensorParallelLayoutOf(const ModelConfig& m, const std::string& name, int t) {
  PW_RETURN_IF_ERROR(CheckTensorParallel(m, t, /*sequence_parallel=*/false, /*seq_length=*/1));
  const bool gpt2 = m.family == ModelFamily::kGpt2;  // GPT-2 layer names (gpt.cc); else Llama's (llama.cc)
  auto not_found = [&]() {
    return Status::NotFound("tensor-parallel layout: '" + name + "' is not a parameter of a " +
                            ModelFamilyName(m.family) + " stage");
  };
  TensorParallelLayout replicated;
  if (name == "embedding.wte" || name == "embedding.embed_tokens" || name == "head.lm_head.weight") {
    if ((name == "embedding.wte") != gpt2 && name != "head.lm_head.weight") return not_found();
    if (t == 1) return replicated;
    TensorParallelLayout l = Split(0);
    l.vocab = m.vocab;
    l.padded_vocab = PaddedVocab(m.vocab, t);
    return l;
  }
  if (name == "embedding.wpe") return gpt2 ? StatusOr<TensorParallelLayout>(replicated) : not_found();
  if (name == "head.ln_f.weight" || name == "head.ln_f.bias")
    return gpt2 ? StatusOr<TensorParallelLayout>(replicated) : not_found();
  if (name == "head.norm.weight") return gpt2 ? not_found() : StatusOr<TensorParallelLayout>(replicated);
  const std::string p = BlockParameter(name);
  if (p.empty()) return not_found();
  const bool weight = EndsWith(p, ".weight"), bias = EndsWith(p, ".bias");
  if (!weight && !bias) return not_found();
  const std::string module = p.substr(0, p.rfind('.'));
  auto column = [&](int groups) { return t == 1 ? replicated : Split(0, groups); };
  auto row = [&]() { return t == 1 || bias ? replicated : Split(1); };
  if (gpt2) {
    if (module == "ln_1" || module == "ln_2") return replicated;
    if (module == "attn_qkv") return column(3);
    if (module == "mlp_fc") return column(1);
    if (module == "attn_proj" || module == "mlp_proj") return row();
    return not_found();
  }
  if (module == "input_layernorm" || module == "post_attention_layernorm" || module == "q_norm" || module == "k_norm")
    return weight ? StatusOr<TensorParallelLayout>(replicated) : not_found();
  if (module == "q_proj" || module == "k_proj" || module == "v_proj" || module == "gate_proj" || module == "up_proj")
    return column(1);
  if (module == "o_proj" || module == "down_proj") return row();
  return not_found();
}

StatusOr<std::vector<int64_t>> TensorParallelShardShape(const std::vector<int64_t>& full, const TensorParallelLayout& l,
                                                        int t) {
  if (!l.split || t == 1) return full;
  auto shape_text = [&]() {
    std::string s = "(";
    for (size_t i = 0; i < full.size(); ++i) s += (i ? ", " : "") + std::to_string(full[i]);
    return s + ")";
  };
  if (l.dim < 0 || static_cast<size_t>(l.dim) >= full.size())
    return Status::InvalidArgument("tensor-parallel split along dim " + std::to_string(l.dim) +
                                   " of a tensor of shape " + shape_text());
  std::vector<int64_t> shard = full;
  if (l.vocab > 0) {
    if (full[l.dim] != l.vocab)
      return Status::InvalidArgument("vocab-parallel tensor of shape " + shape_text() + " should have " +
                                     std::to_string(l.vocab) + " rows (vocab_size)");
    shard[l.dim] = l.padded_vocab / t;
    return shard;
  }
  const int64_t parts = static_cast<int64_t>(l.groups) * t;
  if (full[l.dim] % parts != 0)
    return Status::InvalidArgument("tensor of shape " + shape_text() + ": dim " + std::to_string(l.dim) +
                                   " is not divisible into " + std::to_string(l.groups) + " block(s) x " +
                                   std::to_string(t) + " tensor-parallel ranks");
  shard[l.dim] = full[l.dim] / t;
  return shard;
}

VocabRange VocabShardRange(int64_t vocab, int t, int r) {
  const int64_t per = PaddedVocab(vocab, t) / t;
  return VocabRange{per * r, per * (r + 1)};
}

}  // namespace pw
