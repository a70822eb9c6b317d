// The learned cost model's inputs: one fixed-length vector of numbers per
// (problem, candidate, arch), computed from what a record holds (its shape,
// schedule parameters and arch), so every measured record in a database is
// a training sample without building its kernel again. A value that does
// not apply (a pointwise schedule's `rows`) is NaN, which XGBoost treats as
// missing.
#pragma once

#include <string>
#include <vector>

#include "search/interfaces.h"

namespace fusekit {

// Bumped whenever a feature is added, removed or computed differently: a
// saved model of another schema is refused (retrain it).
constexpr int kCostFeatureSchema = 4;

// The candidate's config with every parameter it lacks that its template's
// space gives an absent value (a record written before the parameter was
// added): "threads=256" of an old Halide row record is "lanes=0 threads=256 vec=1".
Config complete_config(const Candidate& candidate, size_t bytes_per_element, const ArchLimits& arch);

// The kind of schedule a candidate is, "BACKEND pointwise|rows|general"
// ("halide rows"): a model trained on no record of a domain does not
// predict for it (LearnedCostModel::covers).
std::string cost_domain(const Candidate& candidate);

// The names of the features, in order (the saved model lists them).
const std::vector<std::string>& cost_feature_names();

// The features of one candidate at one problem on one arch.
std::vector<float> cost_features(const Problem& problem, size_t bytes_per_element, const Candidate& candidate,
                                 const ArchLimits& arch);

// What the model learns to predict is time over this floor (microseconds):
// a 2 µs launch plus the problem's bytes at the arch's datasheet bandwidth.
double roofline_us(const Problem& problem, size_t bytes_per_element, const ArchLimits& arch);

}  // namespace fusekit
