// The tune that the measuring worker's tests run, on the fake device and on
// a GPU alike: a catalog op in f32 over one shape, through a builder that
// injects a hanging and a faulting kernel among the candidates.
#pragma once

#include <cstdint>
#include <string>

#include "generator/candidate_workload.h"
#include "generator/candidates/catalog.h"
#include "search/tuner.h"

namespace fusekit::testing {

struct InjectedTune {
  TuneTask task;
  TunerOptions options;
};

// `cand`'s tune over `elements` through `builder`: NVRTC only, `budget`
// candidates, no hint twins, a launch that hangs given up after `deadline_s`.
inline InjectedTune injected_tune(const FusionCandidate& cand, const Workload& workload, Builder* builder,
                                  int64_t elements, size_t budget, double deadline_s) {
  InjectedTune t;
  t.task.workload = &workload;
  t.task.builder = builder;
  t.task.pattern = cand.name;
  t.task.pipeline_text = canonical_pipeline_text(cand, DType::kF32);
  t.task.pipeline_hash = pipeline_hash(t.task.pipeline_text);
  t.task.domains = {{elements}};
  t.task.verify_domain = cand.odd_domain();
  t.task.kind = cand.template_kind();
  t.options.backends = {Backend::kNvrtc};
  t.options.budget = budget;
  t.options.hint_twins = 0;
  t.options.measure.launch_deadline_s = deadline_s;
  return t;
}

}  // namespace fusekit::testing
