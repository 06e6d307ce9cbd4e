// A CUDA workload whose GPU work is proportional to its argument: every thread of 8 blocks per
// SM runs ROUNDS steps of a dependent multiply-add chain. bench/gpu_check.py builds it with nvcc
// and compares ROUNDS against 1.1 × ROUNDS (+10% GPU work, the same start-up).
#include <cstdio>
#include <cstdlib>

__global__ void spin(float *out, long rounds) {
  float a = threadIdx.x * 1e-3f, b = 1.0000001f;
  for (long i = 0; i < rounds; i++) a = a * b + 1e-7f;
  out[blockIdx.x * blockDim.x + threadIdx.x] = a;
}

int main(int argc, char **argv) {
  long rounds = argc > 1 ? atol(argv[1]) : 1000000;
  int sms = 0;
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  int blocks = sms * 8, threads = 256;
  float *d = nullptr;
  if (cudaMalloc(&d, sizeof(float) * blocks * threads) != cudaSuccess) return 2;
  spin<<<blocks, threads>>>(d, rounds);
  if (cudaDeviceSynchronize() != cudaSuccess) return 3;
  float h = 0;
  cudaMemcpy(&h, d, sizeof(float), cudaMemcpyDeviceToHost);
  printf("%g\n", h);
  cudaFree(d);
  return 0;
}
