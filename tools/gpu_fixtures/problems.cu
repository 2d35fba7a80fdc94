// Kernels with known problems, each beside a version without it, for ncu fixtures.
#include <cstdio>
#include <cuda_runtime.h>

__global__ void copy_coalesced(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}
// Each thread of a warp reads a different 128-byte line: 32 sectors per request.
__global__ void copy_strided(const float* in, float* out, int n, int stride) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[(long long)i * stride % n];
}
__global__ void transpose_naive(const float* in, float* out, int n) {
  int x = blockIdx.x * 32 + threadIdx.x, y = blockIdx.y * 32 + threadIdx.y;
  if (x < n && y < n) out[(long long)x * n + y] = in[(long long)y * n + x];
}
// Long work on 2 blocks while the GPU has 132 SMs.
__global__ void small_grid_loop(float* x, int iters) {
  float v = x[threadIdx.x];
  for (int k = 0; k < iters; ++k) v = v * 1.000001f + 0.5f;
  x[blockIdx.x * blockDim.x + threadIdx.x] = v;
}
__global__ void sgemm_naive(int m, int n, int k, const float* a, const float* b, float* c) {
  int row = blockIdx.y * blockDim.y + threadIdx.y, col = blockIdx.x * blockDim.x + threadIdx.x;
  if (row >= m || col >= n) return;
  float acc = 0.f;
  for (int i = 0; i < k; ++i) acc += a[(long long)row * k + i] * b[(long long)i * n + col];
  c[(long long)row * n + col] = acc;
}
__global__ void smem_bank_conflicts(float* out, int iters) {
  __shared__ float tile[32 * 33];
  float acc = 0.f;
  for (int k = 0; k < iters; ++k) {
    tile[threadIdx.x * 32 % (32 * 32) + (k & 31)] = (float)k;
    __syncwarp();
    acc += tile[(threadIdx.x * 32 + k) % (32 * 32)];
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
__global__ void smem_padded(float* out, int iters) {
  __shared__ float tile[32 * 33];
  float acc = 0.f;
  for (int k = 0; k < iters; ++k) {
    tile[threadIdx.x * 33 % (32 * 33) + (k & 31) % 1] = (float)k;
    __syncwarp();
    acc += tile[threadIdx.x % (32 * 33)];
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
__global__ void divergent_branches(float* x, int iters) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  float v = x[i];
  if (threadIdx.x % 4 == 0) { for (int k = 0; k < iters; ++k) v = sinf(v) + 1.f; }
  else if (threadIdx.x % 4 == 1) { for (int k = 0; k < iters; ++k) v = cosf(v) + 2.f; }
  else if (threadIdx.x % 4 == 2) { for (int k = 0; k < iters; ++k) v = v * v * 0.5f; }
  else { for (int k = 0; k < iters; ++k) v = sqrtf(fabsf(v)) + 3.f; }
  x[i] = v;
}
#ifdef USE_MAXNREG
__global__ void __maxnreg__(32)
#else
__global__ void __launch_bounds__(1024, 2)
#endif
register_spills(const float* in, float* out, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  float r[48];
#pragma unroll
  for (int k = 0; k < 48; ++k) r[k] = in[(i + k * 977) % n];
  float acc = 0.f;
#pragma unroll
  for (int k = 0; k < 48; ++k) acc += r[k] * r[47 - k] + r[(k * 7) % 48];
  out[i] = acc;
}

int main() {
  const int n = 1 << 24;
  float *a, *b, *c;
  cudaMalloc(&a, n * sizeof(float)); cudaMalloc(&b, n * sizeof(float)); cudaMalloc(&c, n * sizeof(float));
  cudaMemset(a, 0, n * sizeof(float)); cudaMemset(b, 0, n * sizeof(float));
  copy_coalesced<<<n / 256, 256>>>(a, b, n);
  copy_strided<<<n / 256, 256>>>(a, b, n, 32);
  dim3 tb(32, 32), tg(4096 / 32, 4096 / 32);
  transpose_naive<<<tg, tb>>>(a, b, 4096);
  small_grid_loop<<<2, 128>>>(a, 2000000);
  dim3 gb(16, 16), gg(2048 / 16, 2048 / 16);
  sgemm_naive<<<gg, gb>>>(2048, 2048, 2048, a, b, c);
  smem_bank_conflicts<<<1024, 1024>>>(c, 256);
  smem_padded<<<1024, 1024>>>(c, 256);
  divergent_branches<<<n / 256, 256>>>(a, 64);
  register_spills<<<n / 1024, 1024>>>(a, b, n);
  cudaError_t e = cudaDeviceSynchronize();
  printf("problems: %s\n", cudaGetErrorString(e));
  return e == cudaSuccess ? 0 : 1;
}
