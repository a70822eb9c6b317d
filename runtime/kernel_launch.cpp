#include "fusekit/kernel_launch.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

namespace fusekit {

int64_t LaunchShape::elements() const {
  int64_t n = 1;
  for (int64_t d : domain) n *= d;
  return n;
}

namespace {

bool parse_index(const std::string& s, size_t* pos, int64_t* out) {
  size_t start = *pos;
  while (*pos < s.size() && s[*pos] >= '0' && s[*pos] <= '9') ++*pos;
  if (*pos == start) return false;
  *out = std::strtoll(s.c_str() + start, nullptr, 10);
  return true;
}

// "in3.extent.1" -> tensor list, index 3, field "extent", dim 1.
bool lookup_tensor_symbol(const std::vector<std::vector<int64_t>>& tensors, const std::string& name,
                          size_t prefix, int64_t* value) {
  size_t pos = prefix;
  int64_t t = 0, d = 0;
  if (!parse_index(name, &pos, &t) || pos >= name.size() || name[pos] != '.') return false;
  ++pos;
  size_t dot = name.find('.', pos);
  if (dot == std::string::npos) return false;
  std::string field = name.substr(pos, dot - pos);
  pos = dot + 1;
  if (!parse_index(name, &pos, &d) || pos != name.size()) return false;
  if (t < 0 || t >= static_cast<int64_t>(tensors.size())) return false;
  const auto& dims = tensors[t];
  if (d < 0 || d >= static_cast<int64_t>(dims.size())) return false;
  if (field == "extent") { *value = dims[d]; return true; }
  if (field == "min") { *value = 0; return true; }
  if (field == "stride") {
    int64_t s = 1;
    for (int64_t k = 0; k < d; ++k) s *= dims[k];
    *value = s;
    return true;
  }
  return false;
}

}  // namespace

bool lookup_shape_symbol(const LaunchShape& shape, const std::string& name, int64_t* value) {
  if (name == "n") { *value = shape.elements(); return true; }
  if (name == "sm_count") { *value = shape.sm_count; return true; }
  if (name == "resident_blocks") {
    *value = shape.resident_blocks > 0 ? shape.resident_blocks : 2147483647LL;
    return true;
  }
  if (name.size() >= 2 && name[0] == 'd' && name[1] >= '0' && name[1] <= '9') {
    size_t pos = 1;
    int64_t k = 0;
    if (!parse_index(name, &pos, &k) || pos != name.size()) return false;
    if (k >= static_cast<int64_t>(shape.domain.size())) return false;
    *value = shape.domain[k];
    return true;
  }
  if (name.rfind("in", 0) == 0) return lookup_tensor_symbol(shape.inputs, name, 2, value);
  if (name.rfind("out", 0) == 0) return lookup_tensor_symbol(shape.outputs, name, 3, value);
  return false;
}

LoadedKernel::~LoadedKernel() { unload(); }

void LoadedKernel::unload() {
  if (module_ && driver_) driver_->cuModuleUnload(module_);
  module_ = nullptr;
  function_ = nullptr;
  resident_blocks_ = 0;
}

namespace {

// LoadedKernel::resident_blocks for `function`; 0 when not known.
int64_t query_resident_blocks(const CudaDriver& driver, CUfunction function, const KernelArtifact& artifact) {
  const int threads = artifact.block[0] * artifact.block[1] * artifact.block[2];
  int width = 0;
  if (driver.cuFuncGetAttribute &&
      driver.cuFuncGetAttribute(&width, CU_FUNC_ATTRIBUTE_REQUIRED_CLUSTER_WIDTH, function) != CUDA_SUCCESS)
    width = 0;
  if (width > 1) {
    // Clusters must fit inside one GPC with all their blocks: fewer may be
    // resident than the SMs' block slots suggest.
    if (!driver.cuOccupancyMaxActiveClusters) return 0;
    CUlaunchConfig config{};
    config.gridDimX = static_cast<unsigned>(width);
    config.gridDimY = config.gridDimZ = 1;
    config.blockDimX = static_cast<unsigned>(artifact.block[0]);
    config.blockDimY = static_cast<unsigned>(artifact.block[1]);
    config.blockDimZ = static_cast<unsigned>(artifact.block[2]);
    config.sharedMemBytes = static_cast<unsigned>(std::max(0, artifact.shared_bytes));
    int clusters = 0;
    if (driver.cuOccupancyMaxActiveClusters(&clusters, function, &config) != CUDA_SUCCESS) return 0;
    return static_cast<int64_t>(clusters) * width;
  }
  if (!driver.cuOccupancyMaxActiveBlocksPerMultiprocessor || !driver.cuCtxGetDevice || !driver.cuDeviceGetAttribute)
    return 0;
  int per_sm = 0, sms = 0;
  CUdevice device = 0;
  if (driver.cuOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, function, threads,
                                                          static_cast<size_t>(std::max(0, artifact.shared_bytes))) !=
          CUDA_SUCCESS ||
      driver.cuCtxGetDevice(&device) != CUDA_SUCCESS ||
      driver.cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, device) != CUDA_SUCCESS)
    return 0;
  return static_cast<int64_t>(per_sm) * sms;
}

}  // namespace

