// fusekit's PyTorch operator library: calls the kernels of a built fusekit
// package (its lib/libfusekit_kernels.so, opened with dlopen) from PyTorch.
//
// A small fixed family of operators, launch_<n_in>_<n_out>(int op, Tensor i0,
// ...) -> Tensor or (Tensor, ...), defined here once for every package, and
// the generic launch(int op, Tensor[] inputs) -> Tensor[] for wider entries.
// Fixed arity because a Tensor[] in and out costs a quarter of a torch.ops
// call from Python (bench/probes/torch_op_overhead.py); a family
// defined in C++, not an operator per plan entry registered at load time,
// because static schemas exist for torch.compile, torch.export and opcheck
// before any package loads, at the price of the int (the probe: about a
// tenth of a call).
// What differs per entry (package, op name, dtype, layout, broadcast axes,
// scalar parameters, tensor names for messages) is registered once
// (register_op) and referenced by an integer, so a call passes one int and
// the tensors: no strings cross the dispatcher per call.
//
// Every argument check is a c10::ValueError (Python ValueError) naming the
// tensor; a kernel's own failure is a RuntimeError with the package's message.
#include <dlfcn.h>

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include <ATen/ATen.h>
#include <torch/library.h>

#if defined(FUSEKIT_HAVE_C10_CUDA)
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#endif

namespace {

typedef struct CUstream_st* CUstream;
using launch_fn = int (*)(const char*, const char*, const void* const*, int, void* const*, int, const float*, int,
                          const int64_t*, int, CUstream);
using explain_fn = int (*)(const char*, const char*, const int64_t*, int, int, char*, size_t);
using last_error_fn = const char* (*)();

struct Package {
  std::string path;
  void* handle = nullptr;
  launch_fn launch = nullptr;
  explain_fn explain = nullptr;
  last_error_fn last_error = nullptr;
};

// The package's layouts (plan_file.LAYOUTS): how a full tensor's shape
// becomes the domain fusekit_launch takes (outermost first).
enum Layout { kFlat = 0, kRowCol = 1, kNchw = 2, kRows = 3, kNd = 4, kNdRows = 5 };

struct Op {
  const Package* package = nullptr;
  std::string name, dtype;
  at::ScalarType scalar = at::kFloat;
  int layout = kFlat;
  std::vector<std::string> inputs, outputs;  // "expr name (graph tensor)", for messages
  std::vector<int64_t> axes;                 // per input: bit k = domain axis k (innermost first); 0 = full
  std::vector<float> params;
  int shape_of = 0;                          // a full input: the domain and the outputs' shape
};

std::mutex registry_mutex;
std::vector<std::unique_ptr<Package>> packages;
std::vector<std::unique_ptr<Op>> ops;

at::ScalarType scalar_of(const std::string& dtype) {
  if (dtype == "f32") return at::kFloat;
  if (dtype == "f16") return at::kHalf;
  if (dtype == "bf16") return at::kBFloat16;
  TORCH_CHECK_VALUE(false, "fusekit: dtype '", dtype, "' has no kernels; packages hold f32, f16 and bf16");
}

int64_t load_package(std::string dir) {
  const std::string so = dir + "/lib/libfusekit_kernels.so";
  void* h = dlopen(so.c_str(), RTLD_NOW | RTLD_LOCAL);
  TORCH_CHECK_VALUE(h, "fusekit: cannot load the package library '", so, "': ", dlerror(),
                    "; pass the folder `fusekit build --out` wrote");
  auto p = std::make_unique<Package>();
  p->path = dir;
  p->handle = h;
  p->launch = reinterpret_cast<launch_fn>(dlsym(h, "fusekit_launch"));
  p->explain = reinterpret_cast<explain_fn>(dlsym(h, "fusekit_explain"));
  p->last_error = reinterpret_cast<last_error_fn>(dlsym(h, "fusekit_last_error"));
  TORCH_CHECK_VALUE(p->launch && p->explain && p->last_error, "fusekit: '", so,
                    "' lacks fusekit_launch/fusekit_explain/fusekit_last_error; rebuild it with `fusekit build`");
  std::lock_guard<std::mutex> lock(registry_mutex);
  packages.push_back(std::move(p));
  return static_cast<int64_t>(packages.size() - 1);
}

int64_t register_op(int64_t package, std::string name, std::string dtype, int64_t layout,
                    std::vector<std::string> inputs, std::vector<int64_t> axes, std::vector<std::string> outputs,
                    std::vector<double> params) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  TORCH_CHECK_VALUE(package >= 0 && package < static_cast<int64_t>(packages.size()), "fusekit: no package ", package);
  TORCH_CHECK_VALUE(layout >= kFlat && layout <= kNdRows, "fusekit: layout ", layout, " is not 0..5");
  TORCH_CHECK_VALUE(inputs.size() == axes.size() && !inputs.empty() && !outputs.empty(),
                    "fusekit: op '", name, "' needs one axes mask per input, and inputs and outputs");
  auto op = std::make_unique<Op>();
  op->package = packages[package].get();
  op->name = name;
  op->dtype = dtype;
  op->scalar = scalar_of(dtype);
  op->layout = static_cast<int>(layout);
  op->inputs = std::move(inputs);
  op->axes = std::move(axes);
  op->outputs = std::move(outputs);
  for (double p : params) op->params.push_back(static_cast<float>(p));
  op->shape_of = -1;
  for (size_t i = 0; i < op->axes.size() && op->shape_of < 0; ++i)
    if (op->axes[i] == 0) op->shape_of = static_cast<int>(i);
  TORCH_CHECK_VALUE(op->shape_of >= 0, "fusekit: op '", name, "' has no full-shape input to take its shape from");
  ops.push_back(std::move(op));
  return static_cast<int64_t>(ops.size() - 1);
}

