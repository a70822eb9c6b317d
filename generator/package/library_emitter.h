// The library emitter behind `fusekit build`: turns the tuning database into
// a self-contained package applications link.
//
//   OUT/include/fusekit_kernels.h                 C API: one typed entry point per op and dtype,
//                                                 a generic call by name, explain, last error
//   OUT/lib/libfusekit_kernels.a, .so             kernels + dispatch runtime (CUDA driver via dlopen)
//   OUT/lib/cmake/fusekit_kernels/...Config.cmake find_package(fusekit_kernels) -> fusekit::kernels
//   OUT/share/fusekit_kernels/manifest.json       every variant with its provenance
//   OUT/share/fusekit_kernels/kernels/*.cubin|ptx the images, for inspection
//   OUT/src/                                      the generated sources
//
// Per op, dtype and requested arch: the best record of every tuned shape
// bucket (measured beats modeled), rebuilt as a cubin for that arch, plus a
// generic scalar variant (no alignment needs). Per op and dtype: portable PTX
// (compute_75) of the generic variant and of the newest arch's NVRTC winners.
#pragma once

#include <string>
#include <vector>

#include "fusekit/arch.h"
#include "generator/candidates/fusion_candidate.h"
#include "generator/candidates/gemm_candidate.h"
#include "tunedb/tune_db.h"

namespace fusekit {

struct EmitOptions {
  std::vector<Arch> archs;                  // cubins for these
  std::string out_dir;
  std::vector<FusionCandidate> candidates;  // ops to look for in the database
  std::vector<GemmCandidate> gemms;         // GEMM ops to look for (generator/package/gemm_entries.h)
  std::string cxx = "c++";                  // compiler for the package's sources
  std::string runtime_library;              // libfusekit_runtime.a (PIC)
  std::string runtime_include;              // runtime/include
  std::string cuda_include;                 // directory holding cuda.h
  // The GPU and toolchain the package is for: records from elsewhere rank
  // below matching ones (empty fields match everything).
  RecordOrigin target;
};

struct EmitReport {
  size_t variants = 0;
  std::vector<std::string> ops;             // "relu_add f32", ...
  std::vector<std::string> notes;           // e.g. archs packaged from modeled records
  std::vector<std::string> selections;      // per op, arch and bucket: records used and passed over, why
};

// Throws UserError naming what is missing (no records for an arch, a
// compiler failure with its output).
EmitReport emit_library(const TuneDb& db, const EmitOptions& options);

}  // namespace fusekit
