// Prints the CUDA C of a row-reduction kernel (RowReductionTemplate) from
// the pipeline's own Exprs: each RowReduction's body becomes fk_body<k>(),
// the outputs fk_point(); calls to reductions print as the row's reduced
// values red<k>. See schedules/row_reduction_template.h for the schedule.
#include "generator/nvrtc/row_printer.h"

#include <algorithm>
#include <functional>
#include <map>
#include <set>
#include <sstream>

#include "common/errors.h"
#include "generator/candidates/op_traits.h"
#include "generator/nvrtc/cuda_expr.h"
#include "schedules/row_reduction_template.h"

namespace fusekit {
namespace {

using Halide::Expr;

// Helpers that know the block's shape: loads that fall back to guarded
// scalars, and the row combine (warp shuffles, shared memory across warps).
const char* kRowHelpers = R"cuda(
template <typename T, int N>
static __device__ __forceinline__ fk_pack<T, N> fk_load(const T* p, int col0, int cols, bool aligned) {
  fk_pack<T, N> d;
  if (aligned && col0 + N <= cols) {
    d = *reinterpret_cast<const fk_pack<T, N>*>(p + col0);
  } else {
#pragma unroll
    for (int l = 0; l < N; ++l) d.v[l] = col0 + l < cols ? p[col0 + l] : T(0);
  }
  return d;
}
// A 16-bit row cached in registers stays packed, two elements per 32-bit
// register: loaded as words and split into elements afresh in every pass
// (split once at the load, each element would hold a register of its own).
template <int N>
static __device__ __forceinline__ fk_pack<unsigned, N / 2> fk_load_words(const unsigned short* p, int col0, int cols,
                                                                        bool aligned) {
  fk_pack<unsigned, N / 2> d;
  if (aligned && col0 + N <= cols) {
    d = *reinterpret_cast<const fk_pack<unsigned, N / 2>*>(p + col0);
  } else {
#pragma unroll
    for (int l = 0; l < N / 2; ++l) {
      const unsigned lo = col0 + 2 * l < cols ? p[col0 + 2 * l] : 0u;
      const unsigned hi = col0 + 2 * l + 1 < cols ? p[col0 + 2 * l + 1] : 0u;
      d.v[l] = lo | (hi << 16);
    }
  }
  return d;
}
template <int N>
static __device__ __forceinline__ fk_pack<unsigned short, N> fk_unwords(const fk_pack<unsigned, N / 2>& w) {
  fk_pack<unsigned short, N> p;
#pragma unroll
  for (int i = 0; i < N / 2; ++i) {
    p.v[2 * i] = static_cast<unsigned short>(w.v[i] & 0xffffu);
    p.v[2 * i + 1] = static_cast<unsigned short>(w.v[i] >> 16);
  }
  return p;
}
// Combines `v` across the kT threads of a row (threadIdx.x); every thread of
// the block calls it, and every thread gets the row's value.
template <int kT, bool kMax>
static __device__ __forceinline__ float fk_row_combine(float v, float* smem) {
#pragma unroll
  for (int o = (kT < 32 ? kT : 32) / 2; o > 0; o >>= 1) {
    const float u = __shfl_xor_sync(0xffffffffu, v, o);
    v = kMax ? fmaxf(v, u) : v + u;
  }
  if (kT > 32) {
    __syncthreads();  // the previous combine's reads of smem are done
    if (threadIdx.x % 32 == 0) smem[threadIdx.x / 32] = v;
    __syncthreads();
    v = smem[0];
#pragma unroll
    for (int w = 1; w < kT / 32; ++w) v = kMax ? fmaxf(v, smem[w]) : v + smem[w];
  }
  return v;
}
// Rows split across the kS blocks of a cluster (sm_90): each block leaves
// its row value in `slot` (its own shared memory), and every block combines
// all kS of them in rank order, so every block gets the same bits. Slots
// alternate between consecutive reductions: a block rewrites a slot only
// after the next reduction's cluster barrier, which every block reaches
// after its reads of the slot.
#if __CUDA_ARCH__ >= 900
static __device__ __forceinline__ unsigned fk_cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}
template <int kS, bool kMax>
static __device__ __forceinline__ float fk_cluster_combine(float v, float* slot) {
  if (threadIdx.x == 0) *slot = v;
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
  const unsigned local = static_cast<unsigned>(__cvta_generic_to_shared(slot));
  float r = 0.0f;
#pragma unroll
  for (unsigned b = 0; b < kS; ++b) {
    unsigned remote;
    float u;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(b));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(u) : "r"(remote) : "memory");
    r = b == 0 ? u : (kMax ? fmaxf(r, u) : r + u);
  }
  return r;
}
// A block's shared memory must outlive the other blocks' reads of it: after
// its last remote read a block arrives, and it waits before it exits.
static __device__ __forceinline__ void fk_cluster_arrive() {
  asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory");
}
static __device__ __forceinline__ void fk_cluster_wait() {
  asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory");
}
#endif
)cuda";

// Persistent staged rows (persist > 0, sm_80+): each thread copies its own
// slots of the next row group into shared memory with cp.async (no register
// holds the data on the way), while it works on the current group.
const char* kAsyncCopyHelpers = R"cuda(
#if __CUDA_ARCH__ >= 800
template <int N>
static __device__ __forceinline__ void fk_copy_async(void* smem, const void* global) {
  const unsigned s = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  if (N == 16) asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(global) : "memory");
  else asm volatile("cp.async.ca.shared.global [%0], [%1], %2;" ::"r"(s), "l"(global), "n"(N) : "memory");
}
static __device__ __forceinline__ void fk_copy_commit() { asm volatile("cp.async.commit_group;" ::: "memory"); }
// Every copy but the latest committed group's has landed (for this thread).
static __device__ __forceinline__ void fk_copy_wait_prior() { asm volatile("cp.async.wait_group 1;" ::: "memory"); }
#endif
)cuda";

