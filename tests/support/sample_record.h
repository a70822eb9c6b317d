// One valid tuning record for store, selection and import tests: tests start
// from it and set only the fields they are about.
#pragma once

#include <string>

#include "tunedb/tune_db.h"

namespace fusekit::testing {

// A measured relu_add f32 record at 4096 elements on an H200 (sm_90), with a
// fresh id, p20/p80 at 0.9x/1.1x the median and the current time.
inline TuningRecord sample_record(const std::string& backend = "nvrtc", double median_us = 1.0,
                                  RecordStatus status = RecordStatus::kOk) {
  TuningRecord r;
  r.id = new_record_id();
  r.pipeline_hash = "abc123";
  r.pipeline_text = "layout flat; out = x";
  r.pattern = "relu_add";
  r.dtype = "f32";
  r.shape = "4096";
  r.shape_bucket = "n<=2^12";
  r.arch = "sm_90";
  r.gpu_name = "NVIDIA H200";
  r.sm_count = 132;
  r.backend = backend;
  r.params = "ept=1 threads=256 vec=4";
  r.status = status;
  r.median_us = median_us;
  r.p20_us = median_us * 0.9;
  r.p80_us = median_us * 1.1;
  r.samples = 100;
  r.timestamp = utc_timestamp();
  return r;
}

}  // namespace fusekit::testing
