// KernelArtifact: everything needed to launch one compiled kernel with the
// CUDA driver API alone: the image (cubin or PTX), the entry symbol, the block
// shape, and the grid and arguments as LaunchExprs over the problem shape.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "fusekit/launch_expr.h"
#include "fusekit/status.h"

namespace fusekit {

enum class ImageKind { kCubin, kPtx };
const char* image_kind_name(ImageKind kind);

// One kernel parameter, in launch order.
struct KernelParam {
  enum class Kind {
    kInput,        // device pointer of input tensor `index`
    kOutput,       // device pointer of output tensor `index`
    kScalarParam,  // f32 value of the candidate's named scalar parameter `index`
    kShape,        // integer `expr` evaluated over the shape symbols, passed as
                   // `type` (i32/i64/bool; f32 converts, e.g. a row length for a mean)
  };
  enum class Type { kPtr, kBool, kI32, kI64, kF32 };

  Kind kind = Kind::kShape;
  Type type = Type::kI64;
  int index = 0;
  LaunchExpr expr;  // for kShape

  // Size in bytes of the argument slot passed to cuLaunchKernel.
  size_t size_bytes() const;
};

// Text forms used in the database and manifests.
const char* param_kind_name(KernelParam::Kind kind);
const char* param_type_name(KernelParam::Type type);

struct KernelArtifact {
  std::string backend;          // "nvrtc" or "halide"
  ImageKind image_kind = ImageKind::kCubin;
  std::string image;            // cubin bytes or PTX text
  std::string entry;            // kernel symbol
  int target_sm = 0;            // arch the image was generated for (e.g. 90)
  int block[3] = {1, 1, 1};
  LaunchExpr grid[3] = {LaunchExpr(1), LaunchExpr(1), LaunchExpr(1)};
  int shared_bytes = 0;
  std::vector<KernelParam> params;
  // Byte alignment every tensor pointer must have (vectorized access).
  int pointer_alignment = 1;
  // > 0: compiled for an innermost extent (a row reduction's row) of exactly
  // this length; prepare_launch refuses any other. 0: any length.
  int64_t row_length = 0;
  // > 1: only for rows of a multiple of this many columns (a Halide vector
  // schedule, whose rows must start on a vector); prepare_launch refuses
  // others. 1: any.
  int row_multiple = 1;
  // What ptxas reported for an NVRTC cubin (0: unknown): registers per
  // thread and static shared memory per block, for residency estimates.
  int registers = 0;
  int static_shared_bytes = 0;
  std::string source;           // CUDA C (nvrtc) or PTX (halide), for humans
};

}  // namespace fusekit
