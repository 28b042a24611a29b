// `pipewright export`: write a checkpoint (`run --save DIR` or
// `--checkpoint-dir ROOT`) as a Hugging Face model directory (config.json +
// safetensors), in one process:
//   pipewright export --checkpoint ckpt/ -o hf-model/
#include <cstdio>
#include <memory>
#include <optional>
#include <string>

#include "executor/checkpoint/hf_io.h"
#include "launch/commands.h"
#include "launch/flags.h"

namespace pw::cli {

namespace {

struct ExportOptions {
  std::string plan_path;
  std::string checkpoint_dir;
  std::string out_dir;
  int64_t max_shard_bytes = safetensors::kDefaultMaxShardBytes;
};

Status RunExport(const ExportOptions& o) {
  std::optional<Plan> plan;
  if (!o.plan_path.empty()) {
    PW_ASSIGN_OR_RETURN(Plan p, ReadPlanFile(o.plan_path));
    plan = std::move(p);
  }
  PW_ASSIGN_OR_RETURN(exec::ExportSummary s,
                      exec::ExportHfModel(o.checkpoint_dir, o.out_dir, o.max_shard_bytes, plan ? &*plan : nullptr));
  std::printf("exported %d tensors (%lld bytes) to %s: config.json + %d safetensors file%s\n", s.tensors,
              static_cast<long long>(s.bytes), o.out_dir.c_str(), s.files, s.files == 1 ? "" : "s + index");
  return Status::Ok();
}

}  // namespace

void RegisterExportCommand(CLI::App& app, CommandContext& ctx) {
  auto o = std::make_shared<ExportOptions>();
  CLI::App* cmd = app.add_subcommand("export", kExportDescription);
  AddCheckpointSourceFlags(cmd, &o->checkpoint_dir, &o->plan_path);
  cmd->add_option("-o,--output", o->out_dir, "new directory to write (must not exist, or be empty)")->required();
  cmd->add_option("--max-shard-bytes", o->max_shard_bytes, "shard the weights above this many bytes per file")
      ->capture_default_str();
  cmd->callback([o, &ctx] {
    Status st = RunExport(*o);
    if (!st.ok()) Fail(ctx, "export", st);
  });
}

}  // namespace pw::cli
