// A kernel package: the table of compiled kernel variants that `fusekit build`
// emits, and the dispatcher that picks and launches one per call.
//
// Selection, per call:
//   arch:  exact-arch image -> same-major cubin (minor <= device minor) -> PTX (JIT);
//          a cubin the driver refuses to load (a newer driver or arch) falls
//          back to the portable PTX for the call, noted in load_notes()
//   shape: exact shape bucket -> nearest tuned bucket -> the generic variant
//          (row reductions: the row length's bucket first, then the element
//          count's; see fusekit/shape_bucket.h). A variant compiled for one
//          row length is taken only for that length, and before any generic
//          variant (the nearest element count among several).
//   alignment: a variant whose pointer alignment the call's pointers do not
//          meet is skipped (the generic variant needs only element alignment)
// Modules are loaded lazily, once per CUDA context, under a mutex; launches go
// to the caller's stream with one cuLaunchKernel, so calls are safe inside
// CUDA graph capture. Nothing here throws.
#pragma once

#include <cuda.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

// One kernel parameter (see KernelParam): kind 0 input, 1 output, 2 scalar
// parameter, 3 shape expression; type 0 ptr, 1 bool, 2 i32, 3 i64, 4 f32.
typedef struct fusekit_param_desc {
  int kind;
  int type;
  int index;
  const char* expr;  // LaunchExpr text for shape parameters, else ""
} fusekit_param_desc;

// One compiled kernel variant, as emitted into a package.
typedef struct fusekit_variant_desc {
  const char* op;          // "sigmoid_mul_tanh_add"
  int dtype;               // 0 f32, 1 f16, 2 bf16
  int bucket_log2;         // tuned for n <= 2^bucket_log2; -1 for the generic variant
  int sm;                  // arch the image is for (90); 0 for the portable PTX fallback
  int image_kind;          // 0 cubin, 1 ptx
  const unsigned char* image;
  size_t image_size;
  const char* entry;
  int block[3];
  const char* grid[3];     // LaunchExpr text
  int shared_bytes;
  int pointer_alignment;   // bytes every tensor pointer must be aligned to
  const fusekit_param_desc* params;
  int num_params;
  const char* backend;     // "nvrtc" / "halide"
  const char* schedule;    // Config text
  const char* record_id;   // tuning record it came from ("" for generic)
  int measured;            // 1 measured on a GPU, 0 modeled or generic
  int index32;             // 1: 32-bit indexing (Halide kernels), at most 2^31 - 1 elements
  int row_log2;            // row reductions: tuned for rows of <= 2^row_log2 columns; -1 otherwise
  int row_length;          // > 0: compiled for rows of exactly this many columns (taken for no
                           // other row length); 0: any
  int row_multiple;        // > 1: taken only for rows of a multiple of this many columns; 0 or 1:
                           // any (tables written before the field leave it 0)
} fusekit_variant_desc;

#ifdef __cplusplus
}  // extern "C"

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "fusekit/dtype.h"
#include "fusekit/kernel_artifact.h"
#include "fusekit/kernel_launch.h"
#include "fusekit/status.h"

namespace fusekit {

// What selection needs to know of the device.
struct DeviceProps {
  int sm = 0;          // 90
  int sm_count = 0;
  // Take the portable PTX even where a cubin fits: set from the environment
  // variable FUSEKIT_PTX_ONLY (non-empty, not "0") when a context is first
  // seen, to test the JIT fallback on a GPU the package has cubins for.
  bool ptx_only = false;
};

// The outcome of selection, with the fallback steps taken.
struct Selection {
  const fusekit_variant_desc* variant = nullptr;
  const char* arch_step = "";   // "exact arch", "same-major cubin", "ptx jit", "ptx jit (cubin failed to load)"
  const char* shape_step = "";  // "exact row length", "exact bucket", "nearest bucket", "generic"
  std::string describe() const;
};

// Picks a variant from a table. `row_length` is the innermost extent (a row
// reduction's row; -1 when unknown: the element count alone decides).
// `pointer_alignment` is the largest power of two dividing every tensor
// pointer of the call (use 256 when unknown).
Status select_variant(const fusekit_variant_desc* table, size_t count, const char* op, DType dtype,
                      const DeviceProps& device, int64_t elements, int64_t row_length, int pointer_alignment,
                      Selection* out);

// Largest power of two (up to 256) dividing every pointer.
int common_alignment(const std::vector<CUdeviceptr>& pointers);

// A package's table plus its lazily loaded modules.
class Package {
 public:
  // `driver` null: the process's libcuda (load_cuda_driver). Tests and host
  // benchmarks pass a table of fakes.
  Package(const fusekit_variant_desc* table, size_t count, const CudaDriver* driver = nullptr);
  ~Package();
  Package(const Package&) = delete;
  Package& operator=(const Package&) = delete;

