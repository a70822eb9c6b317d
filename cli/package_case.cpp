#include "cli/package_case.h"

#include "common/errors.h"

namespace fusekit {

void check_cuda(const CudaDriver& cu, CUresult r, const char* what) {
  if (r != CUDA_SUCCESS) throw UserError(cuda_status(cu, r, what).message());
}

namespace {

// Device buffers freed at scope exit.
class Buffers {
 public:
  explicit Buffers(const CudaDriver& cu) : cu_(cu) {}
  ~Buffers() {
    for (CUdeviceptr b : bufs_) cu_.cuMemFree(b);
  }
  Buffers(const Buffers&) = delete;
  Buffers& operator=(const Buffers&) = delete;
  // bytes + 256 of room, so that a pointer offset by an element stays inside.
  CUdeviceptr alloc(size_t bytes) {
    CUdeviceptr b;
    check(cu_.cuMemAlloc(&b, bytes + 256), "cuMemAlloc");
    bufs_.push_back(b);
    return b;
  }
  void check(CUresult r, const char* what) const { check_cuda(cu_, r, what); }

 private:
  const CudaDriver& cu_;
  std::vector<CUdeviceptr> bufs_;
};

}  // namespace

CaseOutcome run_package_case(const PackageApi& api, const CudaDriver& cu, const Workload& wl, const Problem& p,
                             const PackageCase& c) {
  const DType dt = wl.dtype();
  std::vector<HostTensor> in, ref, slack, got;
  for (size_t i = 0; i < p.input_dims.size(); ++i) {
    in.push_back(HostTensor::make(dt, p.input_dims[i]));
    wl.fill_input(i, c.seed + static_cast<uint32_t>(i), &in.back());
  }
  wl.reference(p, in, &ref);
  wl.reference_slack(p, in, ref, &slack);
  const size_t offset = c.misaligned ? dtype_bytes(dt) : 0;
  Buffers bufs(cu);
  std::vector<const void*> in_ptrs;
  std::vector<void*> out_ptrs;
  for (const auto& t : in) {
    const CUdeviceptr d = bufs.alloc(t.bytes.size()) + offset;
    bufs.check(cu.cuMemcpyHtoD(d, t.bytes.data(), t.bytes.size()), "cuMemcpyHtoD");
    in_ptrs.push_back(reinterpret_cast<const void*>(d));
  }
  for (const auto& t : ref) {
    const CUdeviceptr d = bufs.alloc(t.bytes.size()) + offset;
    bufs.check(cu.cuMemsetD8(d, kPoisonByte, t.bytes.size()), "cuMemsetD8");
    out_ptrs.push_back(reinterpret_cast<void*>(d));
  }
  CaseOutcome out;
  const int rank = static_cast<int>(c.domain.size());
  if (api.explain) {
    char why[512] = {0};
    api.explain(c.op.c_str(), c.dtype.c_str(), c.domain.data(), rank, c.misaligned ? static_cast<int>(offset) : 256,
                why, sizeof(why));
    out.explanation = why;
  }
  const int rc = api.launch(c.op.c_str(), c.dtype.c_str(), in_ptrs.data(), static_cast<int>(in_ptrs.size()),
                            out_ptrs.data(), static_cast<int>(out_ptrs.size()), c.params.data(),
                            static_cast<int>(c.params.size()), c.domain.data(), rank, nullptr);
  if (rc) {
    out.error = std::string("fusekit_launch: ") + api.last_error();
    out.context_lost = out.error.find("CUDA_ERROR") != std::string::npos;
    return out;
  }
  if (CUresult r = cu.cuCtxSynchronize(); r != CUDA_SUCCESS) {
    out.error = cuda_status(cu, r, "kernel").message();
    out.context_lost = true;
    return out;
  }
  for (size_t o = 0; o < ref.size(); ++o) {
    got.push_back(HostTensor::make(dt, p.output_dims[o]));
    bufs.check(cu.cuMemcpyDtoH(got.back().bytes.data(), reinterpret_cast<CUdeviceptr>(out_ptrs[o]),
                               got.back().bytes.size()),
               "cuMemcpyDtoH");
  }
  const Comparison cmp = compare_outputs(got, ref, wl.tolerance(p), slack);  // as the tune verified it
  if (!cmp.passed()) out.error = cmp.detail;
  return out;
}

}  // namespace fusekit
