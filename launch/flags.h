// Flags that several subcommands share, registered in one place so that one
// word means one thing on every subcommand (same names, same values, same
// help): the pipeline size, stages per rank, the dtype, and the checkpoint a
// command reads.
#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace pw::cli {

// --pp (alias --pipeline-model-parallel-size, Megatron-LM's name): pipeline
// ranks P. CLI11's messages name the option by its first name, --pp.
CLI::Option* AddPipelineSizeFlag(CLI::App* cmd, int* pp, const std::string& help = "pipeline ranks P");

// --virtual-stages (alias --num-virtual-stages-per-pipeline-rank, Megatron-
// LM's name): stages per pipeline rank v.
CLI::Option* AddVirtualStagesFlag(CLI::App* cmd, int* v, const std::string& help);

// The element type of weights, activations and optimizer state, in the plan
// format's words (docs/PLAN_FORMAT.md#training): bf16 (mixed precision:
// bf16 weights and activations, fp32 gradients, master weights and AdamW
// state), fp32, fp64. The executor trains fp32 or fp64 (LibTorch's float32
// and float64); bf16 plans are for other runtimes. The spellings float32,
// float64 (and float16/bfloat16 for bf16) that run and profile took before
// are read as fp32, fp64, bf16 with a note on stderr naming the command.
inline constexpr char kDtypeHelp[] =
    "bf16 (mixed precision: bf16 weights and activations, fp32 gradients and AdamW state, 18 B/param) | fp32 "
    "(16 B/param) | fp64 (32 B/param)";

// Adds --dtype to `cmd` storing the canonical name (bf16, fp32, fp64) in
// `dtype`; `help` follows kDtypeHelp. Any other value: CLI11's error (exit
// 2) naming --dtype and the accepted words.
CLI::Option* AddDtypeFlag(CLI::App* cmd, std::string* dtype, const std::string& help);

// The canonical dtype name of `text` (bf16, fp32, fp64; the old float32,
// float64, bfloat16 spellings mapped), or "" when it is none of them.
std::string CanonicalDtype(const std::string& text);

// --checkpoint DIR and --plan FILE of the commands that read a checkpoint
// (generate, export): DIR is a step_<n> checkpoint (`run --save`) or a root
// of step_<n>/ directories (`run --checkpoint-dir`, the latest is read);
// --plan, optional, makes the command refuse a checkpoint whose model is
// not the plan's.
void AddCheckpointSourceFlags(CLI::App* cmd, std::string* checkpoint_dir, std::string* plan_path);

}  // namespace pw::cli
