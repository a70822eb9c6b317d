// How well the analytic cost model ranks schedules, against measurements
// (generator/model_regret.h).
//
//   model_regret RECORDS.jsonl [RECORDS.jsonl ...] [--detail]
//
// Printed per template kind, dtype and backend: shapes, median, 90th
// percentile and worst regret, and how many shapes are within 5 % and 10 %
// of the best; --detail lists every shape with the model's pick.
#include <algorithm>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "common/errors.h"
#include "bench/model_regret_lib.h"

namespace {

double quantile(std::vector<double> v, double q) {
  std::sort(v.begin(), v.end());
  return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
}

int run(int argc, char** argv) {
  bool detail = false;
  std::vector<std::string> paths;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--detail") == 0) detail = true;
    else paths.push_back(argv[i]);
  }
  const auto records = fusekit::read_measured_records(paths);
  if (records.empty()) throw fusekit::UserError("no measured records; usage: model_regret RECORDS.jsonl... [--detail]");
  const auto kinds = fusekit::model_regret(records);
  if (detail)
    for (const auto& [kind, cases] : kinds)
      for (const auto& c : cases)
        std::printf("%-18s %-4s %-12s %-6s pick %-52s %8.1f us, best %8.1f us, regret %6.1f %%\n", c.pattern.c_str(),
                    c.dtype.c_str(), c.shape.c_str(), c.backend.c_str(), c.pick.c_str(), c.pick_us, c.best_us,
                    100.0 * c.regret());
  std::printf("%-24s %6s %9s %9s %9s %7s %7s\n", "kind dtype backend", "shapes", "median %", "p90 %", "worst %",
              "<=5 %", "<=10 %");
  for (const auto& [kind, cases] : kinds) {
    std::vector<double> v;
    for (const auto& c : cases) v.push_back(c.regret());
    const auto within = [&](double x) { return std::count_if(v.begin(), v.end(), [x](double r) { return r <= x; }); };
    std::printf("%-24s %6zu %9.1f %9.1f %9.1f %7zu %7zu\n", kind.c_str(), v.size(), 100.0 * quantile(v, 0.5),
                100.0 * quantile(v, 0.9), 100.0 * quantile(v, 1.0), static_cast<size_t>(within(0.05)),
                static_cast<size_t>(within(0.10)));
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "model_regret: %s\n", e.what());
    return 2;
  }
}
