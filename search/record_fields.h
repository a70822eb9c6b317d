// The fields of a tuning record that every measured kernel fills alike
// (the tuner's candidates, the cuBLASLt GEMM points): the device and
// toolchain it ran on, and its measurement.
#pragma once

#include "search/interfaces.h"
#include "search/tuner.h"
#include "tunedb/tune_db.h"

namespace fusekit {

// GPU name, SM count, driver, and the versions and host of `prov`.
void set_run_fields(const DeviceInfo& device, const Provenance& prov, TuningRecord* r);
// Status, errors, the median and percentiles, and the sample count of `m`.
void set_measurement(const MeasureResult& m, TuningRecord* r);

}  // namespace fusekit
