#include "search/record_fields.h"

namespace fusekit {

void set_run_fields(const DeviceInfo& device, const Provenance& prov, TuningRecord* r) {
  r->gpu_name = device.gpu_name;
  r->sm_count = device.sm_count;
  r->driver_version = device.driver_version;
  r->cuda_version = prov.cuda_version;
  r->halide_version = prov.halide_version;
  r->fusekit_version = prov.fusekit_version;
  r->host = prov.host;
}

void set_measurement(const MeasureResult& m, TuningRecord* r) {
  r->status = m.status;
  r->error = m.error;
  r->verify_error = m.verify_error;
  r->median_us = m.median_us;
  r->p20_us = m.p20_us;
  r->p80_us = m.p80_us;
  r->samples = static_cast<int>(m.samples_us.size());
}

}  // namespace fusekit
