// Plan JSON (plan/plan.h ParsePlan) and everything `validate` and `show` do
// with a plan that parses: validation (eager, rendezvous, pair order),
// simulation, the hash, the terminal and SVG views, and the write/read round
// trip, which must give the same text.
#include "plan/plan.h"
#include "schedules/validate.h"
#include "tests/fuzz/fuzz_util.h"
#include "viz/ascii_timeline.h"
#include "viz/load.h"
#include "viz/svg_timeline.h"

using namespace pw;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  StatusOr<Plan> plan = ParsePlan(fuzz::Text(data, size), "fuzz.json");
  if (!plan.ok()) {
    fuzz::CheckPrintable(plan.status().message());
    return 0;
  }
  const std::string text = PlanToJson(*plan);
  StatusOr<Plan> again = ParsePlan(text, "round-trip.json");
  fuzz::Check(again.ok(), "a written plan does not read back",
              again.ok() ? "" : again.status().message() + "\n" + text);
  fuzz::Check(PlanToJson(*again) == text, "plan round trip changes the text", text);
  (void)PlanHash(*plan);
  Program program = PlanProgram(*plan);
  ValidateOptions eager;
  eager.rendezvous = false;
  Status st = ValidateProgram(program, eager);
  if (!st.ok()) {
    fuzz::CheckPrintable(st.message());
    return 0;
  }
  (void)CheckRendezvous(program);
  (void)CheckPairOrder(program);
  StatusOr<viz::Timeline> t = viz::TimelineOfPlan(*plan, "fuzz.json");
  if (!t.ok()) {
    fuzz::CheckPrintable(t.status().message());
    return 0;
  }
  viz::AsciiOptions narrow;
  narrow.width = 40;
  (void)viz::RenderAscii(*t, narrow);
  (void)viz::RenderAscii(*t);
  (void)viz::SvgDocument(*t);
  return 0;
}
