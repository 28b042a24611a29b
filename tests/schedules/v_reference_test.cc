// Our V-Half, V-Min, V-auto and ZB-V against the authors' own schedulers
// (arXiv 2405.15362; sail-sg/zero-bubble-pipeline-parallelism): every cell
// of tests/schedules/data/v_reference.tsv with P <= kMaxP (8; 4 under the sanitizers; the file's header
// says which scripts and commits made it; the cells' costs, memory and
// limits are in v_reference_cells.h). Ours must cost no more than the
// reference (tolerance 0 at the table's 6 decimals; peaks at its 4) with an activation peak
// no higher, and must not be refused. Prints the worst difference per
// family. bench/v_reference_bench runs every cell (P = 16 too).
#include <gtest/gtest.h>

#include <cstdio>
#include <map>

#include "tests/sanitized.h"
#include "tests/schedules/v_reference_cells.h"

namespace pw {
namespace {

// P = 4 only under the sanitizers, where the P = 8 cells take minutes
// (tests/sanitized.h).
constexpr int kMaxP = testing::kSanitized ? 4 : 8;

TEST(VReference, NoWorseThanTheAuthorsSchedulers) {
  const auto cells = vref::ReadCells(std::string(PW_SOURCE_DIR) + "/tests/schedules/data/v_reference.tsv");
  ASSERT_GT(cells.size(), 100u) << "tests/schedules/data/v_reference.tsv missing or short";
  std::map<std::string, double> worst;
  std::map<std::string, int> count;
  for (const auto& c : cells) {
    if (c.P > kMaxP || c.ref_none) continue;
    const std::string where =
        c.family + " P=" + std::to_string(c.P) + " m=" + std::to_string(c.m) + " " + c.profile + " limit " + c.limit;
    const vref::Outcome o = vref::RunCell(c);
    ASSERT_TRUE(o.ok) << where << ": " << o.error;
    const double d = vref::CostExcess(c, o);
    EXPECT_LE(d, 5e-7) << where << ": cost " << o.cost << " vs reference " << c.ref_cost;
    EXPECT_LE(vref::PeakExcess(c, o), 5e-9) << where << ": peak " << o.peak << " vs reference " << c.ref_peak;
    if (!count[c.family]++ || d > worst[c.family]) worst[c.family] = d;
  }
  for (const auto& [family, d] : worst)
    std::printf("%s: %d cells, worst (ours - reference) cost %+.6f\n", family.c_str(), count[family], d);
}

}  // namespace
}  // namespace pw