  // Selects for the current context's device and launches on `stream`.
  // Zero elements: success, nothing launched.
  // Thread-safe. After a context's first call for an (op, dtype, shape
  // bucket, pointer alignment), the selection and the evaluated launch of the
  // last shape are reused: a repeated call does no selection, allocation or
  // string work.
  Status launch(const char* op, DType dtype, const LaunchShape& shape, const LaunchArgs& args, CUstream stream);
  Status launch(const std::string& op, DType dtype, const LaunchShape& shape, const LaunchArgs& args,
                CUstream stream) {
    return launch(op.c_str(), dtype, shape, args, stream);
  }
  // Which variant a call would take on the current device, and why.
  Status explain(const std::string& op, DType dtype, int64_t elements, int64_t row_length, int pointer_alignment,
                 Selection* out);

  // One line per cubin that failed to load in a context and the portable
  // PTX JIT-loaded in its place (what the driver said, which PTX), oldest
  // first. Thread-safe.
  std::vector<std::string> load_notes();

  const fusekit_variant_desc* table() const { return table_; }
  size_t size() const { return count_; }

 private:
  struct Loaded;
  Status device_props(const CudaDriver& driver, CUcontext ctx, DeviceProps* props);
  Status function_for(const CudaDriver& driver, CUcontext ctx, const fusekit_variant_desc* v, Loaded** out);
  // The loaded kernel of a selection; where its cubin does not load, that of
  // the portable PTX selected for the same call (`sel` updated, the cubin
  // remembered as failed for the context).
  Status load_selected(const CudaDriver& driver, CUcontext ctx, const DeviceProps& props, const char* op, DType dtype,
                       int64_t elements, int64_t row_length, int pointer_alignment, Selection* sel, Loaded** out);
  // `sel` moved to the portable PTX when its cubin failed to load before.
  void avoid_failed_cubin(CUcontext ctx, const DeviceProps& props, const char* op, DType dtype, int64_t elements,
                          int64_t row_length, int pointer_alignment, Selection* sel);

  Status driver_and_context(const CudaDriver** d, CUcontext* ctx) const;

  // Recent selections, checked before select_variant (round-robin).
  struct Recent {
    CUcontext ctx = nullptr;
    DType dtype = DType::kF32;
    int bucket = 0;
    int row_bucket = 0;
    int64_t row_length = 0;  // compared only when the table has variants of one row length
    int alignment = 0;
    Loaded* loaded = nullptr;
    int sm_count = 0;
  };
  static constexpr int kRecent = 8;

  const fusekit_variant_desc* table_;
  size_t count_;
  const CudaDriver* driver_;
  bool fixed_rows_ = false;  // some variant is taken for some row lengths of a bucket only
  std::mutex mutex_;
  std::vector<std::unique_ptr<Loaded>> loaded_;  // never shrinks: Recent points into it
  std::vector<std::pair<CUcontext, const fusekit_variant_desc*>> failed_cubins_;
  std::vector<std::string> load_notes_;
  Recent recent_[kRecent];
  int next_recent_ = 0;
};

// Parses a variant's launch description; kInvalidArgument names the field.
Status variant_artifact(const fusekit_variant_desc& v, KernelArtifact* out);

}  // namespace fusekit
#endif
