// Does a GEMM pay for the dirty lines its predecessor left in the L2 (issue 41)? In the
// model a back-to-back GEMM writes back the previous one's output as it evicts it, and
// megagpt2 op's steady state is 22 % slower than its first GEMM on a clean L2 (75.6 ->
// 92 us; results/h200-interference/README.md, stop 53). On the machine, per shape of
// interference_2gpu.csv (random operands, as interfere.py's randn):
//   clean    the L2 filled with clean lines first (a 128 MiB buffer read), then one GEMM
//   dirty    the L2 filled with dirty lines first (a 128 MiB buffer written), then one GEMM
//   steady   one GEMM timed in the middle of back-to-back ones (the previous GEMM's
//            output still dirty in the L2)
// each timed alone by events around it (median of 30), after 1 s of GEMMs so the clock
// sits at the power cap as in interfere.py's windows.
//
// Prints CSV: shape,case,median_us,min_us
//   nvcc -O3 -arch=sm_90 -o gemm_steady gemm_steady.cu -lcublas

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <vector>

#include "h200_common.cuh"

__global__ void read_all(const int4* __restrict__ p, size_t n, int4* sink) {
  int4 acc = make_int4(0, 0, 0, 0);
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    const int4 v = p[i];
    acc.x ^= v.x;
  }
  if (acc.x == 0x12345678) sink[0] = acc;
}

__global__ void write_all(int4* p, size_t n) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x)
    p[i] = make_int4(int(i), 1, 2, 3);
}

int main() {
  cublasHandle_t h;
  cublasCreate(&h);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cublasSetStream(h, s);
  const size_t flush_bytes = size_t(128) << 20;
  int4 *flush, *sink;
  CK(cudaMalloc(&flush, flush_bytes));
  CK(cudaMalloc(&sink, 64));
  CK(cudaMemset(flush, 0, flush_bytes));
  const size_t n16 = flush_bytes / 16;
  const Shape shapes[] = {{"megagpt2.op.tp8", 16384, 3072, 384},
                          {"tnlg.fc2.tp8", 8192, 4256, 2128},
                          {"gpt3.op.tp32", 2048, 12288, 384},
                          {"palm.fc2.tp32", 2048, 18432, 2304}};
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  printf("shape,case,median_us,min_us\n");
  for (const Shape& sh : shapes) {
    TorchMmGemm gemm(h, sh);
    fill_random<<<1024, 256, 0, s>>>(gemm.A, size_t(sh.M) * sh.K, 1);
    fill_random<<<1024, 256, 0, s>>>(gemm.W, size_t(sh.N) * sh.K, 2);
    CK(cudaStreamSynchronize(s));
    const auto t0 = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1)) {
      for (int i = 0; i < 20; ++i) gemm();
      CK(cudaStreamSynchronize(s));
    }
    for (const char* c : {"clean", "dirty", "steady"}) {
      std::vector<float> us;
      for (int rep = 0; rep < 30; ++rep) {
        if (c[0] == 'c') read_all<<<1056, 512, 0, s>>>(flush, n16, sink);
        if (c[0] == 'd') write_all<<<1056, 512, 0, s>>>(flush, n16);
        if (c[0] == 's') gemm();  // the timed GEMM's predecessor
        CK(cudaEventRecord(e0, s));
        gemm();
        CK(cudaEventRecord(e1, s));
        if (c[0] == 's') gemm();  // and its successor, so it runs mid-stream
        CK(cudaStreamSynchronize(s));
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        us.push_back(1e3f * ms);
      }
      std::sort(us.begin(), us.end());
      printf("%s,%s,%.2f,%.2f\n", sh.name, c, us[us.size() / 2], us.front());
      fflush(stdout);
    }
  }
  return 0;
}