const Op& op_at(int64_t id) {
  std::lock_guard<std::mutex> lock(registry_mutex);
  TORCH_CHECK_VALUE(id >= 0 && id < static_cast<int64_t>(ops.size()), "fusekit: no registered op ", id,
                    "; ops come from fusekit.torch.optimize in this process");
  return *ops[id];
}

// The domain (outermost first) a full tensor of this shape gives the layout.
std::vector<int64_t> domain_of(const Op& op, at::IntArrayRef sizes) {
  int64_t numel = 1;
  for (int64_t s : sizes) numel *= s;
  switch (op.layout) {
    case kFlat: return {numel};
    case kRowCol:
    case kRows: {
      TORCH_CHECK_VALUE(!sizes.empty(), "fusekit op '", op.name, "': input '", op.inputs[op.shape_of],
                        "' is a scalar; the kernel works on rows");
      const int64_t cols = sizes.back();
      return {cols ? numel / cols : 0, cols};
    }
    case kNchw: {
      TORCH_CHECK_VALUE(sizes.size() >= 2, "fusekit op '", op.name, "': input '", op.inputs[op.shape_of],
                        "' has ", sizes.size(), " dimensions; the kernel takes [N, C, ...]");
      const int64_t spatial = sizes[0] * sizes[1] ? numel / (sizes[0] * sizes[1]) : 0;
      return {sizes[0], sizes[1], spatial};
    }
    case kNd:
    case kNdRows: {  // up to four dims as they are, padded with outer 1s
      TORCH_CHECK_VALUE(!sizes.empty() && sizes.size() <= 4, "fusekit op '", op.name, "': input '",
                        op.inputs[op.shape_of], "' has ", sizes.size(), " dimensions; the kernel takes 1 to 4");
      std::vector<int64_t> d(4 - sizes.size(), 1);
      d.insert(d.end(), sizes.begin(), sizes.end());
      return d;
    }
  }
  return {numel};
}

// Extent a broadcast input must have: the product of the domain axes it is
// indexed by (domain is outermost first, axes bits innermost first).
int64_t broadcast_extent(const std::vector<int64_t>& domain, int64_t mask) {
  int64_t n = 1;
  const int rank = static_cast<int>(domain.size());
  for (int k = 0; k < rank; ++k)
    if (mask >> k & 1) n *= domain[rank - 1 - k];
  return n;
}

