// Hugging Face model directories (config.json + safetensors): export a
// checkpoint (`run --save` / --checkpoint-dir), and the loader `run --init-from`
// uses (Engine::InitFromHf, engine.h). Torch-free header; hf_io.cc is the
// LibTorch side. Parameter names: models/spec/hf_weights.h.
#pragma once

#include <cstdint>
#include <string>

#include "base/status.h"
#include "models/spec/safetensors.h"
#include "plan/plan.h"

namespace pw::exec {

struct ExportSummary {
  int tensors = 0;    // tensors written
  int64_t bytes = 0;  // bytes of tensor data
  int files = 0;      // safetensors files (1, or the number of shards)
};

// Writes the model of the checkpoint `checkpoint` (a step directory, or a
// --checkpoint-dir root: its latest complete step; executor/checkpoint/checkpoint.h) as
// a Hugging Face directory `out_dir`: config.json (HfConfigJson of the
// manifest's model, torch_dtype of the saved weights) and model.safetensors,
// or shards of at most `max_shard_bytes` with model.safetensors.index.json.
// Tensors are stored in the checkpoint's dtype (F32, or F64 for an fp64 run)
// under their HF names (GPT-2's Conv1D weights transposed to (in, out)); a
// tied head is written once, as the token table (HF's tied layout, no
// lm_head.weight). `plan` (optional): refused unless its model is the
// checkpoint's. Atomic: everything is written into a temporary sibling
// directory renamed to `out_dir` at the end; on error nothing is left at
// `out_dir`. Errors: InvalidArgument when `out_dir` exists and is not an
// empty directory, or a layer file is truncated or corrupt (naming it);
// NotFound for a missing checkpoint or file; Internal when writing fails.
StatusOr<ExportSummary> ExportHfModel(const std::string& checkpoint, const std::string& out_dir,
                                      int64_t max_shard_bytes = safetensors::kDefaultMaxShardBytes,
                                      const Plan* plan = nullptr);

}  // namespace pw::exec
