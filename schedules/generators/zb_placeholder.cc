// TEMPORARY until the zero-bubble generators land: refuses every request.
#include "schedules/generators/generators.h"
namespace pw {
StatusOr<Program> GenerateZBH1(const ScheduleRequest&) { return Status::Internal("zb-h1 not built yet"); }
StatusOr<Program> GenerateZBH2(const ScheduleRequest&) { return Status::Internal("zb-h2 not built yet"); }
StatusOr<Program> GenerateZBV(const ScheduleRequest&) { return Status::Internal("zb-v not built yet"); }
StatusOr<Program> GenerateZBAuto(const ScheduleRequest&) { return Status::Internal("zb-auto not built yet"); }
}  // namespace pw