// count, dtype, shape and stride checks, shared by the real and the meta kernel;
// returns the domain. Symbolic shapes (fake tensors while tracing) skip the
// shape checks: the real call makes them.
std::vector<int64_t> check_inputs(const Op& op, c10::ArrayRef<at::Tensor> in, size_t n_out) {
  TORCH_CHECK_VALUE(in.size() == op.inputs.size(), "fusekit op '", op.name, "' takes ", op.inputs.size(),
                    " inputs, got ", in.size());
  TORCH_CHECK_VALUE(n_out == op.outputs.size(), "fusekit op '", op.name, "' has ", op.outputs.size(),
                    " outputs; it was called through an operator with ", n_out,
                    " (the rewrite picks launch_<inputs>_<outputs>)");
  for (size_t i = 0; i < in.size(); ++i)
    TORCH_CHECK_VALUE(in[i].scalar_type() == op.scalar, "fusekit op '", op.name, "': input '", op.inputs[i], "' is ",
                      in[i].scalar_type(), "; this kernel was built for ", op.dtype);
  const at::Tensor& full = in[op.shape_of];
  for (const auto& t : in)
    if (t.unsafeGetTensorImpl()->has_symbolic_sizes_strides()) return {};
  const std::vector<int64_t> domain = domain_of(op, full.sizes());
  for (size_t i = 0; i < in.size(); ++i) {
    const at::Tensor& t = in[i];
    if (op.axes[i] == 0) {
      TORCH_CHECK_VALUE(t.sizes() == full.sizes(), "fusekit op '", op.name, "': input '", op.inputs[i],
                        "' has shape ", t.sizes(), ", not the region's ", full.sizes());
      if (op.layout == kFlat) {  // elementwise: any dense layout, the same for every full tensor
        TORCH_CHECK_VALUE(t.is_non_overlapping_and_dense() && t.strides() == full.strides(), "fusekit op '",
                          op.name, "': input '", op.inputs[i], "' has strides ", t.strides(),
                          "; the kernel needs dense tensors with the same strides (", full.strides(),
                          "); call .contiguous()");
      } else {
        TORCH_CHECK_VALUE(t.is_contiguous(), "fusekit op '", op.name, "': input '", op.inputs[i], "' has strides ",
                          t.strides(), t.is_contiguous(at::MemoryFormat::ChannelsLast) ? " (channels-last)" : "",
                          "; this kernel indexes rows/channels of a contiguous tensor; call .contiguous()");
      }
    } else {
      const int64_t want = broadcast_extent(domain, op.axes[i]);
      TORCH_CHECK_VALUE(t.numel() == want && t.is_contiguous(), "fusekit op '", op.name, "': input '",
                        op.inputs[i], "' has shape ", t.sizes(), " (", t.numel(), " elements",
                        t.is_contiguous() ? "" : ", not contiguous", "); the kernel takes ", want,
                        " contiguous elements for it");
    }
  }
  return domain;
}

// The op's outputs, written to out[0..n_out): allocated by PyTorch like the
// region's full input (the caching allocator on its device, or meta/fake).
// Sizes and strides given outright (empty_strided, empty) where empty_like's
// would be the same, since empty_like dispatches twice; while tracing
// (symbolic shapes) an elementwise op keeps empty_like's layout rule.
void allocate_outputs(const Op& op, const at::Tensor& full, at::Tensor* out, size_t n_out) {
  const bool symbolic = full.unsafeGetTensorImpl()->has_symbolic_sizes_strides();
  for (size_t o = 0; o < n_out; ++o) {
    if (op.layout != kFlat)
      out[o] = at::empty_symint(full.sym_sizes(), full.options());
    else if (!symbolic && full.is_non_overlapping_and_dense())
      out[o] = at::empty_strided(full.sizes(), full.strides(), full.options());
    else
      out[o] = at::empty_like(full, at::MemoryFormat::Preserve);
  }
}

