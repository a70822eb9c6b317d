// CUDA device helpers of the row-reduction kernels, printed after
// cuda_prelude() (generator/nvrtc/cuda_expr.h) by the row printer.
#pragma once

namespace fusekit {

// fk_load / fk_load_words / fk_unwords, fk_row_combine, and the sm_90
// cluster combine (fk_cluster_combine, fk_cluster_arrive, fk_cluster_wait).
const char* row_helpers_cuda();
// fk_copy_async, fk_copy_commit, fk_copy_wait_prior (persist > 0, sm_80+).
const char* row_async_copy_helpers_cuda();
// fk_stat and its merges: the combines of a reduction pair (onepass=1).
const char* row_pair_helpers_cuda();
// fk_load_hint / fk_load_words_hint, for cuda_load_hint_helpers() (hint > 0).
const char* row_hint_helpers_cuda();

}  // namespace fusekit
