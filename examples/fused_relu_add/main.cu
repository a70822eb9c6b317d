// Calls the fused relu(x) + y from a fusekit package and checks it against
// the unfused sequence (a relu kernel, then an add kernel), on aligned and
// on deliberately misaligned pointers. Exit 0 when they agree.
#include <cuda_runtime.h>
#include <fusekit_kernels.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <vector>

__global__ void relu_kernel(const float* x, float* t, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) t[i] = fmaxf(x[i], 0.0f);
}

__global__ void add_kernel(const float* t, const float* y, float* out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = t[i] + y[i];
}

#define CHECK(call)                                                                        \
  do {                                                                                     \
    cudaError_t e = (call);                                                                \
    if (e != cudaSuccess) {                                                                \
      std::fprintf(stderr, "%s failed: %s\n", #call, cudaGetErrorString(e));              \
      return 1;                                                                            \
    }                                                                                      \
  } while (0)

int check(const char* what, const float* dx, const float* dy, float* dout, float* dtmp, float* dref, int64_t n,
          cudaStream_t s) {
  const int threads = 256;
  const int blocks = static_cast<int>((n + threads - 1) / threads);
  relu_kernel<<<blocks, threads, 0, s>>>(dx, dtmp, n);
  add_kernel<<<blocks, threads, 0, s>>>(dtmp, dy, dref, n);
  CHECK(cudaGetLastError());
  if (fusekit_relu_add_f32(dx, dy, dout, n, reinterpret_cast<CUstream>(s)) != FUSEKIT_OK) {
    std::fprintf(stderr, "%s: fusekit_relu_add_f32: %s\n", what, fusekit_last_error());
    return 1;
  }
  CHECK(cudaStreamSynchronize(s));
  std::vector<float> got(n), ref(n);
  CHECK(cudaMemcpy(got.data(), dout, n * sizeof(float), cudaMemcpyDeviceToHost));
  CHECK(cudaMemcpy(ref.data(), dref, n * sizeof(float), cudaMemcpyDeviceToHost));
  double worst = 0;
  for (int64_t i = 0; i < n; ++i) worst = std::fmax(worst, std::fabs(got[i] - ref[i]));
  std::printf("%s: n=%lld max |fused - unfused| = %g\n", what, static_cast<long long>(n), worst);
  return worst <= 1e-6 ? 0 : 1;
}

int main() {
  int devices = 0;
  if (cudaGetDeviceCount(&devices) != cudaSuccess || devices == 0) {
    std::printf("no CUDA device: nothing to run\n");
    return 0;
  }
  const int64_t n = 1000003;  // not a multiple of any vector width
  std::vector<float> hx(n + 1), hy(n + 1);
  srand(1);
  for (int64_t i = 0; i <= n; ++i) {
    hx[i] = static_cast<float>(rand()) / RAND_MAX * 6.0f - 3.0f;
    hy[i] = static_cast<float>(rand()) / RAND_MAX * 6.0f - 3.0f;
  }
  float *dx, *dy, *dout, *dtmp, *dref;
  for (float** p : {&dx, &dy, &dout, &dtmp, &dref}) CHECK(cudaMalloc(p, (n + 1) * sizeof(float)));
  CHECK(cudaMemcpy(dx, hx.data(), (n + 1) * sizeof(float), cudaMemcpyHostToDevice));
  CHECK(cudaMemcpy(dy, hy.data(), (n + 1) * sizeof(float), cudaMemcpyHostToDevice));
  cudaStream_t s;
  CHECK(cudaStreamCreate(&s));
  char why[512] = "";
  const int64_t m = n - 1;  // the explain calls take the domain, as fusekit_launch does
  if (fusekit_explain("relu_add", "f32", &n, 1, 256, why, sizeof(why)) == FUSEKIT_OK) std::printf("aligned: %s\n", why);
  if (fusekit_explain("relu_add", "f32", &m, 1, 4, why, sizeof(why)) == FUSEKIT_OK) std::printf("misaligned: %s\n", why);
  int bad = check("aligned", dx, dy, dout, dtmp, dref, n, s);
  bad |= check("misaligned", dx + 1, dy + 1, dout + 1, dtmp, dref, n - 1, s);
  // Bad input is a status, not a crash.
  if (fusekit_relu_add_f32(nullptr, dy, dout, n, reinterpret_cast<CUstream>(s)) != FUSEKIT_INVALID_ARGUMENT) bad = 1;
  std::printf("null pointer: %s\n", fusekit_last_error());
  if (fusekit_relu_add_f32(dx, dy, dout, 0, reinterpret_cast<CUstream>(s)) != FUSEKIT_OK) bad = 1;
  std::printf(bad ? "FAILED\n" : "ok\n");
  return bad;
}
