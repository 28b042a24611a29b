// Uses an installed pipewright: generates 1F1B for P=4, m=8 with the
// registry, lowers and simulates it with unit costs, loads a shipped model
// config and device of the installed tree and plans it with the planner.
// Prints
//   makespan <time units>
//   parameters <count>
//   planned <schedule> on P=4: step <seconds> s
// and exits 1 naming the failing step.
#include <cstdio>
#include <string>

#include "models/spec/device.h"
#include "models/spec/footprint.h"
#include "models/spec/model_config.h"
#include "planner/planner.h"
#include "schedules/lower.h"
#include "schedules/registry.h"
#include "schedules/simulate.h"

namespace {

int Fail(const char* step, const pw::Status& status) {
  std::fprintf(stderr, "pw_consumer: %s: %s\n", step, status.ToString().c_str());
  return 1;
}

}  // namespace

int main() {
  pw::ScheduleRequest request;
  request.schedule = "1f1b";
  request.pp_size = 4;
  request.num_microbatches = 8;
  request.costs = pw::UniformCosts(4);  // F = I = W = 1 time unit, B = I + W
  pw::StatusOr<pw::Program> compute = pw::GenerateSchedule(request);
  if (!compute.ok()) return Fail("GenerateSchedule", compute.status());
  pw::StatusOr<pw::Program> lowered = pw::AddSendRecv(*compute, request.costs);
  if (!lowered.ok()) return Fail("AddSendRecv", lowered.status());
  pw::StatusOr<pw::SimResult> sim = pw::Simulate(*lowered, request.costs);
  if (!sim.ok()) return Fail("Simulate", sim.status());
  std::printf("makespan %g\n", sim->makespan_s);

  // The planner's model input: a shipped HF config of the installed tree.
  pw::PlannerModel model;
  pw::StatusOr<pw::ModelConfig> config =
      pw::LoadModelConfig(std::string(PW_CONSUMER_MODELS_DIR) + "/configs/gpt2.json");
  if (!config.ok()) return Fail("LoadModelConfig", config.status());
  model.config = *config;
  std::printf("parameters %lld\n", static_cast<long long>(pw::TotalParameters(*model.config)));
  // Plan it: one shipped device, one schedule, the planner's search.
  pw::StatusOr<pw::DeviceSpec> device =
      pw::LoadDeviceSpec(std::string(PW_CONSUMER_MODELS_DIR) + "/devices/h100-80gb.json");
  if (!device.ok()) return Fail("LoadDeviceSpec", device.status());
  model.device = *device;
  pw::PlannerOptions options;
  options.pp_size = 4;
  options.num_microbatches = 8;
  options.micro_batch_size = 1;
  options.seq_length = 1024;
  options.schedules = {"1f1b"};
  options.virtual_stages = 1;
  options.recompute = pw::Recompute::kNone;
  options.find_min_pp = false;
  pw::StatusOr<pw::SearchResult> search = pw::SearchPlans(model, options);
  if (!search.ok()) return Fail("SearchPlans", search.status());
  const pw::Candidate& best = search->candidates[search->chosen];
  std::printf("planned %s on P=4: step %g s\n", best.schedule.c_str(), best.step_s);
  return 0;
}
