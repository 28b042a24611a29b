// PyTorch pipelining CSV (schedules/csv.h) and action strings: parse, then
// what `validate` and `show` do (validate, lower, simulate), then the CSV
// writer, whose output must read back as the same program.
#include "schedules/csv.h"
#include "schedules/pipeline.h"
#include "schedules/validate.h"
#include "tests/fuzz/fuzz_util.h"

using namespace pw;

namespace {

bool SameProgram(const Program& a, const Program& b) {
  return a.pp_size == b.pp_size && a.num_stages == b.num_stages && a.num_microbatches == b.num_microbatches &&
         a.stage_to_rank == b.stage_to_rank && a.ranks == b.ranks;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  StatusOr<Program> program = ParseScheduleCsv(fuzz::Text(data, size), "fuzz.csv");
  if (!program.ok()) {
    fuzz::CheckPrintable(program.status().message());
    return 0;
  }
  const CsvFormat format = program->HasComms() ? CsvFormat::kComputeComms : CsvFormat::kComputeOnly;
  const std::string csv = ScheduleToCsv(*program, format);
  StatusOr<Program> again = ParseScheduleCsv(csv, "round-trip.csv");
  fuzz::Check(again.ok(), "a written CSV does not read back", again.ok() ? "" : again.status().message() + "\n" + csv);
  fuzz::Check(SameProgram(*program, *again), "CSV round trip changes the program", csv);
  ValidateOptions eager;
  eager.rendezvous = false;
  Status st = ValidateProgram(*program, eager);
  if (!st.ok()) {
    fuzz::CheckPrintable(st.message());
    return 0;
  }
  if (program->HasComms()) (void)CheckRendezvous(*program);
  StatusOr<PipelineResult> run = SimulateOrder(*program, UniformCosts(program->num_stages));
  if (!run.ok()) fuzz::CheckPrintable(run.status().message());
  return 0;
}