Status LoadedKernel::load(const CudaDriver& driver, const KernelArtifact& artifact) {
  unload();
  driver_ = &driver;
  char error_log[8192] = {0};
  CUjit_option options[] = {CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES};
  void* values[] = {error_log, reinterpret_cast<void*>(static_cast<uintptr_t>(sizeof(error_log)))};
  // PTX must be NUL-terminated; std::string guarantees that for c_str().
  const void* image = artifact.image.c_str();
  CUresult r = driver.cuModuleLoadDataEx(&module_, image, 2, options, values);
  if (r != CUDA_SUCCESS) {
    module_ = nullptr;
    return cuda_status(driver, r, "cuModuleLoadDataEx",
                       std::string(image_kind_name(artifact.image_kind)) + " for " + artifact.entry +
                           (error_log[0] ? std::string("; log: ") + error_log : ""));
  }
  r = driver.cuModuleGetFunction(&function_, module_, artifact.entry.c_str());
  if (r != CUDA_SUCCESS) {
    unload();
    return cuda_status(driver, r, "cuModuleGetFunction", artifact.entry);
  }
  // Shared memory past 48 KiB, static and dynamic together, is opt-in per
  // function (a row staged in shared memory between passes): every kernel
  // that asks for dynamic bytes opts in to them.
  constexpr int kDefaultShared = 48 * 1024;
  if (artifact.shared_bytes > 0 && driver.cuFuncSetAttribute) {
    r = driver.cuFuncSetAttribute(function_, CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, artifact.shared_bytes);
    if (r != CUDA_SUCCESS) {
      unload();
      return cuda_status(driver, r, "cuFuncSetAttribute(MAX_DYNAMIC_SHARED_SIZE_BYTES)",
                         artifact.entry + " wants " + std::to_string(artifact.shared_bytes) + " bytes");
    }
  } else if (artifact.shared_bytes > kDefaultShared) {
    unload();
    return Status(StatusCode::kNotSupported, artifact.entry + " needs " + std::to_string(artifact.shared_bytes) +
                                                 " bytes of shared memory; the driver cannot grant past 48 KiB");
  }
  resident_blocks_ = query_resident_blocks(driver, function_, artifact);
  return Status();
}

