// pw_make_plan: writes an executable plan (PLAN_FORMAT.md + extra model and
// training fields) for a GPT config, straight from the schedules API. A
// stop-gap for launch/demo.sh and manual runs until `pipewright plan` writes
// these fields itself.
//
//   pw_make_plan --schedule 1f1b --pp 4 -m 8 --model-config cfg.json
//                --seq-length 64 --micro-batch-size 4 --out plan.json
#include <CLI/CLI.hpp>

#include <cstdio>
#include <fstream>

#include "executor/plan_builder.h"

int main(int argc, char** argv) {
  CLI::App app{"pw_make_plan: write an executable pipeline plan for a GPT config"};
  pw::exec::PlanSpec spec;
  std::string config_path, out_path, dtype = "float32";
  app.add_option("--schedule", spec.schedule, "schedule family (gpipe, 1f1b, interleaved-1f1b, zb-h1, ...)");
  app.add_option("--pp", spec.pp_size, "pipeline ranks P")->required();
  app.add_option("-m,--num-microbatches", spec.num_microbatches, "microbatches per step")->required();
  app.add_option("--virtual-stages", spec.virtual_stages, "stages per rank (0 = family default)");
  app.add_option("--model-config", config_path, "HF config.json of the model")->required();
  app.add_option("--seq-length", spec.seq_length, "tokens per sequence")->required();
  app.add_option("--micro-batch-size", spec.micro_batch_size, "rows per microbatch");
  app.add_option("--microbatch-sizes", spec.microbatch_sizes, "rows of each microbatch (overrides --micro-batch-size)")
      ->delimiter(',');
  app.add_option("--layers-per-stage", spec.layers_per_stage, "layers of each stage, e.g. 3,2,2,3")->delimiter(',');
  app.add_option("--dtype", dtype, "float32 or float64 (message and stash sizes)");
  app.add_option("--clip-grad-norm", spec.clip_grad_norm,
                 "record global-norm clipping (training.global_barrier = true); 0 = none");
  app.add_option("--out", out_path, "plan file to write")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  std::ifstream in(config_path);
  if (!in) {
    std::fprintf(stderr, "pw_make_plan: --model-config %s: cannot open\n", config_path.c_str());
    return 2;
  }
  try {
    spec.model = nlohmann::json::parse(in);
  } catch (const nlohmann::json::exception& e) {
    std::fprintf(stderr, "pw_make_plan: --model-config %s: %s\n", config_path.c_str(), e.what());
    return 2;
  }
  spec.bytes_per_element = dtype == "float64" ? 8 : 4;
  pw::StatusOr<pw::Plan> plan = pw::exec::BuildPlan(spec);
  if (!plan.ok()) {
    std::fprintf(stderr, "pw_make_plan: %s\n", plan.status().ToString().c_str());
    return plan.status().code() == pw::StatusCode::kInvalidArgument ? 2 : 1;
  }
  pw::Status st = pw::WriteFileAtomic(out_path, pw::PlanToJson(*plan));
  if (!st.ok()) {
    std::fprintf(stderr, "pw_make_plan: --out %s: %s\n", out_path.c_str(), st.ToString().c_str());
    return 1;
  }
  std::printf("wrote %s: %s, P=%d, %d stages, m=%d, predicted makespan %.4f s, bubble %.3f\n", out_path.c_str(),
              plan->schedule.c_str(), plan->pp_size, plan->num_stages, plan->num_microbatches,
              plan->predicted.makespan_s, plan->predicted.bubble_ratio);
  return 0;
}
