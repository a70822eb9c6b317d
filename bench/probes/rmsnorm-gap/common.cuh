// Shared by the hand-written rmsnorm probes (bench/gap_probe.py): rows of
// exactly 16384 f32, 1024 threads, thread t owning float4 j at column
// (j * 1024 + t) * 4, as Inductor's 32-warp kernel does.
struct alignas(16) f4 { float v[4]; };
constexpr int kCols = 16384, kThreads = 1024, kVecs = 4;

// L1 qualifier Q ("" or ".L1::evict_last" ...) with an L2 cache policy.
#define FK_LD_POLICY(name, q)                                                                      \
  static __device__ __forceinline__ f4 name(const float* p, unsigned long long pol) {             \
    f4 r;                                                                                          \
    asm("ld.global" q ".L2::cache_hint.v4.f32 {%0,%1,%2,%3}, [%4], %5;"                            \
        : "=f"(r.v[0]), "=f"(r.v[1]), "=f"(r.v[2]), "=f"(r.v[3]) : "l"(p), "l"(pol));              \
    return r;                                                                                      \
  }
FK_LD_POLICY(ld_el, ".L1::evict_last")
FK_LD_POLICY(ld_ef, ".L1::evict_first")
FK_LD_POLICY(ld_l2only, "")

static __device__ __forceinline__ unsigned long long policy_last() {
  unsigned long long p;
  asm("createpolicy.fractional.L2::evict_last.b64 %0, 1.0;" : "=l"(p));
  return p;
}
static __device__ __forceinline__ unsigned long long policy_normal() {
  unsigned long long p;
  asm("createpolicy.fractional.L2::evict_normal.b64 %0, 1.0;" : "=l"(p));
  return p;
}
static __device__ __forceinline__ unsigned long long policy_first() {
  unsigned long long p;
  asm("createpolicy.fractional.L2::evict_first.b64 %0, 1.0;" : "=l"(p));
  return p;
}
static __device__ __forceinline__ f4 ld_plain(const float* p) { return *reinterpret_cast<const f4*>(p); }

// Sum over the block: warp shuffles, 32 partials through shared memory,
// a second shuffle tree in every warp (every thread gets the sum).
static __device__ __forceinline__ float block_sum(float s, float* part) {
#pragma unroll
  for (int k = 16; k > 0; k >>= 1) s += __shfl_xor_sync(0xffffffffu, s, k);
  if (threadIdx.x % 32 == 0) part[threadIdx.x / 32] = s;
  __syncthreads();
  s = part[threadIdx.x % 32];
#pragma unroll
  for (int k = 16; k > 0; k >>= 1) s += __shfl_xor_sync(0xffffffffu, s, k);
  return s;
}
static __device__ __forceinline__ float sumsq(const f4& c) {
  return c.v[0] * c.v[0] + c.v[1] * c.v[1] + c.v[2] * c.v[2] + c.v[3] * c.v[3];
}

// LOAD1(ptr): the first read; LOADX(ptr), LOADW(ptr): the output pass's
// reads of x (REREAD) and w. One base pointer per tensor, constant offsets
// per vector (as Triton's code addresses them). With REREAD every load of
// the output pass is issued before any use and the stores come last; without,
// each vector's weights are loaded, used and stored in turn (32 registers).
#define FK_RMSNORM_PROBE(name, REREAD, LOAD1, LOADX, LOADW)                                        \
  extern "C" __global__ void __launch_bounds__(1024, 2)                                            \
  name(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ o, float eps, \
       long long, int) {                                                                           \
    __shared__ float part[32];                                                                     \
    const unsigned long long keep = policy_last(), drop = policy_first(), norm = policy_normal();   \
    (void)keep; (void)drop; (void)norm;                                                            \
    const long long at = (long long)blockIdx.x * kCols + threadIdx.x * 4;                          \
    const float* xr = x + at;                                                                      \
    const float* wr = w + threadIdx.x * 4;                                                         \
    float* orow = o + at;                                                                          \
    f4 c[kVecs];                                                                                   \
    _Pragma("unroll") for (int j = 0; j < kVecs; ++j) c[j] = LOAD1(xr + j * kThreads * 4);         \
    float s = 0.f;                                                                                 \
    _Pragma("unroll") for (int j = 0; j < kVecs; ++j) s += sumsq(c[j]);                            \
    const float r = rsqrtf(block_sum(s, part) / kCols + eps);                                      \
    if (REREAD) {                                                                                  \
      f4 g[kVecs];                                                                                 \
      _Pragma("unroll") for (int j = 0; j < kVecs; ++j) {                                          \
        c[j] = LOADX(xr + j * kThreads * 4);                                                       \
        g[j] = LOADW(wr + j * kThreads * 4);                                                       \
      }                                                                                            \
      _Pragma("unroll") for (int j = 0; j < kVecs; ++j) {                                          \
        f4 q;                                                                                      \
        _Pragma("unroll") for (int l = 0; l < 4; ++l) q.v[l] = c[j].v[l] * r * g[j].v[l];          \
        *reinterpret_cast<f4*>(orow + j * kThreads * 4) = q;                                       \
      }                                                                                            \
    } else {                                                                                       \
      _Pragma("unroll") for (int j = 0; j < kVecs; ++j) {                                          \
        const f4 g = LOADW(wr + j * kThreads * 4);                                                 \
        f4 q;                                                                                      \
        _Pragma("unroll") for (int l = 0; l < 4; ++l) q.v[l] = c[j].v[l] * r * g.v[l];            \
        *reinterpret_cast<f4*>(orow + j * kThreads * 4) = q;                                       \
      }                                                                                            \
    }                                                                                              \
  }
