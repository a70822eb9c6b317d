// The NVRTC kernel of any candidate, by layout.
#include "generator/nvrtc/kernel_printer.h"

#include "generator/nvrtc/pointwise_printer.h"
#include "generator/nvrtc/row_printer.h"

namespace fusekit {

PrintedKernel print_nvrtc_kernel(const FusionCandidate& candidate, const Pipeline& pipeline, const Config& config,
                                 const std::string& entry) {
  return candidate.reduces() ? print_row_reduction_kernel(candidate, pipeline, config, entry)
                             : print_pointwise_kernel(candidate, pipeline, config, entry);
}

}  // namespace fusekit