void run_meta(int64_t id, c10::ArrayRef<at::Tensor> inputs, at::Tensor* out, size_t n_out) {
  const Op& op = op_at(id);
  check_inputs(op, inputs, n_out);
  allocate_outputs(op, inputs[op.shape_of], out, n_out);
}

void run_device(int64_t id, c10::ArrayRef<at::Tensor> inputs, at::Tensor* out, size_t n_out) {
  const Op& op = op_at(id);
  const std::vector<int64_t> domain = check_inputs(op, inputs, n_out);
  const at::Tensor& full = inputs[op.shape_of];
  for (size_t i = 0; i < inputs.size(); ++i)
    TORCH_CHECK_VALUE(inputs[i].is_cuda() && inputs[i].device() == full.device(), "fusekit op '", op.name,
                      "': input '", op.inputs[i], "' is on ", inputs[i].device(), "; the kernel needs every tensor on ",
                      full.is_cuda() ? full.device().str() : std::string("one CUDA device"));
  TORCH_CHECK_VALUE(inputs.size() <= 16 && n_out <= 16, "fusekit op '", op.name, "': over 16 tensors");
#if defined(FUSEKIT_HAVE_C10_CUDA)
  const c10::cuda::CUDAGuard guard(full.device());
  CUstream stream = reinterpret_cast<CUstream>(c10::cuda::getCurrentCUDAStream(full.device().index()).stream());
#else
  // Built without c10/cuda headers: the legacy default stream.
  CUstream stream = nullptr;
#endif
  allocate_outputs(op, full, out, n_out);
  const void* in_ptrs[16];
  void* out_ptrs[16];
  for (size_t i = 0; i < inputs.size(); ++i) in_ptrs[i] = inputs[i].data_ptr();
  for (size_t o = 0; o < n_out; ++o) out_ptrs[o] = out[o].data_ptr();
  const int rc = op.package->launch(op.name.c_str(), op.dtype.c_str(), in_ptrs, static_cast<int>(inputs.size()),
                                    out_ptrs, static_cast<int>(n_out), op.params.data(),
                                    static_cast<int>(op.params.size()), domain.data(),
                                    static_cast<int>(domain.size()), stream);
  TORCH_CHECK(rc == 0, "fusekit op '", op.name, "' (", op.dtype, ", package ", op.package->path,
              ") failed: ", op.package->last_error());
}

using run_fn = void (*)(int64_t, c10::ArrayRef<at::Tensor>, at::Tensor*, size_t);

// The generic operator: as many outputs as the op has.
template <run_fn Run>
std::vector<at::Tensor> launch_list(int64_t id, std::vector<at::Tensor> inputs) {
  std::vector<at::Tensor> out(op_at(id).outputs.size());
  Run(id, inputs, out.data(), out.size());
  return out;
}

// The fixed family: launch_<NIn>_<NOut>, one Tensor argument per input and a
// Tensor (NOut 1) or a tuple of NOut Tensors back.
constexpr size_t kMaxFixedInputs = 8, kMaxFixedOutputs = 3;

template <size_t> using TensorArg = const at::Tensor&;
template <size_t> using TensorOut = at::Tensor;

template <typename Seq> struct OutputsOf;
template <size_t... O> struct OutputsOf<std::index_sequence<O...>> {
  using type = std::tuple<TensorOut<O>...>;
  static type pack(at::Tensor* out) { return type(std::move(out[O])...); }
};
template <> struct OutputsOf<std::index_sequence<0>> {
  using type = at::Tensor;
  static type pack(at::Tensor* out) { return std::move(out[0]); }
};

template <run_fn Run, size_t NOut, typename Inputs> struct Fixed;
template <run_fn Run, size_t NOut, size_t... I> struct Fixed<Run, NOut, std::index_sequence<I...>> {
  using Outputs = OutputsOf<std::make_index_sequence<NOut>>;
  static typename Outputs::type call(int64_t id, TensorArg<I>... inputs) {
    const at::Tensor in[] = {inputs...};
    at::Tensor out[NOut];
    Run(id, c10::ArrayRef<at::Tensor>(in, sizeof...(I)), out, NOut);
    return Outputs::pack(out);
  }
};

