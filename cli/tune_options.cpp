#include "cli/tune_options.h"

#include "common/errors.h"

namespace fusekit {

TunerOptions tuner_options(const po::variables_map& vm) {
  TunerOptions options;
  options.backends.clear();
  for (const auto& b : split_list(vm["backend"].as<std::vector<std::string>>()))
    options.backends.push_back(parse_backend(b));
  if (options.backends.empty()) throw UserError("--backend is empty; give nvrtc, halide or both");
  options.budget = static_cast<size_t>(int_at_least(vm, "budget", 1, "at least 1"));
  options.specialize = static_cast<size_t>(int_at_least(vm, "specialize", 0, "0 (off) or more"));
  options.hint_twins = static_cast<size_t>(int_at_least(vm, "hint-twins", 0, "0 (off) or more"));
  if (vm.count("guided-picks"))
    options.guided.picks_per_problem =
        static_cast<size_t>(int_at_least(vm, "guided-picks", 0, "0 (shared picks) or more"));
  options.rank_specialized = vm.count("guided-rank-specialized") > 0;
  options.seed = static_cast<uint64_t>(vm["seed"].as<int>());
  options.measure.launch_deadline_s = vm["launch-deadline"].as<double>();
  if (!(options.measure.launch_deadline_s >= 0.1 && options.measure.launch_deadline_s <= 86400))
    throw UserError("--launch-deadline " + std::to_string(options.measure.launch_deadline_s) +
                    " must be between 0.1 and 86400 seconds");
  const std::string timing = vm["timing"].as<std::string>();
  if (timing != "queued" && timing != "issued")
    throw UserError("--timing '" + timing + "' is not a timing; give queued or issued");
  options.measure.queued = timing == "queued";
  return options;
}

}  // namespace fusekit