// Two consecutive reductions finished by one combine (onepass=1): each
// thread reduces its own elements to statistics (a, b, n), and the row
// merges them pairwise. The merge is symmetric in its arguments (explicit
// roundings, no contraction), so both threads of a butterfly get the same
// bits and every thread of a row gets the same row values.
//   kOp 0: a = mean, b = sum of squared deviations from it, n = count
//          (the pairwise update of Chan, Golub and LeVeque)
//   kOp 1: a = max, b = sum of exp(x - a) (online softmax)
const char* kPairHelpers = R"cuda(
struct fk_stat { float a, b, n; };
template <int kOp>
static __device__ __forceinline__ fk_stat fk_merge(const fk_stat& x, const fk_stat& y) {
  fk_stat r;
  if (kOp == 0) {
    r.n = x.n + y.n;
    if (r.n == 0.0f) return fk_stat{0.0f, 0.0f, 0.0f};
    const float d = y.a - x.a;  // squared below: the sign drops out
    const float inv = __fdividef(1.0f, r.n);  // of r.n alone: symmetric
    r.a = __fmul_rn(__fadd_rn(__fmul_rn(x.n, x.a), __fmul_rn(y.n, y.a)), inv);
    r.b = __fadd_rn(__fadd_rn(x.b, y.b), __fmul_rn(__fmul_rn(d, d), __fmul_rn(__fmul_rn(x.n, y.n), inv)));
  } else {
    r.n = 0.0f;
    r.a = fmaxf(x.a, y.a);
    // Both empty (or all -inf): no term to rescale.
    if (r.a == -__int_as_float(0x7f800000)) r.b = __fadd_rn(x.b, y.b);
    else r.b = __fadd_rn(__fmul_rn(x.b, __expf(x.a - r.a)), __fmul_rn(y.b, __expf(y.a - r.a)));
  }
  return r;
}
// One thread's running statistic t, updated by a vector's v (in order,
// within the thread: no symmetry needed).
template <int kOp>
static __device__ __forceinline__ fk_stat fk_update(fk_stat t, const fk_stat& v) {
  if (kOp == 0) {
    const float n = t.n + v.n, d = v.a - t.a, r = __fdividef(v.n, n);
    t.a += d * r;
    t.b += v.b + d * d * t.n * r;
    t.n = n;
  } else {
    const float m = fmaxf(t.a, v.a);
    if (m == -__int_as_float(0x7f800000)) return t;
    t.b = t.b * __expf(t.a - m) + v.b * __expf(v.a - m);
    t.a = m;
  }
  return t;
}
// v merged with lane (lane ^ o)'s.
template <int kOp>
static __device__ __forceinline__ fk_stat fk_merge_lane(const fk_stat& v, int o) {
  return fk_merge<kOp>(v, fk_stat{__shfl_xor_sync(0xffffffffu, v.a, o), __shfl_xor_sync(0xffffffffu, v.b, o),
                                  __shfl_xor_sync(0xffffffffu, v.n, o)});
}
// fk_row_combine for statistics; smem holds 3 * 32 floats. Past a warp,
// each warp merges the warps' statistics with a butterfly of its own (every
// group of kT / 32 lanes holds a copy), so a thread merges log2(kT) times,
// not kT / 32 - 1 times in a row.
template <int kT, int kOp>
static __device__ __forceinline__ fk_stat fk_row_combine_pair(fk_stat v, float* smem) {
#pragma unroll
  for (int o = (kT < 32 ? kT : 32) / 2; o > 0; o >>= 1) v = fk_merge_lane<kOp>(v, o);
  if (kT > 32) {
    __syncthreads();  // the previous combine's reads of smem are done
    if (threadIdx.x % 32 == 0) {
      smem[threadIdx.x / 32] = v.a;
      smem[32 + threadIdx.x / 32] = v.b;
      smem[64 + threadIdx.x / 32] = v.n;
    }
    __syncthreads();
    const int w = threadIdx.x % (kT / 32);
    v = fk_stat{smem[w], smem[32 + w], smem[64 + w]};
#pragma unroll
    for (int o = kT / 64; o > 0; o >>= 1) v = fk_merge_lane<kOp>(v, o);
  }
  return v;
}
#if __CUDA_ARCH__ >= 900
// fk_cluster_combine for statistics; slot holds 3 floats.
template <int kS, int kOp>
static __device__ __forceinline__ fk_stat fk_cluster_combine_pair(fk_stat v, float* slot) {
  if (threadIdx.x == 0) {
    slot[0] = v.a;
    slot[1] = v.b;
    slot[2] = v.n;
  }
  asm volatile("barrier.cluster.arrive.release.aligned;\n\tbarrier.cluster.wait.acquire.aligned;" ::: "memory");
  const unsigned local = static_cast<unsigned>(__cvta_generic_to_shared(slot));
  fk_stat r{0.0f, 0.0f, 0.0f};
#pragma unroll
  for (unsigned b = 0; b < kS; ++b) {
    unsigned remote;
    fk_stat u;
    asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(b));
    asm volatile("ld.shared::cluster.f32 %0, [%1];" : "=f"(u.a) : "r"(remote) : "memory");
    asm volatile("ld.shared::cluster.f32 %0, [%1 + 4];" : "=f"(u.b) : "r"(remote) : "memory");
    asm volatile("ld.shared::cluster.f32 %0, [%1 + 8];" : "=f"(u.n) : "r"(remote) : "memory");
    r = b == 0 ? u : fk_merge<kOp>(r, u);
  }
  return r;
}
#endif
)cuda";

// Row loads with eviction policies (hint=1 and 2, sm_80+): fk_keep for data
// read again (weights, every row; a row a later pass re-reads), fk_stream
// for a last read. The aligned vector load carries the L2 policy, and with
// kL1 the matching L1 priority (1: evict_last, 2: evict_first; hint=2); the
// scalar fallback carries neither. fk_policy and fk_ldg_hint come from
// cuda_load_hint_helpers().
const char* kHintHelpers = R"cuda(template <typename T, int N, int kL1 = 0>
static __device__ __forceinline__ fk_pack<T, N> fk_load_hint(const T* p, int col0, int cols, bool aligned,
                                                           unsigned long long policy) {
  if (aligned && col0 + N <= cols) return fk_ldg_hint<T, N, kL1>(p + col0, policy);
  return fk_load<T, N>(p, col0, cols, false);
}
template <int N, int kL1 = 0>
static __device__ __forceinline__ fk_pack<unsigned, N / 2> fk_load_words_hint(const unsigned short* p, int col0, int cols,
                                                                             bool aligned, unsigned long long policy) {
  if (aligned && col0 + N <= cols)
    return fk_ldg_hint<unsigned, N / 2, kL1>(reinterpret_cast<const unsigned*>(p + col0), policy);
  return fk_load_words<N>(p, col0, cols, false);
}
)cuda";

using Halide::Internal::Call;

// True when `e` reads no element of an input and no column: only the row's
// reductions (named in `reductions`), parameters and constants.
bool row_invariant(const Expr& e, const std::map<std::string, std::string>& reductions) {
  class Finder : public Halide::Internal::IRVisitor {
   public:
    explicit Finder(const std::map<std::string, std::string>& r) : reductions_(r) {}
    bool varies = false;

   private:
    using IRVisitor::visit;
    void visit(const Call* op) override {
      if (op->call_type == Call::Image) varies = true;
      else if (op->call_type != Call::Halide) IRVisitor::visit(op);
      // A reduction's value is the row's (its `row` argument is no column).
      else if (!reductions_.count(Halide::Internal::Function(op->func).name())) varies = true;
    }
    void visit(const Halide::Internal::Variable* op) override {
      if (!op->param.defined()) varies = true;
    }
    void visit(const Halide::Internal::Let*) override { varies = true; }
    const std::map<std::string, std::string>& reductions_;
  } finder(reductions);
  e.accept(&finder);
  return !finder.varies;
}

// Divisions of an output by a row-invariant value become multiplications by
// its reciprocal, computed once per row: rc<i> = 1 / d<i>. The result is
// within an ulp or two of the division, far inside any row tolerance.
class HoistRowDivisors : public Halide::Internal::IRMutator {
 public:
  HoistRowDivisors(const std::map<std::string, std::string>& reductions, std::vector<Halide::Var> vars)
      : reductions_(reductions), vars_(std::move(vars)) {}
  std::vector<Expr> divisors;
  std::vector<Halide::Func> funcs;  // fk_rc<i>(col, row), called in place of 1 / d<i>

 private:
  using IRMutator::visit;
  Expr visit(const Halide::Internal::Div* op) override {
    const Expr a = mutate(op->a);
    if (op->type != Halide::Float(32) || !row_invariant(op->b, reductions_))
      return Halide::Internal::Div::make(a, mutate(op->b));
    size_t i = 0;
    while (i < divisors.size() && !Halide::Internal::graph_equal(divisors[i], op->b)) ++i;
    if (i == divisors.size()) {
      divisors.push_back(op->b);
      funcs.emplace_back("fk_rc" + std::to_string(i));
      funcs.back()(vars_) = 1.0f / op->b;
    }
    return a * funcs[i](vars_);
  }
  const std::map<std::string, std::string>& reductions_;
  const std::vector<Halide::Var> vars_;
};

