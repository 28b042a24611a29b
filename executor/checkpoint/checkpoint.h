// Checkpoints keyed by layer (torch-free part): directory layout, the
// manifest, file digests and the checks made before resuming. The tensors are
// written and read by executor/checkpoint/checkpoint_io.h (LibTorch side), called from
// Engine::SaveCheckpoint / LoadCheckpoint (engine.h), the sampler and export.
//
// A checkpoint is one step directory; --checkpoint-dir ROOT holds one per
// saved step (ROOT/step_000010/), and `run --save DIR` writes DIR itself as
// one. Inside a step directory:
//   embedding.safetensors, block.0.safetensors, ..., head.safetensors
//       one file per layer of the layer list (models/spec/model_config.h LayerNames),
//       written by the rank holding the layer (temp file + rename). Tensors:
//         <param>              the parameter, e.g. "block.3.q_proj.weight"
//         <param>:exp_avg      AdamW first moment   (absent before any step)
//         <param>:exp_avg_sq   AdamW second moment  (absent before any step)
//       and __metadata__ {"layer": "block.3", "<param>:step": "<AdamW steps>"}.
//       Parameter names are the stage modules' NamedParameters (the plan-free
//       names models/spec/hf_weights.h maps to Hugging Face's). A tied LM
//       head's replica (head.lm_head.weight) is stored in head.safetensors.
//   manifest.json
//       written by rank 0 last, after every layer file is in place: a step
//       directory without it is incomplete and never read.
// Because files are keyed by layer, a run saved under one plan resumes
// under another (other P, schedule, v or stage split): each rank reads the
// files of the layers its stages hold.
//
// Data parallelism (docs/DATA_PARALLEL.md): data-parallel rank 0 writes the
// layer files (every replica holds the same parameters); every replica reads
// them. With a sharded optimizer (ZeRO-1, "optimizer_shards": D > 1) the
// layer files hold the parameters only, and data-parallel rank d writes the
// AdamW state of its shard into one file per layer,
//   <layer>.adamw_shard_<d>_of_<D>.safetensors
//       <param>:exp_avg, <param>:exp_avg_sq  1-D, the elements of the
//                       parameter's flattened (row-major) moments that lie in
//                       shard d; __metadata__ "<param>:offset" (the first
//                       element's index) and "<param>:step";
//                       a parameter with no element in shard d is absent,
// listed in the manifest's "files" with "shard": d. A reader joins the D
// slices of each parameter (they must tile [0, numel) exactly) and re-slices
// them for its own run: any dp, ZeRO-1 or not, any plan.
//
// Tensor parallelism (plan tp_size t > 1): the files hold full tensors, so a
// checkpoint a TP run wrote is the one a t = 1 run of the same model writes
// (only written_by.tp_size tells them apart), and `export`, `generate` and
// any other plan read it unchanged. Saving, each TP group gathers its split
// parameters and their AdamW moments (checkpoint_io.h GatherFullLayers) and
// TP rank 0 of data-parallel rank 0 writes the layer files; with ZeRO-1 the
// moments are first joined over the data-parallel group (JoinShardMoments)
// and written into the layer files too ("optimizer_shards": 1: no shard
// files under TP). Reading, every rank reads the full tensors of its
// stages' layers and cuts its TP shard (ReadLayerFiles' `tp`), from any
// checkpoint: T = 1 or not, ZeRO-1 shard files or not.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "models/spec/model_config.h"

