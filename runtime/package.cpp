// Map: select_variant (pure; unit-tested with fake devices), the Package's
// per-context caches of device properties and loaded modules, launch, explain.
#include "fusekit/package.h"

#include <algorithm>
#include <climits>
#include <cstdlib>
#include <cstring>

#include "fusekit/cuda_driver.h"
#include "fusekit/shape_bucket.h"

namespace fusekit {

std::string Selection::describe() const {
  if (!variant) return "no variant";
  std::string s = std::string(variant->entry) + " (" + variant->backend + ", " + variant->schedule + "; ";
  s += variant->sm ? "sm_" + std::to_string(variant->sm) : std::string("portable PTX");
  s += variant->bucket_log2 >= 0
           ? ", bucket " + shape_bucket_name(int64_t{1} << variant->bucket_log2,
                                             variant->row_log2 >= 0 ? int64_t{1} << variant->row_log2 : -1)
           : std::string(", generic");
  s += variant->measured ? ", measured" : ", not measured";
  return s + "): arch step '" + arch_step + "', shape step '" + shape_step + "'";
}

namespace {
// The largest power of two (up to 256) dividing every pointer, from the OR
// of the pointers: its lowest set bit, 256 included so it is never zero.
int alignment_of(CUdeviceptr ored) {
  ored |= 256;
  return static_cast<int>(ored & (~ored + 1));
}
}  // namespace

int common_alignment(const std::vector<CUdeviceptr>& pointers) {
  CUdeviceptr ored = 0;
  for (CUdeviceptr p : pointers) ored |= p;
  return alignment_of(ored);
}

namespace {

// What the table has for an op and dtype on this device, in one pass.
struct ArchScan {
  bool op_known = false, dtype_known = false, exact = false, ptx = false;
  int same_major = 0;  // the newest cubin of the device's major arch it can run, or 0
};

ArchScan scan_archs(const fusekit_variant_desc* table, size_t count, const char* op_name, int dt,
                    const DeviceProps& device) {
  ArchScan a;
  for (size_t i = 0; i < count; ++i) {
    const fusekit_variant_desc& v = table[i];
    if (std::strcmp(v.op, op_name) != 0) continue;
    a.op_known = true;
    if (v.dtype != dt) continue;
    a.dtype_known = true;
    a.exact |= v.sm == device.sm && !device.ptx_only;
    a.ptx |= v.sm == 0;
    if (v.image_kind == 0 && !device.ptx_only && v.sm / 10 == device.sm / 10 && v.sm % 10 <= device.sm % 10 &&
        v.sm > a.same_major)
      a.same_major = v.sm;
  }
  return a;
}

Status unknown_dtype(const fusekit_variant_desc* table, size_t count, const char* op_name, DType dtype) {
  std::string dtypes;
  for (size_t i = 0; i < count; ++i) {
    const std::string d = dtype_name(static_cast<DType>(table[i].dtype));
    if (std::strcmp(op_name, table[i].op) == 0 && dtypes.find(d) == std::string::npos)
      dtypes += (dtypes.empty() ? "" : " ") + d;
  }
  return Status(StatusCode::kNotSupported, "op '" + std::string(op_name) + "' was not built for " + dtype_name(dtype) +
                                               "; the package has: " + dtypes);
}

Status no_code_for_arch(const fusekit_variant_desc* table, size_t count, const char* op_name, int dt,
                        const DeviceProps& device) {
  std::string archs;
  for (size_t i = 0; i < count; ++i)
    if (std::strcmp(op_name, table[i].op) == 0 && table[i].dtype == dt &&
        archs.find(std::to_string(table[i].sm)) == std::string::npos)
      archs += " sm_" + std::to_string(table[i].sm);
  return Status(StatusCode::kNotSupported, "no code for sm_" + std::to_string(device.sm) + " in op '" +
                                               std::string(op_name) + "' (package has" + archs +
                                               "); rebuild it with --arch sm_" + std::to_string(device.sm));
}

// The call a shape choice is made for.
struct ShapeQuery {
  const char* op;
  int dtype, sm;
  const char* arch_step;
  int64_t elements, row_length;
  int pointer_alignment;
};

// Shape, among variants of the chosen arch whose alignment the pointers meet:
// exact bucket, else nearest (ties to the larger), else generic. A row
// reduction's row length weighs more than its element count: a schedule for
// rows of 65536 is wrong for rows of 1024 whatever the row count.
Status choose_shape(const fusekit_variant_desc* table, size_t count, const ShapeQuery& q, Selection* out) {
  const int b = shape_bucket_log2(q.elements);
  const int rb = q.row_length >= 0 ? shape_bucket_log2(q.row_length) : -1;
  auto steps = [](int have, int want) { return std::abs(have - want) * 2 - (have > want ? 1 : 0); };
  const fusekit_variant_desc* nearest = nullptr;
  const fusekit_variant_desc* generic = nullptr;
  int nearest_distance = 1 << 30;
  bool too_large = false;
  for (size_t i = 0; i < count; ++i) {
    const fusekit_variant_desc& v = table[i];
    if (v.sm != q.sm || v.dtype != q.dtype || v.pointer_alignment > q.pointer_alignment) continue;
    if (std::strcmp(v.op, q.op) != 0) continue;
    if (v.row_length > 0 && v.row_length != q.row_length) continue;  // compiled for another row length
    if (v.row_multiple > 1 && (q.row_length <= 0 || q.row_length % v.row_multiple != 0)) continue;  // unaligned rows
    if (v.index32 && q.elements > INT32_MAX) {  // 64-bit indexing needed: a 32-bit kernel would wrap
      too_large = true;
      continue;
    }
    if (v.bucket_log2 < 0) {
      if (!generic) generic = &v;
      continue;
    }
    // Row steps: 0 for a variant of any row length or the exact one, 1 when
    // the call's row length is unknown, else 4 per doubling (2 less toward
    // longer rows); any row step outweighs every element-count step.
    // A variant compiled for the call's row length outranks every generic
    // one: its schedule was tuned for rows of exactly this length.
    const int row_steps = v.row_log2 < 0 ? 0 : rb < 0 ? 1 : 2 * steps(v.row_log2, rb);
    const int row_rank = v.row_length > 0 ? 0 : 1 + row_steps;
    const int d = row_rank * 256 + steps(v.bucket_log2, b);
    if (d == 0) {
      *out = Selection{&v, q.arch_step, "exact row length"};
      return Status();
    }
    if (d < nearest_distance) { nearest_distance = d; nearest = &v; }
  }
  if (nearest) {
    *out = Selection{nearest, q.arch_step,
                     nearest->row_length > 0 ? "exact row length" : nearest_distance == 256 ? "exact bucket"
                                                                                            : "nearest bucket"};
    return Status();
  }
  if (generic) { *out = Selection{generic, q.arch_step, "generic"}; return Status(); }
  if (too_large)
    return Status(StatusCode::kNotSupported, std::to_string(q.elements) + " elements need 64-bit indexing, and op '" +
                                                 std::string(q.op) + "' has only 32-bit (Halide) kernels here; "
                                                 "rebuild the package with an nvrtc variant");
  return Status(StatusCode::kInvalidArgument, "tensor pointers are only " + std::to_string(q.pointer_alignment) +
                                                  "-byte aligned; op '" + std::string(q.op) + "' needs element alignment");
}

}  // namespace

// Allocation-free: a few passes over the table (it is small), strings only
// on the error paths (a name over 15 bytes allocates).
Status select_variant(const fusekit_variant_desc* table, size_t count, const char* op_name, DType dtype,
                      const DeviceProps& device, int64_t elements, int64_t row_length, int pointer_alignment,
                      Selection* out) {
  const int dt = static_cast<int>(dtype);
  if (!op_name) return Status(StatusCode::kInvalidArgument, "null op name");
  const ArchScan a = scan_archs(table, count, op_name, dt, device);
  if (!a.op_known) return Status(StatusCode::kNotFound, "the package has no op '" + std::string(op_name) + "'");
  if (!a.dtype_known) return unknown_dtype(table, count, op_name, dtype);
  ShapeQuery q{op_name, dt, 0, nullptr, elements, row_length, pointer_alignment};
  if (a.exact) { q.sm = device.sm; q.arch_step = "exact arch"; }
  else if (a.same_major) { q.sm = a.same_major; q.arch_step = "same-major cubin"; }
  else if (a.ptx) { q.sm = 0; q.arch_step = "ptx jit"; }
  else return no_code_for_arch(table, count, op_name, dt, device);
  return choose_shape(table, count, q, out);
}

Status variant_artifact(const fusekit_variant_desc& v, KernelArtifact* a) {
  a->backend = v.backend;
  a->image_kind = v.image_kind == 0 ? ImageKind::kCubin : ImageKind::kPtx;
  a->image.assign(reinterpret_cast<const char*>(v.image), v.image_size);
  a->entry = v.entry;
  a->target_sm = v.sm;
  a->shared_bytes = v.shared_bytes;
  a->pointer_alignment = v.pointer_alignment;
  a->row_length = v.row_length;
  a->row_multiple = std::max(1, v.row_multiple);
  for (int i = 0; i < 3; ++i) {
    a->block[i] = v.block[i];
    Status st = LaunchExpr::parse(v.grid[i], &a->grid[i]);
    if (!st.ok()) return Status(StatusCode::kInvalidArgument, std::string(v.entry) + " grid: " + st.message());
  }
  a->params.clear();
  for (int i = 0; i < v.num_params; ++i) {
    const fusekit_param_desc& d = v.params[i];
    if (d.kind < 0 || d.kind > 3 || d.type < 0 || d.type > 4)
      return Status(StatusCode::kInvalidArgument, std::string(v.entry) + ": bad parameter descriptor");
    KernelParam p;
    p.kind = static_cast<KernelParam::Kind>(d.kind);
    p.type = static_cast<KernelParam::Type>(d.type);
    p.index = d.index;
    if (p.kind == KernelParam::Kind::kShape) {
      Status st = LaunchExpr::parse(d.expr, &p.expr);
      if (!st.ok()) return Status(StatusCode::kInvalidArgument, std::string(v.entry) + " parameter: " + st.message());
    }
    a->params.push_back(p);
  }
  return Status();
}

struct Package::Loaded {
  CUcontext ctx = nullptr;
  const fusekit_variant_desc* variant = nullptr;  // null: a device-properties entry
  DeviceProps props;
  KernelArtifact artifact;
  LoadedKernel kernel;
  // The last shape launched with and its evaluated grid and shape arguments:
  // back-to-back calls of one shape skip the evaluation.
  bool have_prepared = false;
  LaunchShape prepared_shape;
  PreparedLaunch prepared;
};

Package::Package(const fusekit_variant_desc* table, size_t count, const CudaDriver* driver)
    : table_(table), count_(count), driver_(driver) {
  // The recent-selection cache matches row lengths exactly where a variant
  // is taken for some lengths of a bucket only.
  for (size_t i = 0; i < count; ++i) fixed_rows_ |= table[i].row_length > 0 || table[i].row_multiple > 1;
}
Package::~Package() {
  // Modules die with their contexts; a package is often a static destroyed at
  // exit, after the application may have torn its contexts down.
  for (auto& l : loaded_) l->kernel.release();
}

Status Package::device_props(const CudaDriver& d, CUcontext ctx, DeviceProps* props) {
  for (const auto& l : loaded_)
    if (l->ctx == ctx && !l->variant) { *props = l->props; return Status(); }
  CUdevice dev;
  FUSEKIT_CU_RETURN(d, cuCtxGetDevice(&dev), "current context");
  int major = 0, minor = 0, sms = 0;
  FUSEKIT_CU_RETURN(d, cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "");
  FUSEKIT_CU_RETURN(d, cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "");
  FUSEKIT_CU_RETURN(d, cuDeviceGetAttribute(&sms, CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT, dev), "");
  auto l = std::make_unique<Loaded>();
  l->ctx = ctx;
  const char* ptx_only = std::getenv("FUSEKIT_PTX_ONLY");
  l->props = {major * 10 + minor, sms, ptx_only && *ptx_only && std::strcmp(ptx_only, "0") != 0};
  *props = l->props;
  loaded_.push_back(std::move(l));
  return Status();
}

Status Package::function_for(const CudaDriver& d, CUcontext ctx, const fusekit_variant_desc* v, Loaded** out) {
  for (const auto& l : loaded_)
    if (l->ctx == ctx && l->variant == v) {
      *out = l.get();
      return Status();
    }
  auto l = std::make_unique<Loaded>();
  l->ctx = ctx;
  l->variant = v;
  Status st = variant_artifact(*v, &l->artifact);
  if (!st.ok()) return st;
  st = l->kernel.load(d, l->artifact);
  if (!st.ok()) return st;
  *out = l.get();
  loaded_.push_back(std::move(l));
  return Status();
}

void Package::avoid_failed_cubin(CUcontext ctx, const DeviceProps& props, const char* op, DType dtype,
                                 int64_t elements, int64_t row_length, int pointer_alignment, Selection* sel) {
  if (std::find(failed_cubins_.begin(), failed_cubins_.end(), std::make_pair(ctx, sel->variant)) ==
      failed_cubins_.end())
    return;
  DeviceProps jit = props;
  jit.ptx_only = true;
  Selection ptx;
  if (select_variant(table_, count_, op, dtype, jit, elements, row_length, pointer_alignment, &ptx).ok() &&
      ptx.variant->sm == 0) {
    *sel = ptx;
    sel->arch_step = "ptx jit (cubin failed to load)";
  }
}

Status Package::load_selected(const CudaDriver& d, CUcontext ctx, const DeviceProps& props, const char* op,
                              DType dtype, int64_t elements, int64_t row_length, int pointer_alignment,
                              Selection* sel, Loaded** out) {
  avoid_failed_cubin(ctx, props, op, dtype, elements, row_length, pointer_alignment, sel);
  const Status st = function_for(d, ctx, sel->variant, out);
  if (st.ok() || sel->variant->image_kind != 0) return st;
  failed_cubins_.emplace_back(ctx, sel->variant);
  const fusekit_variant_desc* cubin = sel->variant;
  avoid_failed_cubin(ctx, props, op, dtype, elements, row_length, pointer_alignment, sel);
  if (sel->variant == cubin)
    return Status(st.code(), st.message() + "; the package has no portable PTX for op '" + op + "' (" +
                                 dtype_name(dtype) + ") to fall back to");
  const Status jit = function_for(d, ctx, sel->variant, out);
  if (!jit.ok())
    return Status(jit.code(), st.message() + "; its portable PTX fallback did not load either: " + jit.message());
  load_notes_.push_back("op '" + std::string(op) + "' (" + dtype_name(dtype) + ") on sm_" + std::to_string(props.sm) +
                        ": cubin " + cubin->entry + " did not load (" + st.message() + "); JIT-loaded portable PTX " +
                        sel->variant->entry + " instead");
  return Status();
}

std::vector<std::string> Package::load_notes() {
  std::lock_guard<std::mutex> lock(mutex_);
  return load_notes_;
}

Status Package::driver_and_context(const CudaDriver** d, CUcontext* ctx) const {
  *d = driver_;
  if (!*d) {
    Status st = load_cuda_driver(d);
    if (!st.ok()) return st;
  }
  FUSEKIT_CU_RETURN(**d, cuCtxGetCurrent(ctx), "");
  if (!*ctx)
    return Status(StatusCode::kInvalidArgument,
                  "no current CUDA context; make one current (cuCtxSetCurrent / cudaSetDevice) before calling");
  return Status();
}

Status Package::explain(const std::string& op, DType dtype, int64_t elements, int64_t row_length, int pointer_alignment,
                        Selection* out) {
  const CudaDriver* d = nullptr;
  CUcontext ctx = nullptr;
  Status st = driver_and_context(&d, &ctx);
  if (!st.ok()) return st;
  std::lock_guard<std::mutex> lock(mutex_);
  DeviceProps props;
  st = device_props(*d, ctx, &props);
  if (!st.ok()) return st;
  st = select_variant(table_, count_, op.c_str(), dtype, props, elements, row_length, pointer_alignment, out);
  if (st.ok()) avoid_failed_cubin(ctx, props, op.c_str(), dtype, elements, row_length, pointer_alignment, out);
  return st;
}

Status Package::launch(const char* op, DType dtype, const LaunchShape& shape, const LaunchArgs& args,
                       CUstream stream) {
  if (!op) return Status(StatusCode::kInvalidArgument, "null op name");
  for (int64_t e : shape.domain)
    if (e < 0) return Status(StatusCode::kInvalidArgument, "negative extent " + std::to_string(e));
  const int64_t elements = shape.elements();
  if (elements == 0) return Status();
  // Null checks and the pointers' common alignment, without a vector.
  CUdeviceptr ored = 0;
  for (const auto* list : {&args.inputs, &args.outputs})
    for (size_t i = 0; i < list->size(); ++i) {
      if ((*list)[i] == 0)
        return Status(StatusCode::kInvalidArgument, std::string(list == &args.inputs ? "input " : "output ") +
                                                        std::to_string(i) + " is a null pointer");
      ored |= (*list)[i];
    }
  const int alignment = alignment_of(ored);
  const int bucket = shape_bucket_log2(elements);
  const int64_t row_length = shape.domain.empty() ? 1 : shape.domain.front();
  const int row_bucket = shape_bucket_log2(row_length);
  const CudaDriver* d = nullptr;
  CUcontext ctx = nullptr;
  Status st = driver_and_context(&d, &ctx);
  if (!st.ok()) return st;
  const KernelArtifact* artifact = nullptr;
  CUfunction fn = nullptr;
  PreparedLaunch prepared;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    Loaded* l = nullptr;
    int sm_count = 0;
    for (const Recent& r : recent_)
      if (r.loaded && r.ctx == ctx && r.dtype == dtype && r.bucket == bucket && r.row_bucket == row_bucket &&
          r.alignment == alignment && (!fixed_rows_ || r.row_length == row_length) &&
          std::strcmp(r.loaded->variant->op, op) == 0) {
        l = r.loaded;
        sm_count = r.sm_count;
        break;
      }
    if (!l) {
      DeviceProps props;
      st = device_props(*d, ctx, &props);
      if (!st.ok()) return st;
      Selection sel;
      st = select_variant(table_, count_, op, dtype, props, elements, row_length, alignment, &sel);
      if (!st.ok()) return st;
      st = load_selected(*d, ctx, props, op, dtype, elements, row_length, alignment, &sel, &l);
      if (!st.ok()) return st;
      sm_count = props.sm_count;
      recent_[next_recent_] = Recent{ctx, dtype, bucket, row_bucket, row_length, alignment, l, sm_count};
      next_recent_ = (next_recent_ + 1) % kRecent;
    }
    // The shape as the kernel sees it: the caller's, on this device.
    const bool same = l->have_prepared && l->prepared_shape.domain == shape.domain &&
                      l->prepared_shape.inputs == shape.inputs && l->prepared_shape.outputs == shape.outputs &&
                      l->prepared_shape.sm_count == sm_count;
    if (!same) {
      l->prepared_shape = shape;
      l->prepared_shape.sm_count = sm_count;
      l->prepared_shape.resident_blocks = l->kernel.resident_blocks();
      l->have_prepared = false;
      st = prepare_launch(l->artifact, l->prepared_shape, &l->prepared);
      if (!st.ok()) return st;
      l->have_prepared = true;
    }
    artifact = &l->artifact;
    fn = l->kernel.function();
    prepared = l->prepared;
  }
  return launch_prepared(*d, *artifact, fn, prepared, args, stream);
}

}  // namespace fusekit