Status prepare_launch(const KernelArtifact& artifact, const LaunchShape& shape, PreparedLaunch* out) {
  auto lookup = [&](const std::string& name, int64_t* v) { return lookup_shape_symbol(shape, name, v); };
  // A variant taken for some row lengths only, launched for another.
  auto wrong_rows = [&](const std::string& takes, const char* instead) {
    return Status(StatusCode::kInvalidArgument,
                  artifact.entry + takes + " columns; this call's rows have " +
                      (shape.domain.empty() ? std::string("none") : std::to_string(shape.domain[0])) + ": launch " +
                      instead + " (a package selects one)");
  };
  if (artifact.row_length > 0 && (shape.domain.empty() || shape.domain[0] != artifact.row_length))
    return wrong_rows(" is compiled for rows of " + std::to_string(artifact.row_length), "a generic variant");
  if (artifact.row_multiple > 1 && (shape.domain.empty() || shape.domain[0] % artifact.row_multiple != 0))
    return wrong_rows(" needs rows of a multiple of " + std::to_string(artifact.row_multiple),
                      "a variant for any row length");
  for (int i = 0; i < 3; ++i) {
    int64_t g = 0;
    Status st = artifact.grid[i].evaluate(lookup, &g);
    if (!st.ok()) return st;
    if (g <= 0 || g > (i == 0 ? 2147483647LL : 65535LL))
      return Status(StatusCode::kInvalidArgument,
                    "grid dimension " + std::to_string(i) + " = " + std::to_string(g) + " out of range");
    out->grid[i] = static_cast<unsigned>(g);
  }
  if (artifact.params.size() > PreparedLaunch::kMaxParams)
    return Status(StatusCode::kNotSupported, "more than 64 kernel parameters");
  out->num_params = static_cast<int>(artifact.params.size());
  for (size_t i = 0; i < artifact.params.size(); ++i) {
    out->shape_values[i] = 0;
    const KernelParam& p = artifact.params[i];
    if (p.kind != KernelParam::Kind::kShape) continue;
    int64_t v = 0;
    Status st = p.expr.evaluate(lookup, &v);
    if (!st.ok()) return st;
    uint64_t bits = 0;
    if (p.type == KernelParam::Type::kBool) {
      bits = v != 0;
    } else if (p.type == KernelParam::Type::kF32) {  // a shape value the kernel takes as a float
      const float f = static_cast<float>(v);
      std::memcpy(&bits, &f, sizeof(f));
    } else if (p.type == KernelParam::Type::kI32) {
      if (v < INT32_MIN || v > INT32_MAX)
        return Status(StatusCode::kNotSupported, "shape argument " + p.expr.to_string() + " = " + std::to_string(v) +
                                                     " overflows int32");
      const int32_t v32 = static_cast<int32_t>(v);
      std::memcpy(&bits, &v32, sizeof(v32));
    } else {
      std::memcpy(&bits, &v, sizeof(v));
    }
    out->shape_values[i] = bits;
  }
  return Status();
}

Status launch_prepared(const CudaDriver& driver, const KernelArtifact& artifact, CUfunction function,
                       const PreparedLaunch& prepared, const LaunchArgs& args, CUstream stream) {
  // One 8-byte slot per argument: every type fits (little endian), and the
  // pointers stay valid through the call.
  const size_t count = artifact.params.size();
  uint64_t storage[PreparedLaunch::kMaxParams];
  void* pointers[PreparedLaunch::kMaxParams];
  if (static_cast<int>(count) != prepared.num_params)
    return Status(StatusCode::kInternal, "prepared launch does not match " + artifact.entry);
  for (size_t i = 0; i < count; ++i) {
    const KernelParam& p = artifact.params[i];
    uint64_t bits = prepared.shape_values[i];
    if (p.kind == KernelParam::Kind::kInput || p.kind == KernelParam::Kind::kOutput) {
      const auto& list = p.kind == KernelParam::Kind::kInput ? args.inputs : args.outputs;
      if (p.index < 0 || p.index >= static_cast<int>(list.size()))
        return Status(StatusCode::kInvalidArgument, "kernel wants tensor " + std::to_string(p.index) + " of " +
                                                        param_kind_name(p.kind) + "s; call has " +
                                                        std::to_string(list.size()));
      bits = list[p.index];
    } else if (p.kind == KernelParam::Kind::kScalarParam) {
      if (p.index < 0 || p.index >= static_cast<int>(args.params.size()))
        return Status(StatusCode::kInvalidArgument, "missing scalar parameter " + std::to_string(p.index));
      bits = 0;
      std::memcpy(&bits, &args.params[p.index], sizeof(float));
    }
    storage[i] = bits;
    pointers[i] = &storage[i];
  }
  CUresult r = driver.cuLaunchKernel(function, prepared.grid[0], prepared.grid[1], prepared.grid[2], artifact.block[0],
                                     artifact.block[1], artifact.block[2], artifact.shared_bytes, stream, pointers,
                                     nullptr);
  if (r != CUDA_SUCCESS) return cuda_status(driver, r, "cuLaunchKernel", artifact.entry);
  return Status();
}

Status launch_kernel(const CudaDriver& driver, const KernelArtifact& artifact, CUfunction function,
                     const LaunchShape& shape, const LaunchArgs& args, CUstream stream) {
  PreparedLaunch prepared;
  Status st = prepare_launch(artifact, shape, &prepared);
  if (!st.ok()) return st;
  return launch_prepared(driver, artifact, function, prepared, args, stream);
}

}  // namespace fusekit
