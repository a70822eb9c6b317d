// Map: select (pure over the table), the parsed plans, the tail's scratch
// per (context, stream), launch of fused and tail entries.
#include "fusekit/gemm_package.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>

#include "fusekit/shape_bucket.h"

namespace fusekit {

GemmPackage::GemmPackage(const fusekit_gemm_desc* table, size_t count, Package* kernels, const CudaDriver* driver,
                         const CublasLt* lt)
    : table_(table), count_(count), kernels_(kernels), driver_(driver), lt_(lt) {}

GemmPackage::~GemmPackage() {
  // As Package: a static package may outlive the application's contexts.
  if (sessions_) sessions_->release();
}

Status GemmPackage::select(const char* op, DType dtype, int64_t m, int64_t n, int64_t k,
                           const fusekit_gemm_desc** out) const {
  if (!op) return Status(StatusCode::kInvalidArgument, "null GEMM op name");
  bool known = false;
  std::string shapes;
  const fusekit_gemm_desc* best = nullptr;
  const int mb = shape_bucket_log2(m);
  for (size_t i = 0; i < count_; ++i) {
    const fusekit_gemm_desc& e = table_[i];
    if (std::strcmp(e.op, op) != 0 || e.dtype != static_cast<int>(dtype)) continue;
    known = true;
    if (e.n != n || e.k != k) {
      shapes += " N=" + std::to_string(e.n) + " K=" + std::to_string(e.k);
      continue;
    }
    if (!best || std::abs(e.m_log2 - mb) < std::abs(best->m_log2 - mb)) best = &e;
  }
  if (!known)
    return Status(StatusCode::kNotFound, std::string("the package has no GEMM op '") + op + "' for " + dtype_name(dtype));
  if (!best)
    return Status(StatusCode::kNotSupported, std::string("GEMM op '") + op + "' was tuned for" + shapes + ", not N=" +
                                                 std::to_string(n) + " K=" + std::to_string(k) +
                                                 "; tune that shape and rebuild the package");
  *out = best;
  return Status();
}

Status GemmPackage::libraries(const CudaDriver** d, const CublasLt** lt) {
  *d = driver_;
  *lt = lt_;
  if (!*d) {
    Status st = load_cuda_driver(d);
    if (!st.ok()) return st;
  }
  if (!*lt) {
    Status st = load_cublaslt(lt);
    if (!st.ok()) return st;
  }
  if (!sessions_) sessions_ = std::make_unique<GemmSessions>(**d, **lt);
  return Status();
}

Status GemmPackage::scratch_for(const CudaDriver& d, CUstream stream, size_t bytes, CUdeviceptr* out) {
  CUcontext ctx = nullptr;
  FUSEKIT_CU_RETURN(d, cuCtxGetCurrent(&ctx), "GEMM tail scratch");
  Scratch& s = scratch_[{ctx, stream}];
  if (s.bytes < bytes) {
    CUdeviceptr p = 0;
    CUresult r = d.cuMemAlloc(&p, bytes);
    if (r != CUDA_SUCCESS)
      return cuda_status(d, r, "cuMemAlloc", "the GEMM tail's " + std::to_string(bytes) +
                                                 " bytes of products (make one call at the largest M before capturing "
                                                 "a graph)");
    if (s.base && d.cuMemFree) d.cuMemFree(s.base);  // cuMemFree waits for work still using it
    s.base = p;
    s.bytes = bytes;
  }
  *out = s.base;
  return Status();
}

Status GemmPackage::run_tail(const fusekit_gemm_desc& e, const GemmPlan& plan, DType dtype, const GemmCall& c,
                             CUstream stream) {
  const size_t stride = (static_cast<size_t>(c.m * c.n) * dtype_bytes(dtype) + 255) / 256 * 256;
  CUdeviceptr products = 0;
  Status st = scratch_for(*driver_used_, stream, stride * e.accumulators, &products);
  if (!st.ok()) return st;
  const GemmShape shape{c.m, c.n, c.k, e.b_transposed != 0, dtype};
  for (int w = 0; w < e.accumulators; ++w) {
    st = sessions_->launch(shape, plan, {c.a, w ? c.b2 : c.b, 0, 0, products + w * stride}, stream);
    if (!st.ok()) return st;
  }
  LaunchShape ls;
  ls.domain = {c.n, c.m};
  LaunchArgs args;
  for (int i = 0; i < e.num_tail_inputs; ++i) {
    const int v = e.tail_inputs[i];
    if (v < 0) {
      ls.inputs.push_back(ls.domain);
      args.inputs.push_back(products + (v == -2 ? stride : 0));
    } else if (static_cast<size_t>(v) < c.operands.size()) {
      ls.inputs.push_back(c.operand_dims[v]);
      args.inputs.push_back(c.operands[v]);
    } else {
      return Status(StatusCode::kInternal, std::string("GEMM op '") + e.op + "': tail input " + std::to_string(i) +
                                               " names operand " + std::to_string(v) + " of " +
                                               std::to_string(c.operands.size()));
    }
  }
  ls.outputs = {ls.domain};
  args.outputs = {c.out};
  args.params.assign(e.tail_params, e.tail_params + e.num_tail_params);
  return kernels_->launch(e.tail_op, dtype, ls, args, stream);
}

Status GemmPackage::launch(const char* op, DType dtype, const GemmCall& c, CUstream stream) {
  const fusekit_gemm_desc* e = nullptr;
  Status st = select(op, dtype, c.m, c.n, c.k, &e);
  if (!st.ok()) return st;
  if (c.operands.size() != c.operand_dims.size())
    return Status(StatusCode::kInvalidArgument, "GEMM call passes " + std::to_string(c.operands.size()) +
                                                    " operands but dims for " + std::to_string(c.operand_dims.size()));
  const int wanted = std::max({e->bias_operand, e->residual_operand, -1}) + 1;
  int tail_wanted = 0;
  for (int i = 0; i < e->num_tail_inputs; ++i) tail_wanted = std::max(tail_wanted, e->tail_inputs[i] + 1);
  if (c.operands.size() < static_cast<size_t>(std::max(wanted, tail_wanted)))
    return Status(StatusCode::kInvalidArgument, std::string("GEMM op '") + op + "' takes " +
                                                    std::to_string(std::max(wanted, tail_wanted)) +
                                                    " operands (bias, residual, ...); the call passed " +
                                                    std::to_string(c.operands.size()));
  if (e->accumulators == 2 && c.b2 == 0)
    return Status(StatusCode::kInvalidArgument, std::string("GEMM op '") + op + "' multiplies A by two weights; B2 is null");
  std::lock_guard<std::mutex> lock(mutex_);
  const CublasLt* lt = nullptr;
  if (!(st = libraries(&driver_used_, &lt)).ok()) return st;
  auto it = plans_.find(e);
  if (it == plans_.end()) {
    GemmPlan p;
    st = parse_gemm_plan_text(e->plan, &p);
    if (!st.ok()) return Status(st.code(), std::string("GEMM op '") + op + "': " + st.message());
    it = plans_.emplace(e, p).first;
  }
  GemmPlan plan = it->second;
  int sm = 0;
  if (!(st = device_sm(&sm)).ok()) return st;
  if (sm != e->sm) plan.has_algo = false;  // another arch's algorithm: ask the heuristic
  if (e->tail_op && e->tail_op[0]) return run_tail(*e, plan, dtype, c, stream);
  auto operand = [&](int j) { return j >= 0 ? c.operands[j] : CUdeviceptr{0}; };
  return sessions_->launch({c.m, c.n, c.k, e->b_transposed != 0, dtype}, plan,
                           {c.a, c.b, operand(e->bias_operand), operand(e->residual_operand), c.out}, stream);
}

Status GemmPackage::device_sm(int* sm) {
  CUcontext ctx = nullptr;
  FUSEKIT_CU_RETURN(*driver_used_, cuCtxGetCurrent(&ctx), "GEMM launch");
  auto it = sms_.find(ctx);
  if (it != sms_.end()) {
    *sm = it->second;
    return Status();
  }
  CUdevice dev;
  int major = 0, minor = 0;
  FUSEKIT_CU_RETURN(*driver_used_, cuCtxGetDevice(&dev), "current context");
  FUSEKIT_CU_RETURN(*driver_used_, cuDeviceGetAttribute(&major, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR, dev), "");
  FUSEKIT_CU_RETURN(*driver_used_, cuDeviceGetAttribute(&minor, CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR, dev), "");
  *sm = sms_[ctx] = major * 10 + minor;
  return Status();
}

}  // namespace fusekit
