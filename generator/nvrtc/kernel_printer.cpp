// The NVRTC kernel of any candidate, by layout.
#include "generator/nvrtc/kernel_printer.h"

#include "common/errors.h"
#include "generator/nvrtc/pointwise_printer.h"
#include "generator/nvrtc/row_printer.h"
#include "schedules/general_layout_template.h"

namespace fusekit {

PrintedKernel print_nvrtc_kernel(const FusionCandidate& candidate, const Pipeline& pipeline, const Config& config,
                                 const std::string& entry) {
  if (candidate.general)
    throw UserError("nvrtc backend: " + candidate.name + " has a general layout; " +
                    GeneralLayoutTemplate::nvrtc_refusal() + " (use --backend halide)");
  return candidate.reduces() ? print_row_reduction_kernel(candidate, pipeline, config, entry)
                             : print_pointwise_kernel(candidate, pipeline, config, entry);
}

}  // namespace fusekit
