// Device code that every row kernel of a given shape starts with: loads that
// fall back to guarded scalars, the row and cluster combines, asynchronous
// copies, paired statistics and hinted loads.
#include "generator/nvrtc/row_device_helpers.h"

namespace fusekit {
namespace {


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

}  // namespace

const char* row_helpers_cuda() { return kRowHelpers; }
const char* row_async_copy_helpers_cuda() { return kAsyncCopyHelpers; }
const char* row_pair_helpers_cuda() { return kPairHelpers; }
const char* row_hint_helpers_cuda() { return kHintHelpers; }

}  // namespace fusekit