std::string fixed_name(size_t n_in, size_t n_out) {
  return "launch_" + std::to_string(n_in) + "_" + std::to_string(n_out);
}

std::string fixed_schema(size_t n_in, size_t n_out) {
  std::string s = fixed_name(n_in, n_out) + "(int op";
  for (size_t i = 0; i < n_in; ++i) s += ", Tensor i" + std::to_string(i);
  s += ") -> ";
  if (n_out == 1) return s + "Tensor";
  s += "(Tensor";
  for (size_t o = 1; o < n_out; ++o) s += ", Tensor";
  return s + ")";
}

// def (Run == nullptr) or impl every member with NOut outputs.
template <run_fn Run, size_t NOut, size_t... In>
void register_row(torch::Library& m, std::index_sequence<In...>) {
  if constexpr (Run == nullptr) {
    (m.def(fixed_schema(In + 1, NOut).c_str()), ...);
  } else {
    (m.impl(fixed_name(In + 1, NOut).c_str(), &Fixed<Run, NOut, std::make_index_sequence<In + 1>>::call), ...);
  }
}

template <run_fn Run, size_t... Out>
void register_family(torch::Library& m, std::index_sequence<Out...>) {
  (register_row<Run, Out + 1>(m, std::make_index_sequence<kMaxFixedInputs>()), ...);
}

template <run_fn Run>
void register_family(torch::Library& m) {
  register_family<Run>(m, std::make_index_sequence<kMaxFixedOutputs>());
}

std::vector<int64_t> fixed_arity() {
  return {static_cast<int64_t>(kMaxFixedInputs), static_cast<int64_t>(kMaxFixedOutputs)};
}

// Which kernel the package takes for a full tensor of `sizes` with pointers
// aligned to `alignment` bytes on the current device, and why; needs a CUDA
// context (the package asks the driver for the device's arch).
std::string explain(int64_t id, std::vector<int64_t> sizes, int64_t alignment) {
  const Op& op = op_at(id);
  const std::vector<int64_t> domain = domain_of(op, sizes);
  char buffer[1024] = {0};
  const int rc = op.package->explain(op.name.c_str(), op.dtype.c_str(), domain.data(),
                                     static_cast<int>(domain.size()), static_cast<int>(alignment), buffer,
                                     sizeof(buffer));
  if (rc != 0) return std::string("error: ") + op.package->last_error();
  return buffer;
}

bool has_current_stream() {
#if defined(FUSEKIT_HAVE_C10_CUDA)
  return true;
#else
  return false;
#endif
}

}  // namespace

// The registry calls are operators too (no tensors: catch-all kernels), so the
// library is a plain torch.ops library: no Python bindings, loadable by
// torch.ops.load_library in any process.
TORCH_LIBRARY(fusekit, m) {
  m.def("launch(int op, Tensor[] inputs) -> Tensor[]");
  register_family<nullptr>(m);
  m.def("fixed_arity() -> int[]", &fixed_arity);
  m.def("load_package(str path) -> int", &load_package);
  m.def("register_op(int package, str name, str dtype, int layout, str[] inputs, int[] axes, str[] outputs, "
        "float[] params) -> int",
        &register_op);
  m.def("explain(int op, int[] sizes, int alignment) -> str", &explain);
  m.def("has_current_stream() -> bool", &has_current_stream);
}

// CPU tensors reach the same kernel so that the device check names the tensor
// instead of the dispatcher's "no CPU kernel" message. The Meta kernels are
// the fake kernels torch.compile and torch.export trace through.
TORCH_LIBRARY_IMPL(fusekit, CUDA, m) {
  m.impl("launch", &launch_list<&run_device>);
  register_family<&run_device>(m);
}
TORCH_LIBRARY_IMPL(fusekit, CPU, m) {
  m.impl("launch", &launch_list<&run_device>);
  register_family<&run_device>(m);
}
TORCH_LIBRARY_IMPL(fusekit, Meta, m) {
  m.impl("launch", &launch_list<&run_meta>);
  register_family<&run_meta>(m);
}