namespace pw::exec {

inline constexpr const char* kCheckpointFormat = "pipewright-checkpoint";
// 1: per-rank files (rank_<r>.pt) of one plan; 2: per-layer safetensors.
inline constexpr int kCheckpointVersion = 2;

// One file of a step directory, as the manifest lists it.
struct CheckpointFile {
  std::string name;    // file name inside the step directory, "block.3.safetensors"
  std::string layer;   // layer name, "block.3"
  int64_t bytes = 0;   // file size in bytes
  std::string digest;  // CheckpointFileDigest of the file (16 hex digits)
  int shard = -1;      // ZeRO-1 optimizer shard index d in [0, optimizer_shards); -1: a layer file
};

struct CheckpointManifest {
  int steps_done = 0;         // optimizer steps completed; the next step to run
  uint64_t seed = 0;          // --seed: data order and initial weights
  std::string dtype;          // "float32" | "float64": every tensor's dtype
  int64_t data_position = 0;  // sequences consumed = steps_done * batch_rows
  int batch_rows = 0;         // sequences per optimizer step (all replicas)
  int seq_length = 0;         // tokens per sequence
  // The model, as its Hugging Face config.json (pw::HfConfigJson): what a
  // resume, `generate` and `export` build.
  nlohmann::json model;
  int dp_size = 1;           // data-parallel replicas of the writing run
  int optimizer_shards = 1;  // ZeRO-1 shards of the optimizer state (1: in the layer files; D: shard files)
  // The plan that wrote it: reported, never a reason to refuse a resume.
  std::string plan_hash, schedule;
  int pp_size = 0;
  int tp_size = 1;  // tensor-parallel size (the files hold full tensors whatever it was)
  // One per layer, in layer order; then, with optimizer_shards D > 1, the D
  // shard files of each layer (layer order, then shard order).
  std::vector<CheckpointFile> files;
};

// ROOT/step_<steps_done, 6 digits>.
std::string CheckpointStepDir(const std::string& root, int steps_done);
// "<layer>.safetensors": the file name of a layer inside a step directory.
std::string CheckpointLayerFileName(const std::string& layer);
// "<layer>.adamw_shard_<shard>_of_<shards>.safetensors": ZeRO-1 shard file.
std::string CheckpointShardFileName(const std::string& layer, int shard, int shards);

// Digest of a file's bytes: FNV-1a 64 applied to its 64-bit little-endian
// words (then to the remaining bytes one by one), as 16 hex digits; reads
// the file once (several GB/s). Errors: NotFound naming `path`.
StatusOr<std::string> CheckpointFileDigest(const std::string& path);

// The manifest's model section of `model`.
nlohmann::json CheckpointModelJson(const ModelConfig& model);

// Writes step_dir/manifest.json atomically. Errors: InvalidArgument naming
// the file.
Status WriteManifest(const std::string& step_dir, const CheckpointManifest& manifest);
// Errors: NotFound (no manifest.json: not a complete checkpoint);
// InvalidArgument naming the file and field (a version 1 checkpoint of
// per-rank files is named as such).
StatusOr<CheckpointManifest> ReadManifest(const std::string& step_dir);
// The manifest's model, normalised (models/spec ParseModelConfig). Errors:
// InvalidArgument naming step_dir/manifest.json and the field.
StatusOr<ModelConfig> ManifestModel(const CheckpointManifest& manifest, const std::string& step_dir);

// `path` is a step directory (holding manifest.json) or a root holding
// step_* directories: returns the step directory to read (the latest
// complete one). `flag` names the option in errors ("--resume",
// "--checkpoint"). Errors: NotFound naming `path`.
StatusOr<std::string> ResolveCheckpointDir(const std::string& path, const std::string& flag = "--resume");

// Refuses, naming the field and both values, a checkpoint this run cannot
// continue: another model (any field of the model section, by its HF name),
// dtype, --seed (data order and initial weights), or batch shape
// (training.global_batch_size, training.seq_length: the data position would
// not continue). The plan (P, schedule, v, stages) may differ.
// InvalidArgument "--resume DIR: ...".
Status CheckResumable(const CheckpointManifest& manifest, const std::string& step_dir, const ModelConfig& model,
                      uint64_t seed, const std::string& dtype, int batch_rows, int seq_length);

// The manifest's entry of `layer`'s layer file. Errors: InvalidArgument
// naming the manifest when the layer has no file.
StatusOr<CheckpointFile> ManifestFileOf(const CheckpointManifest& manifest, const std::string& step_dir,
                                        const std::string& layer);

// The manifest's optimizer_shards shard files of `layer`, in shard order
// (empty when optimizer_shards is 1). Errors: InvalidArgument naming the
// manifest and the missing shard's file name.
StatusOr<std::vector<CheckpointFile>> ManifestShardFilesOf(const CheckpointManifest& manifest,
                                                           const std::string& step_dir, const std::string& layer);

// Checks a layer file against its manifest entry before it is read: present,
// the size the manifest records ("truncated: 1200 bytes, the manifest says
// 4096"), the digest ("corrupt: digest ..., the manifest says ...").
// Errors: NotFound / InvalidArgument naming the file.
Status VerifyCheckpointFile(const std::string& step_dir, const CheckpointFile& file);

}  // namespace pw::exec