// Names of the images `e` reads ("in_x"), looking through calls to other
// Funcs except those named in `opaque` (reductions, kept bodies, reciprocals:
// values the kernel holds, not reads of an input).
void collect_images(const Expr& e, const std::map<std::string, std::string>& opaque, std::set<std::string>* out) {
  class Collector : public Halide::Internal::IRVisitor {
   public:
    Collector(const std::map<std::string, std::string>& o, std::set<std::string>* names) : opaque_(o), names_(names) {}

   private:
    using IRVisitor::visit;
    void visit(const Call* op) override {
      IRVisitor::visit(op);  // the arguments
      if (op->call_type == Call::Image) {
        names_->insert(op->param.defined() ? op->param.name() : op->name);
      } else if (op->call_type == Call::Halide) {
        const Halide::Internal::Function f(op->func);
        if (opaque_.count(f.name()) || !f.has_pure_definition()) return;
        for (const Expr& v : f.values()) v.accept(this);
      }
    }
    const std::map<std::string, std::string>& opaque_;
    std::set<std::string>* names_;
  } collector(opaque, out);
  e.accept(&collector);
}

// True when a reduction body is worth keeping per element for the outputs:
// anything but a plain (converted) input element.
bool worth_keeping(Expr e) {
  while (const auto* c = e.as<Halide::Internal::Cast>()) e = c->value;
  return !e.as<Call>() || e.as<Call>()->call_type == Call::PureExtern || e.as<Call>()->call_type == Call::Intrinsic;
}

// True when `e` calls reduction `r`'s value.

}  // namespace

PrintedKernel print_row_reduction_kernel(const FusionCandidate& cand, const Pipeline& pipe, const Config& config,
                                         const std::string& entry) {
  FUSEKIT_INTERNAL_ASSERT(cand.reduces(), cand.name + " is not a row reduction");
  // ndrows: a row is a point (c1, c2, c3) of the outer axes, found from the
  // row index by two divisions once per row (not per element); an input
  // indexed by d0 and outer axes is read like a full row at its own offset.
  const bool nd = cand.layout == Layout::kNdRows;
  auto streamed = [](const InputSpec& in) { return in.reads_rows(); };
  auto row_offset = [&](const InputSpec& in, const std::string& c) {
    std::vector<int> outer;
    for (int a : in.axes)
      if (a != 0) outer.push_back(a);
    std::string off = c + std::to_string(outer.back());
    for (size_t j = outer.size() - 1; j-- > 0;)
      off = c + std::to_string(outer[j]) + " + e" + std::to_string(outer[j]) + " * (" + off + ")";
    return off;
  };
  auto row_coords = [&](const std::string& in, const std::string& r, const std::string& c) {
    return in + "const long long " + c + "q = " + r + " / e1, " + c + "1 = " + r + " - " + c + "q * e1, " + c + "3 = " +
           c + "q / e2, " + c + "2 = " + c + "q - " + c + "3 * e2;\n";
  };
  const int threads = static_cast<int>(config.get("threads"));
  const int rows = static_cast<int>(config.get("rows"));
  const int vec = static_cast<int>(config.get("vec"));
  const int cache = static_cast<int>(config.get("cache"));
  const int split = static_cast<int>(config.get_or("split", 1));
  // keep=0: the outputs evaluate reduction bodies again instead of holding
  // them per element (fewer registers, more arithmetic). Records from before
  // the parameter existed kept them (keep=1). keep=2: kept bodies also feed
  // the later reductions of the cached path (add_layernorm's variance reads
  // the kept x + residual, so the inputs' registers free after the first pass).
  const int64_t keep_mode = config.get_or("keep", 1);
  const bool keep_bodies = keep_mode != 0, feed_later = keep_mode == 2;
  // smem=1: the cached row lives in shared memory instead of registers; the
  // first pass loads it and stages only what later passes read (inputs,
  // kept bodies). A thread reads back only its own slots: no barrier.
  const bool staged = cache > 0 && config.get_or("smem", 0) == 1;
  // unroll=U: a re-reading pass loads U vectors of every full input before
  // it uses the first (U loads in flight per thread instead of one).
  const int unroll = static_cast<int>(config.get_or("unroll", 1));
  // persist=P: P blocks per SM (a multiple of the cluster), each looping
  // over row groups; a staged row's copy of the next group is in flight
  // (cp.async, double-buffered) while the block works on the current one.
  const int persist = static_cast<int>(config.get_or("persist", 0));
  if (persist > 0 && !staged)
    throw UserError("schedule '" + config.to_string() + "' has persist=" + std::to_string(persist) +
                    " without a staged row: persistent blocks prefetch into shared memory; set smem=1 and cache > 0");
  const int64_t vector_bytes = vec * static_cast<int64_t>(dtype_bytes(pipe.dtype));
  if (persist > 0 && vector_bytes != 4 && vector_bytes != 8 && vector_bytes != 16)
    throw UserError("schedule '" + config.to_string() + "' has persist=" + std::to_string(persist) +
                    " with vectors of " + std::to_string(vector_bytes) + " bytes; an asynchronous copy moves 4, 8 or 16: " +
                    (vector_bytes < 4 ? "raise vec" : "lower vec"));
  // onepass=1: each pair of reductions that one combine can finish
  // (find_reduction_pairs) is reduced by every thread, both of them, and
  // combined once: over its cached elements (the second pass reads them
  // again), or, reading the row from memory, vector by vector in one pass.
  const bool onepass = config.get_or("onepass", 0) == 1;
  const std::vector<ReductionPair> pairs = onepass ? find_reduction_pairs(pipe) : std::vector<ReductionPair>{};
  if (onepass && pairs.empty())
    throw UserError("schedule '" + config.to_string() + "' has onepass=1, but no two reductions of " + cand.name +
                    " combine together (a mean and the mean of squared deviations from it, or a max and the sum of "
                    "exp(v - max)): set onepass=0");
  auto pair_at = [&](size_t k) -> const ReductionPair* {
    for (const auto& pr : pairs)
      if (pr.first == k) return &pr;
    return nullptr;
  };
  auto pair_second = [&](size_t k) { return k > 0 && pair_at(k - 1) != nullptr; };
  // wbatch=1: the output pass of a cached row loads every vector of each
  // weight (an input indexed by the column alone) before it uses the first.
  const bool wbatch = config.get_or("wbatch", 0) == 1;
  const bool has_weights = std::any_of(cand.inputs.begin(), cand.inputs.end(),
                                       [](const InputSpec& in) { return in.axes == std::vector<int>{0}; });
  if (wbatch && (!has_weights || cache == 0))
    throw UserError("schedule '" + config.to_string() + "' has wbatch=1, but " +
                    (cache == 0 ? std::string("cache=0 re-reads the row: raise cache")
                                : cand.name + " has no weight (an input indexed by the column alone): set wbatch=0"));
  // hint=1: row loads tell the L2 what to keep (fk_keep: weights, rows a
  // later pass reads again) and what to drop first (fk_stream: last reads).
  // hint=2: also the L1, and a row read once (cached in registers or
  // staged) is read with fk_keep, as Inductor's first read of a row is,
  // because a held row dropped first from L2 costs more than it saves
  // (docs/architecture.md, "Decisions and findings").
  const int hint = load_hint(config);
  // minb=B: registers capped so that B blocks fit on an SM.
  const int min_blocks = static_cast<int>(config.get_or("minb", 0));
  if (min_blocks > 0 && persist > 0)
    throw UserError("schedule '" + config.to_string() + "' has minb=" + std::to_string(min_blocks) +
                    " and persist=" + std::to_string(persist) +
                    ": a persistent kernel's bound is its blocks per SM; set minb=0");
  const std::string read_once = hint == 2 ? "fk_keep" : "fk_stream";
  // len=L: the kernel is compiled for rows of exactly L columns (`cols` a
  // constant: the cached path's guards, alignment test and fallback fold
  // away); the runtime launches it for no other row length.
  const int64_t fixed_cols = RowReductionTemplate::fixed_row_length(config);
  if (fixed_cols != 0) RowReductionTemplate::specialize(config, fixed_cols);  // UserError for a length no row has
  const std::string st = pipe.dtype == DType::kF32 ? "float" : "unsigned short";
  // The call that loads vector col0 of `ptr` (as words: a packed 16-bit row).
  // `policy` names the policy variable, used with hint=1 and 2.
  auto load = [&](bool as_words, const std::string& ptr, const std::string& policy) {
    const std::string f = as_words ? "fk_load_words" : "fk_load";
    const std::string l1 = hint == 2 ? (policy == "fk_keep" ? ", 1" : ", 2") : "";
    const std::string targs = (as_words ? "<kV" : "<" + st + ", kV") + l1 + ">(";
    return hint != 0 ? f + "_hint" + targs + ptr + ", col0, cols, aligned, " + policy + ")"
                     : f + targs + ptr + ", col0, cols, aligned)";
  };
  // The policy of the full inputs' loads in the pass being printed.
  std::string row_policy = "fk_stream";
  const bool words = pipe.dtype != DType::kF32 && vec >= 2;  // a cached 16-bit row stays packed
  const std::string round1 = round_one_fn(pipe.dtype);
  const size_t nred = pipe.reductions.size();

  std::map<std::string, std::string> red_values;
  for (size_t k = 0; k < nred; ++k) red_values[pipe.reductions[k].func.name()] = "red" + std::to_string(k);

  std::ostringstream src;
  src << cuda_prelude() << kRowHelpers;
  if (persist > 0) src << kAsyncCopyHelpers;
  if (!pairs.empty()) src << kPairHelpers;
  if (hint != 0) src << cuda_load_hint_helpers(kHintHelpers);

  // fk_body<k> and fk_point share one argument list: every input's value at
  // the column, every reduction, every parameter.
  std::string sig;
  auto add_sig = [&](const std::string& s) { sig += (sig.empty() ? "" : ", ") + s; };
  for (const auto& in : cand.inputs) add_sig("const " + st + " " + halide_input_name(in.name));
  for (size_t k = 0; k < nred; ++k) add_sig("const float red" + std::to_string(k));
  for (const auto& p : cand.params) add_sig("const float " + halide_param_name(p.name));
  auto strip_cast = [&](Expr e) {
    if (const auto* c = e.as<Halide::Internal::Cast>(); c && c->value.type() == Halide::Float(32)) e = c->value;
    // A constant output: Halide folded the cast into a storage-typed constant.
    if (const auto* f = e.as<Halide::Internal::FloatImm>())
      e = Halide::Internal::FloatImm::make(Halide::Float(32), f->value);
    if (e.type() != Halide::Float(32)) throw InternalError("row reduction printer: math is not f32");
    return Halide::Internal::common_subexpression_elimination(e);
  };
  for (size_t k = 0; k < nred; ++k) {
    std::string stmts;
    const std::string value =
        print_cuda_expr(strip_cast(pipe.reductions[k].body.value()), &stmts, "b" + std::to_string(k) + "_", &red_values);
    src << "static __device__ __forceinline__ float fk_body" << k << "(" << sig << ") {\n"
        << stmts << "  return " << value << ";\n}\n";
  }
  // The outputs see each worthwhile reduction body that they contain as
  // kb<k> (kept per element in registers by the cached path: softmax's
  // exp(x - max) is evaluated once), and each row-invariant divisor as a
  // reciprocal rc<i>.
  std::vector<Expr> outputs = pipe.stored;
  std::vector<size_t> kept;
  std::map<std::string, std::string> point_values = red_values;
  // The cached path's reduction bodies; with keep=2, kept earlier bodies
  // substituted into them.
  std::vector<Expr> cached_bodies;
  for (const auto& r : pipe.reductions) cached_bodies.push_back(r.body.value());
  // Later bodies first: they may contain earlier ones (bias_add_softmax's
  // exp(scale * x + mask - max) holds the max's body).
  for (size_t k = nred; k-- > 0;) {
    const Expr body = pipe.reductions[k].body.value();
    // A pair's second body is evaluated against the thread's own statistic
    // (its mean or max), not the row's: nothing to keep for the outputs.
    if (!keep_bodies || !worth_keeping(body) || pair_second(k)) continue;
    Halide::Func kb("fk_kb" + std::to_string(k));
    kb(pipe.vars) = body;
    bool used = false;
    auto replace_in = [&](Expr& e) {
      const Expr replaced = Halide::Internal::substitute(body, kb(pipe.vars), e);
      used = used || !replaced.same_as(e);
      e = replaced;
    };
    for (auto& e : outputs) replace_in(e);
    if (feed_later)
      for (size_t j = k + 1; j < nred; ++j) replace_in(cached_bodies[j]);
    if (!used) continue;
    kept.insert(kept.begin(), k);
    point_values[kb.name()] = "kb" + std::to_string(k);
  }
  // fk_cbody<k>: a cached-path body that reads kept earlier bodies, which
  // come after the shared arguments.
  auto kept_before = [&](size_t k) {
    std::vector<std::string> names;
    for (size_t i : kept)
      if (i < k) names.push_back("kb" + std::to_string(i));
    return names;
  };
  std::vector<bool> reads_kept(nred, false);
  for (size_t k = 0; k < nred; ++k) {
    if (cached_bodies[k].same_as(pipe.reductions[k].body.value())) continue;
    reads_kept[k] = true;
    std::string csig = sig;
    for (const std::string& kb : kept_before(k)) csig += ", const float " + kb;
    std::string stmts;
    const std::string value =
        print_cuda_expr(strip_cast(cached_bodies[k]), &stmts, "c" + std::to_string(k) + "_", &point_values);
    src << "static __device__ __forceinline__ float fk_cbody" << k << "(" << csig << ") {\n"
        << stmts << "  return " << value << ";\n}\n";
  }
  HoistRowDivisors hoist(red_values, pipe.vars);
  for (auto& e : outputs) e = hoist.mutate(e);
  for (size_t i = 0; i < hoist.funcs.size(); ++i) point_values[hoist.funcs[i].name()] = "rc" + std::to_string(i);

  // Staged row: each full input a later pass or an output reads, and each
  // kept body, gets kC * kR * kT slots in shared memory (one cache_t, or
  // kV floats, per vector).
  struct StageArray {
    std::string name, type;  // s_<input> (cache_t) or sk<k> (float)
    int64_t offset;          // bytes into fk_stage
    bool buffered;           // two buffers (persist: an input's next group)
  };
  std::vector<StageArray> stage;
  int64_t stage_bytes = 0;
  if (staged) {
    std::set<std::string> later_reads;
    for (size_t k = 1; k < nred; ++k) collect_images(cached_bodies[k], point_values, &later_reads);
    for (const auto& e : outputs) collect_images(e, point_values, &later_reads);
    const int64_t slots = static_cast<int64_t>(cache) * rows * threads;
    auto place = [&](const std::string& name, const std::string& type, int64_t bytes, bool buffered) {
      stage.push_back({name, type, stage_bytes, buffered});
      stage_bytes += (buffered ? 2 : 1) * ((bytes + 15) / 16 * 16);
    };
    // A persistent block's first pass reads the staged row too, and the
    // next group's copy lands in a second buffer.
    for (const auto& in : cand.inputs)
      if (streamed(in) && (persist > 0 || later_reads.count(halide_input_name(in.name))))
        place("s_" + in.name, "cache_t", slots * vec * static_cast<int64_t>(dtype_bytes(pipe.dtype)), persist > 0);
    for (size_t k : kept) place("sk" + std::to_string(k), "float", slots * vec * 4, false);
    // sm_90's opt-in maximum, less the combine's static shared memory.
    constexpr int64_t kMostStaged = 227 * 1024 - 4096;
    if (stage_bytes > kMostStaged)
      throw UserError("schedule '" + config.to_string() + "' stages " + std::to_string(stage_bytes) +
                      " bytes of row per block in shared memory; no arch grants more than " +
                      std::to_string(kMostStaged) + ": lower cache, threads or rows");
  }
  auto is_staged = [&](const std::string& input) {
    return std::any_of(stage.begin(), stage.end(), [&](const StageArray& a) { return a.name == "s_" + input; });
  };

  std::string point_sig = sig;
  for (size_t k : kept) point_sig += ", const float kb" + std::to_string(k);
  for (size_t i = 0; i < hoist.divisors.size(); ++i) point_sig += ", const float rc" + std::to_string(i);
  for (size_t o = 0; o < outputs.size(); ++o) point_sig += ", float& o" + std::to_string(o);
  src << "static __device__ __forceinline__ void fk_point(" << point_sig << ") {\n";
  for (size_t o = 0; o < outputs.size(); ++o) {
    std::string stmts;
    const std::string value = print_cuda_expr(strip_cast(outputs[o]), &stmts, "o" + std::to_string(o) + "_",
                                              &point_values);
    src << stmts << "  o" << o << " = " << value << ";\n";
  }
  src << "}\n\n";

  // Kernel parameters, in launch order.
  KernelArtifact launch;
  launch.backend = "nvrtc";
  launch.entry = entry;
  launch.block[0] = threads;
  launch.block[1] = rows;
  launch.pointer_alignment = vec * static_cast<int>(dtype_bytes(pipe.dtype));
  launch.shared_bytes = static_cast<int>(stage_bytes);
  std::string params;
  auto add_param = [&](const std::string& decl, KernelParam p) {
    params += (params.empty() ? "" : ", ") + decl;
    launch.params.push_back(p);
  };
  for (size_t i = 0; i < cand.inputs.size(); ++i)
    add_param("const " + st + "* __restrict__ g_" + cand.inputs[i].name,
              {KernelParam::Kind::kInput, KernelParam::Type::kPtr, static_cast<int>(i), {}});
  for (size_t o = 0; o < pipe.stored.size(); ++o)
    add_param(st + "* __restrict__ g_o" + std::to_string(o),
              {KernelParam::Kind::kOutput, KernelParam::Type::kPtr, static_cast<int>(o), {}});
  for (size_t p = 0; p < cand.params.size(); ++p)
    add_param("const float " + halide_param_name(cand.params[p].name),
              {KernelParam::Kind::kScalarParam, KernelParam::Type::kF32, static_cast<int>(p), {}});
  const LaunchExpr row_count =
      nd ? LaunchExpr::make(LaunchExpr::Op::kMul,
                            {LaunchExpr::symbol("d1"),
                             LaunchExpr::make(LaunchExpr::Op::kMul, {LaunchExpr::symbol("d2"), LaunchExpr::symbol("d3")})})
         : LaunchExpr::symbol("d1");
  add_param("const long long rows", {KernelParam::Kind::kShape, KernelParam::Type::kI64, 0, row_count});
  // A 32-bit row length: the runtime refuses (a Status, no launch) rows of
  // 2^31 columns or more instead of the kernel computing garbage.
  // A specialized kernel keeps the argument (one launch signature) and
  // reads its own constant instead.
  add_param(fixed_cols > 0 ? "const int" : "const int cols",
            {KernelParam::Kind::kShape, KernelParam::Type::kI32, 0, LaunchExpr::symbol("d0")});
  if (nd) {  // the extents a row index splits by
    add_param("const long long e1", {KernelParam::Kind::kShape, KernelParam::Type::kI64, 0, LaunchExpr::symbol("d1")});
    add_param("const long long e2", {KernelParam::Kind::kShape, KernelParam::Type::kI64, 0, LaunchExpr::symbol("d2")});
  }
  launch.row_length = fixed_cols;
  // A split row's blocks are consecutive in x: one cluster per row group.
  launch.grid[0] = LaunchExpr::make(LaunchExpr::Op::kMax, {LaunchExpr(1), ceil_div(row_count, rows)});
  // Persistent: persist * sm_count blocks in whole clusters, at most one
  // per row group, and no more than the device holds at once (a cluster
  // must fit in one GPC: on an H200 fewer clusters of 4 or 8 are resident
  // than the SMs' block slots suggest, and a cluster that is not resident
  // would start its row groups only once another cluster has done all of
  // its own).
  if (persist > 0) {
    using Op = LaunchExpr::Op;
    const LaunchExpr per_sm = LaunchExpr::make(
        Op::kDiv, {LaunchExpr::make(Op::kMul, {LaunchExpr(persist), LaunchExpr::symbol("sm_count")}), LaunchExpr(split)});
    const LaunchExpr resident = LaunchExpr::make(Op::kDiv, {LaunchExpr::symbol("resident_blocks"), LaunchExpr(split)});
    launch.grid[0] = LaunchExpr::make(
        Op::kMin, {launch.grid[0], LaunchExpr::make(Op::kMax, {LaunchExpr(1), LaunchExpr::make(Op::kMin, {per_sm, resident})})});
  }
  if (split > 1) launch.grid[0] = LaunchExpr::make(LaunchExpr::Op::kMul, {launch.grid[0], LaunchExpr(split)});

  // Where a pass finds the row: memory (re-reading, one vector or a batch
  // of kU at a time), registers, or shared memory (the first pass of a
  // staged row loads it and stages it).
  enum class From { kMemory, kBatch, kRegisters, kLoadAndStage, kStage };
  // Kept body kb<k>'s value at lane l of vector j.
  auto kb_ref = [&](const std::string& kb) {
    return staged ? "sk" + kb.substr(2) + "[(j * kV + l) * (kR * kT) + fk_at]" : kb + "[j][l]";
  };
  // The reductions' values as the bodies see them: red<k>, or the thread's
  // own statistic while a pair's second body is reduced locally.
  std::vector<std::string> red_args;
  for (size_t k = 0; k < nred; ++k) red_args.push_back("red" + std::to_string(k));
  auto args_at = [&](const std::string& lane) {
    std::string a;
    auto add = [&](const std::string& s) { a += (a.empty() ? "" : ", ") + s; };
    for (const auto& in : cand.inputs) {
      if (streamed(in) || in.axes == std::vector<int>{0}) add("v_" + in.name + ".v[" + lane + "]");
      else add("r_" + in.name);  // indexed by row only
    }
    for (size_t k = 0; k < nred; ++k) add(red_args[k]);
    for (const auto& p : cand.params) add(halide_param_name(p.name));
    return a;
  };
  // `action` per lane of the vector at col0. A whole vector (every one but
  // a row's last, when cols % kV != 0) runs without a guard per lane.
  auto lanes = [&](const std::string& indent, const std::string& action) {
    return indent + "if (col0 + kV <= cols) {\n#pragma unroll\n" + indent + "  for (int l = 0; l < kV; ++l) " + action +
           "\n" + indent + "} else {\n#pragma unroll\n" + indent + "  for (int l = 0; l < kV; ++l)\n" + indent +
           "    if (col0 + l < cols) " + action + "\n" + indent + "}\n";
  };
  // One visit: the vector at col0 of every input (weights from p_<name>[j]
  // when loaded ahead), then `action` per lane in the row.
  auto visit = [&](From from, const std::string& indent, const std::string& action, bool weights_ahead = false) {
    std::string s;
    for (const auto& in : cand.inputs) {
      const std::string v = indent + "const pack_t v_" + in.name + " = ";
      if (in.axes == std::vector<int>{0}) {  // a weight: from memory (cached) in every pass
        s += v + (weights_ahead ? "p_" + in.name + "[j]" : load(false, "g_" + in.name, "fk_keep")) + ";\n";
        continue;
      }
      if (!streamed(in)) continue;  // indexed by row only: r_<name>
      const std::string slot = "s_" + in.name + "[j * (kR * kT) + fk_at]";
      auto unpacked = [&](const std::string& c) { return words ? "fk_unwords<kV>(" + c + ")" : c; };
      if (from == From::kMemory) {
        s += v + load(false, "x_" + in.name, row_policy) + ";\n";
      } else if (from == From::kBatch) {  // from the batch's loads (open_batch)
        s += v + "w_" + in.name + "[g];\n";
      } else if (from == From::kRegisters) {
        s += v + unpacked("c_" + in.name + "[j]") + ";\n";
      } else if (from == From::kLoadAndStage) {  // from the batch's loads (open_batch)
        if (is_staged(in.name)) s += indent + slot + " = w_" + in.name + "[g];\n";
        s += v + unpacked("w_" + in.name + "[g]") + ";\n";
      } else if (is_staged(in.name)) {
        s += v + (words ? "fk_unwords<kV>(" + slot + ")" : slot) + ";\n";
      } else {
        s += v + "pack_t();  // read by the first pass only\n";
      }
    }
    return s + lanes(indent, action);
  };
  auto is_kept = [&](size_t k) { return std::find(kept.begin(), kept.end(), k) != kept.end(); };
  auto reduce_action = [&](size_t k, bool cached) {
    const bool is_max = pipe.reductions[k].kind == Reduction::kMax;
    const std::string n = std::to_string(k);
    std::string call = "fk_body" + n + "(" + args_at("l") + ")";
    if (cached && reads_kept[k]) {
      call = "fk_cbody" + n + "(" + args_at("l");
      for (const std::string& kb : kept_before(k)) call += ", " + kb_ref(kb);
      call += ")";
    }
    if (cached && is_kept(k) && staged)
      return "{ const float kbv = " + call + "; " + kb_ref("kb" + n) + " = kbv; acc " +
             (is_max ? "= fmaxf(acc, kbv);" : "+= kbv;") + " }";
    if (cached && is_kept(k))
      return "{ kb" + n + "[j][l] = " + call + "; acc " + (is_max ? "= fmaxf(acc, kb" + n + "[j][l]);" : "+= kb" + n + "[j][l];") + " }";
    return std::string(is_max ? "acc = fmaxf(acc, " + call + ");" : "acc += " + call + ";");
  };
  auto point_action = [&](bool cached) {
    std::string a = "fk_point(" + args_at("l");
    for (size_t k : kept) {
      const std::string n = std::to_string(k);
      a += cached ? ", " + kb_ref("kb" + n) : ", fk_body" + n + "(" + args_at("l") + ")";
    }
    for (size_t i = 0; i < hoist.divisors.size(); ++i) a += ", rc" + std::to_string(i);
    for (size_t o = 0; o < outputs.size(); ++o) a += ", w_o" + std::to_string(o) + "[l]";
    return a + ");";
  };
  auto store_outputs = [&](const std::string& indent) {
    std::string s;
    for (size_t o = 0; o < pipe.stored.size(); ++o) {
      const std::string n = std::to_string(o), dst = "y_o" + n;
      s += indent + "if (aligned && col0 + kV <= cols) {\n";
      s += print_rounded_vector_store(pipe.dtype, vec, indent + "  ", "w_o" + n, dst + " + col0", "h");
      s += indent + "} else {\n#pragma unroll\n" + indent + "  for (int l = 0; l < kV; ++l)\n" + indent +
           "    if (col0 + l < cols) " + dst + "[col0 + l] = " + round1 + "(w_o" + n + "[l]);\n" + indent + "}\n";
    }
    return s;
  };
  auto declare_outputs = [&](const std::string& indent) {
    std::string s;
    for (size_t o = 0; o < pipe.stored.size(); ++o) s += indent + "float w_o" + std::to_string(o) + "[kV];\n";
    return s;
  };
  // The accumulator's start: -inf for a max, 0 for a sum or mean.
  auto identity = [&](size_t k) {
    return std::string(pipe.reductions[k].kind == Reduction::kMax ? "-__int_as_float(0x7f800000)" : "0.0f");
  };
  // Combine number `c` of the row (reduction k, unless pairs combine
  // together) uses cluster slot c % 2.
  auto cluster_slot = [&](int c) {
    return pairs.empty() ? "&fk_slot[" + std::to_string(c % 2) + "][threadIdx.y]"
                         : "fk_slot[" + std::to_string(c % 2) + "][threadIdx.y]";
  };
  auto finish_reduction = [&](size_t k, const std::string& indent, int c) {
    const RowReduction& r = pipe.reductions[k];
    const std::string n = std::to_string(k), max = r.kind == Reduction::kMax ? "true" : "false";
    std::string s = indent + "red" + n + " = fk_row_combine<kT, " + max + ">(acc, fk_smem[threadIdx.y]);\n";
    if (split > 1) {
      s += indent + "red" + n + " = fk_cluster_combine<kS, " + max + ">(red" + n + ", " + cluster_slot(c) + ");\n";
      if (k + 1 == nred) s += indent + "fk_cluster_arrive();\n";
    }
    if (r.kind == Reduction::kMean) s += indent + "red" + n + " /= (float)cols;\n";
    return s;
  };
  // The rows' reciprocals, once the reductions are final.
  auto row_constants = [&](const std::string& indent) {
    std::string s;
    for (size_t i = 0; i < hoist.divisors.size(); ++i) {
      std::string stmts;
      const std::string n = std::to_string(i);
      const std::string value = print_cuda_expr(strip_cast(hoist.divisors[i]), &stmts, "rc" + n + "_", &red_values);
      s += stmts + indent + "const float rc" + n + " = 1.0f / " + value + ";\n";
    }
    return s;
  };
  // A batch: every full input's next vectors are loaded before any is used
  // (bytes in flight: a use, or a staging store, straight after each load
  // would wait for it), then they are visited one by one as vector g. A
  // staged row's first pass takes kB of its kC vectors at a time; a
  // re-reading pass (unroll > 1) kU of the row's at a time. The body goes
  // at indent in + "    "; closed by two braces.
  auto open_batch = [&](const std::string& in, bool stage) {
    const std::string type = stage ? "cache_t" : "pack_t", n = stage ? "kB" : "kU";
    const std::string col0 = stage ? "((jb + g) * kT * kS + tid) * kV" : "c0 + g * kT * kS * kV";
    std::string s = stage ? "#pragma unroll\n" + in + "for (int jb = 0; jb < kC; jb += kB) {\n"
                          : in + "for (int c0 = tid * kV; active && c0 < cols; c0 += kU * kT * kS * kV) {\n";
    for (const auto& i : cand.inputs)
      if (streamed(i)) s += in + "  " + type + " w_" + i.name + "[" + n + "];\n";
    s += "#pragma unroll\n" + in + "  for (int g = 0; g < " + n + "; ++g) {\n" + in + "    const int col0 = " + col0 + ";\n";
    for (const auto& i : cand.inputs)
      if (streamed(i))
        s += in + "    w_" + i.name + "[g] = active && col0 < cols ? " +
             load(stage && words, "x_" + i.name, stage ? read_once : row_policy) + " : " + type + "();\n";
    s += in + "  }\n#pragma unroll\n" + in + "  for (int g = 0; g < " + n + "; ++g) {\n";
    if (stage) s += in + "    const int j = jb + g;\n";
    s += in + "    const int col0 = " + (stage ? std::string("(j * kT * kS + tid) * kV") : col0) + ";\n" + in +
         "    if (!active || col0 >= cols) continue;\n";
    return s;
  };
  // Every pass over the row, each reduction's then the outputs', at indent
  // `b`: over the vectors held in registers or shared memory, or reading
  // them again. `body(indent)` is one vector's code.
  auto over_vectors = [&](const std::string& in, From from, const std::function<std::string(const std::string&)>& body) {
    if (from == From::kLoadAndStage || from == From::kBatch)
      return open_batch(in, from == From::kLoadAndStage) + body(in + "    ") + in + "  }\n" + in + "}\n";
    if (from == From::kMemory)
      return in + "for (int col0 = tid * kV; active && col0 < cols; col0 += kT * kS * kV) {\n" + body(in + "  ") + in +
             "}\n";
    return "#pragma unroll\n" + in + "for (int j = 0; j < kC; ++j) {\n" + in +
           "  const int col0 = (j * kT * kS + tid) * kV;\n" + in + "  if (!active || col0 >= cols) continue;\n" +
           body(in + "  ") + in + "}\n";
  };
  // The row's values of pair `pr` from the thread's statistic `stat`: one
  // combine across the row (and the cluster: combine number c); closes the
  // pair's block.
  auto finish_pair = [&](const std::string& b, const ReductionPair& pr, int c, const std::string& stat) {
    const size_t i = pr.first, j = i + 1;
    const std::string op = pr.kind == ReductionPair::Kind::kMeanVar ? "0" : "1";
    std::string s = b + "  fk_stat st = fk_row_combine_pair<kT, " + op + ">(" + stat + ", fk_smem[threadIdx.y]);\n";
    if (split > 1) {
      s += b + "  st = fk_cluster_combine_pair<kS, " + op + ">(st, " + cluster_slot(c) + ");\n";
      if (j + 1 == nred) s += b + "  fk_cluster_arrive();\n";
    }
    s += b + "  red" + std::to_string(i) + " = st.a;\n";
    s += b + "  red" + std::to_string(j) + " = st.b" +
         (pipe.reductions[j].kind == Reduction::kMean ? " / (float)cols" : "") + ";\n";
    return s + b + "}\n";
  };
  // A pair of reductions over a cached row, combined once: the thread's
  // statistic of the first (its mean, over the elements it holds, or its
  // max), the second's body reduced against it, then fk_row_combine_pair.
  auto paired_passes = [&](const std::string& b, From from, From rest, const ReductionPair& pr, int c) {
    const size_t i = pr.first, j = i + 1;
    const bool mean_var = pr.kind == ReductionPair::Kind::kMeanVar;
    const std::string ri = "red" + std::to_string(i);
    std::string s = b + "{\n" + b + "  float acc = " + identity(i) + ";\n";
    s += over_vectors(b + "  ", from, [&](const std::string& in) { return visit(from, in, reduce_action(i, true)); });
    if (mean_var) {
      s += b + "  float fk_n = 0.0f;  // the elements the thread holds\n#pragma unroll\n";
      s += b + "  for (int j = 0; j < kC; ++j) {\n" + b + "    const int col0 = (j * kT * kS + tid) * kV;\n";
      s += b + "    if (active && col0 < cols) fk_n += (float)min(kV, cols - col0);\n" + b + "  }\n";
      s += b + "  const float fk_m = fk_n > 0.0f ? acc / fk_n : 0.0f;\n";
    } else {
      s += b + "  const float fk_m = acc, fk_n = 0.0f;\n";
    }
    // With no element (or only -inf) a thread's sum of exp(v - max) is 0.
    s += b + "  float fk_q = 0.0f;\n" + b + (mean_var ? "  {\n" : "  if (fk_m != -__int_as_float(0x7f800000)) {\n");
    s += b + "    float acc = 0.0f;\n";
    red_args[i] = "fk_m";
    s += over_vectors(b + "    ", rest, [&](const std::string& in) { return visit(rest, in, reduce_action(j, true)); });
    red_args[i] = ri;
    s += b + "    fk_q = acc;\n" + b + "  }\n";
    return s + finish_pair(b, pr, c, "fk_stat{fk_m, fk_q, fk_n}");
  };
  // A pair over a row read from memory, in one pass: each vector's own
  // statistic (the second body reduced about the vector's mean or max)
  // folded into the thread's with fk_update, then one combine.
  auto paired_reread = [&](const std::string& b, From from, const ReductionPair& pr, int c) {
    const size_t i = pr.first, j = i + 1;
    const bool mean_var = pr.kind == ReductionPair::Kind::kMeanVar;
    const std::string op = mean_var ? "0" : "1", ri = "red" + std::to_string(i);
    std::string s = b + "{\n" + b + "  fk_stat fk_t{" + identity(i) + ", 0.0f, 0.0f};\n";
    s += over_vectors(b + "  ", from, [&](const std::string& in) {
      std::string v = in + "float acc = " + identity(i) + ";\n" + visit(from, in, reduce_action(i, false));
      v += in + "const float fk_n = (float)min(kV, cols - col0);\n";
      v += in + "const float fk_m = " + (mean_var ? "acc / fk_n" : "acc") + ";\n";
      v += in + "acc = 0.0f;\n";
      red_args[i] = "fk_m";
      const std::string second = lanes(in + (mean_var ? "" : "  "), reduce_action(j, false));
      red_args[i] = ri;
      v += mean_var ? second : in + "if (fk_m != -__int_as_float(0x7f800000)) {\n" + second + in + "}\n";
      return v + in + "fk_t = fk_update<" + op + ">(fk_t, fk_stat{fk_m, acc, fk_n});\n";
    });
    return s + finish_pair(b, pr, c, "fk_t");
  };
  // A cached row's output pass with wbatch=1: every vector of each weight,
  // loaded before the pass.
  auto weights_ahead = [&](const std::string& b) {
    std::string s;
    for (const auto& in : cand.inputs)
      if (in.axes == std::vector<int>{0}) s += b + "pack_t p_" + in.name + "[kC];\n";
    s += "#pragma unroll\n" + b + "for (int j = 0; j < kC; ++j) {\n" + b + "  const int col0 = (j * kT * kS + tid) * kV;\n";
    for (const auto& in : cand.inputs)
      if (in.axes == std::vector<int>{0})
        s += b + "  p_" + in.name + "[j] = active && col0 < cols ? " + load(false, "g_" + in.name, "fk_keep") +
             " : pack_t();\n";
    return s + b + "}\n";
  };
  auto passes = [&](const std::string& b, From first, From rest) {
    const bool cached = first != From::kMemory && first != From::kBatch;
    std::string s;
    int c = 0;  // combines so far
    // A re-read row is read again after every reduction pass, and for
    // the last time by the outputs.
    row_policy = "fk_keep";
    for (size_t k = 0; k < nred; ++k, ++c) {
      const From from = k == 0 ? first : rest;
      if (const ReductionPair* pr = pair_at(k)) {
        s += cached ? paired_passes(b, from, rest, *pr, c) : paired_reread(b, from, *pr, c);
        ++k;
        continue;
      }
      s += b + "{\n" + b + "  float acc = " + identity(k) + ";\n";
      s += over_vectors(b + "  ", from, [&](const std::string& in) { return visit(from, in, reduce_action(k, cached)); });
      s += finish_reduction(k, b + "  ", c) + b + "}\n";
    }
    s += row_constants(b);
    row_policy = "fk_stream";
    const bool ahead = wbatch && cached;
    if (ahead) s += weights_ahead(b);
    s += over_vectors(b, rest, [&](const std::string& in) {
      return declare_outputs(in) + visit(rest, in, point_action(cached), ahead) + store_outputs(in);
    });
    return s;
  };
  const std::string leave = split > 1 ? "fk_cluster_wait();\n" : "";

  // Where a thread's row and its pointers are, for row group `group`.
  auto row_setup = [&](const std::string& in, const std::string& group, bool with_aligned) {
    std::string s = in + "const long long row = " + group + " * kR + threadIdx.y;\n";
    s += in + "const bool active = row < rows;\n";
    s += in + "const long long base = (active ? row : 0) * (long long)cols;\n";
    if (with_aligned) s += in + "const bool aligned = cols % kV == 0;  // every row starts on a vector boundary\n";
    if (nd) s += row_coords(in, "(active ? row : 0)", "c");
    for (const auto& in_ : cand.inputs) {
      if (in_.full()) s += in + "const " + st + "* __restrict__ x_" + in_.name + " = g_" + in_.name + " + base;\n";
      else if (nd && streamed(in_))
        s += in + "const " + st + "* __restrict__ x_" + in_.name + " = g_" + in_.name + " + (" + row_offset(in_, "c") +
             ") * (long long)cols;\n";
      else if (nd && in_.axes != std::vector<int>{0})
        s += in + "const " + st + " r_" + in_.name + " = g_" + in_.name + "[" + row_offset(in_, "c") + "];\n";
      else if (in_.axes == std::vector<int>{1})
        s += in + "const " + st + " r_" + in_.name + " = g_" + in_.name + "[active ? row : 0];\n";
      else if (in_.axes != std::vector<int>{0})
        throw UserError("row reduction printer: input '" + in_.name + "' is indexed in a way it cannot print");
    }
    for (size_t o = 0; o < pipe.stored.size(); ++o)
      s += in + st + "* __restrict__ y_o" + std::to_string(o) + " = g_o" + std::to_string(o) + " + base;\n";
    for (size_t k = 0; k < nred; ++k) s += in + "float red" + std::to_string(k) + " = 0.0f;\n";
    return s;
  };
  auto stage_pointers = [&](const std::string& in) {
    std::string s = in + "extern __shared__ __align__(16) unsigned char fk_stage[];\n";
    s += in + "const int fk_at = threadIdx.y * kT + threadIdx.x;  // the thread's slots\n";
    for (const StageArray& a : stage)
      s += in + a.type + "* " + a.name + (a.buffered ? "_buffers" : "") + " = reinterpret_cast<" +
           a.type + "*>(fk_stage + " + std::to_string(a.offset) + ");\n";
    return s;
  };

  src << "extern \"C\" __global__ void __launch_bounds__(" << threads * rows;
  if (persist > 1) src << ", " << persist;
  else if (min_blocks > 0) src << ", " << min_blocks;
  src << ") ";
  if (split > 1) src << "__cluster_dims__(" << split << ", 1, 1) ";
  src << entry << "(" << params << ") {\n";
  if (fixed_cols > 0) src << "  constexpr int cols = " << fixed_cols << ";  // specialized: rows of exactly this length\n";
  src << "  constexpr int kT = " << threads << ", kR = " << rows << ", kV = " << vec << ", kC = " << cache
      << ", kS = " << split;
  if (staged && persist == 0) src << ", kB = " << std::min(cache, 4);
  if (unroll > 1) src << ", kU = " << unroll;
  src << ";\n";
  src << "  typedef fk_pack<" << st << ", kV> pack_t;\n";
  if (cache > 0) src << "  typedef " << (words ? "fk_pack<unsigned, kV / 2>" : "pack_t") << " cache_t;\n";
  // A pair's combine stores three floats per warp, and per cluster block.
  src << "  __shared__ float fk_smem[kR][" << (pairs.empty() ? 32 : 96) << "];\n";
  if (split > 1) {
    src << "  __shared__ float fk_slot[2][kR]" << (pairs.empty() ? "" : "[3]") << ";\n";
    src << "  const int tid = (int)fk_cluster_rank() * kT + threadIdx.x;  // the thread's place in its row\n";
  } else {
    src << "  const int tid = threadIdx.x;\n";
  }
  if (hint != 0) src << "  const unsigned long long fk_keep = fk_policy<true>(), fk_stream = fk_policy<false>();\n";
  // Re-reading path: any row length; each pass reads the row again.
  const From reread = unroll > 1 ? From::kBatch : From::kMemory;

  if (persist > 0) {
    // Persistent blocks: the cluster's row groups are blockIdx.x / kS,
    // then every (gridDim.x / kS)-th. A row that fits and starts on a vector
    // boundary is staged by asynchronous copies, one group ahead: a thread
    // copies and later reads only its own slots, so no barrier guards the
    // buffers; the cluster barrier that ends each group orders the combine
    // slots' reuse as in the one-group kernel.
    src << "  const bool aligned = cols % kV == 0;  // every row starts on a vector boundary\n";
    src << "  const long long groups = (rows + kR - 1) / kR, stride = gridDim.x / kS;\n";
    src << "  if (aligned && cols <= kT * kS * kV * kC) {\n";
    src << stage_pointers("    ");
    src << "    // Copies group g's vectors of the thread's row into buffer b.\n";
    src << "    const auto fetch = [&](long long g, int b) {\n";
    src << "      const long long r = g * kR + threadIdx.y;\n";
    src << "      if (g >= groups || r >= rows) return;\n";
    if (nd) src << row_coords("      ", "r", "f");
    src << "#pragma unroll\n      for (int j = 0; j < kC; ++j) {\n";
    src << "        const int col0 = (j * kT * kS + tid) * kV;\n";
    src << "        if (col0 >= cols) break;\n";
    for (const auto& in : cand.inputs)
      if (streamed(in))
        src << "        fk_copy_async<sizeof(cache_t)>(&s_" << in.name << "_buffers[(b * kC + j) * (kR * kT) + fk_at], g_"
            << in.name << " + " << (in.full() ? "r" : "(" + row_offset(in, "f") + ")") << " * cols + col0);\n";
    src << "      }\n    };\n";
    src << "    fetch(blockIdx.x / kS, 0);\n    fk_copy_commit();\n";
    src << "    int it = 0;\n";
    src << "    for (long long grp = blockIdx.x / kS; grp < groups; grp += stride, ++it) {\n";
    src << "      fetch(grp + stride, (it + 1) & 1);\n      fk_copy_commit();\n      fk_copy_wait_prior();\n";
    src << row_setup("      ", "grp", false);
    for (const StageArray& a : stage)
      if (a.buffered)
        src << "      " << a.type << "* const " << a.name << " = " << a.name << "_buffers + (it & 1) * (kC * kR * kT);\n";
    src << passes("      ", From::kStage, From::kStage);
    if (!leave.empty()) src << "      " << leave;
    src << "    }\n    return;\n  }\n";
    src << "  for (long long grp = blockIdx.x / kS; grp < groups; grp += stride) {\n";
    src << row_setup("    ", "grp", false);
    src << passes("    ", reread, reread);
    if (!leave.empty()) src << "    " << leave;
    src << "  }\n}\n";
  } else {
    src << row_setup("  ", "(long long)(blockIdx.x / kS)", true);
    // Cached path: the row's vectors (and kept bodies) stay in registers, or
    // in shared memory, across the passes.
    if (staged) {
      src << "  if (cols <= kT * kS * kV * kC) {\n";
      src << stage_pointers("    ");
      src << passes("    ", From::kLoadAndStage, From::kStage);
      if (!leave.empty()) src << "    " << leave;
      src << "    return;\n  }\n";
    } else if (cache > 0) {
      src << "  if (cols <= kT * kS * kV * kC) {\n";
      for (const auto& in : cand.inputs)
        if (streamed(in)) src << "    cache_t c_" << in.name << "[kC];\n";
      for (size_t k : kept) src << "    float kb" << k << "[kC][kV];\n";
      src << "#pragma unroll\n    for (int j = 0; j < kC; ++j) {\n";
      src << "      const int col0 = (j * kT * kS + tid) * kV;\n";
      for (const auto& in : cand.inputs)
        if (streamed(in))
          src << "      c_" << in.name << "[j] = active ? " << load(words, "x_" + in.name, read_once)
              << " : cache_t();\n";
      src << "    }\n";
      src << passes("    ", From::kRegisters, From::kRegisters);
      if (!leave.empty()) src << "    " << leave;
      src << "    return;\n  }\n";
    }
    src << passes("  ", reread, reread);
    if (!leave.empty()) src << "  " << leave;
    src << "}\n";
  }

  PrintedKernel out;
  out.source = src.str();
  launch.source = out.source;
  out.launch = launch;
  return out;
}

}  // namespace fusekit
