// When does each output tile of a cuBLAS GEMM get written, with k SMs held from it
// (issue 41)? spin_blockers.csv shows a cuBLAS GEMM slowing 1.18-1.42x with any 2-24 SMs
// held: neither tiles handed to whichever CTA asks (2 SMs of 132 would cost ~1 %) nor a
// fixed share per CTA (a CTA that starts late would double the time) fits. This program
// watches the output instead of the kernel: k "watcher" CTAs (384 threads, one per SM by its 200 KiB of
// shared memory) are the held SMs; they poll the first element of every 64 x 64 block of C
// (filled with 0xFFFF, the GEMM writes zeros) with relaxed GPU-scope loads and stamp the
// global timer when it changes. A marker kernel just before the GEMM, on its stream, stamps
// the start.
//
// Prints CSV: gemm,held,rep,row_block,col_block,t_ns (t from the marker), and on stderr a
// summary per run (watcher SMs, the GEMM's time from the marker to its last tile).
//   nvcc -O3 -arch=sm_90 -o tile_order tile_order.cu -lcublas && ./tile_order > tile_order.csv

#include "h200_common.cuh"

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <vector>

__device__ unsigned long long g_start;

__global__ void marker() { g_start = gtime(); }

// Each thread polls points p = tid, tid + stride, ... until all are written or the
// deadline passes; t_out[p] = global time of the first read that saw a write.
__global__ void watch(const unsigned short* c, int n_cols, int row_blocks, int col_blocks, unsigned long long* t_out,
                      unsigned* sm_out, unsigned long long deadline_ns) {
  extern __shared__ char smem[];
  if (threadIdx.x == 0) sm_out[blockIdx.x] = smid();
  const int points = row_blocks * col_blocks;
  const int stride = gridDim.x * blockDim.x;
  const int first = blockIdx.x * blockDim.x + threadIdx.x;
  constexpr int kMax = 32;
  int mine[kMax];
  int n = 0;
  for (int p = first; p < points && n < kMax; p += stride) mine[n++] = p;
  unsigned done = 0;
  const unsigned all = n == 32 ? ~0u : (1u << n) - 1;
  const unsigned long long t0 = gtime();
  while (done != all) {
    unsigned short v[kMax];
#pragma unroll
    for (int i = 0; i < kMax; ++i) {
      if (i < n && !(done & (1u << i))) {
        const int rb = mine[i] / col_blocks, cb = mine[i] % col_blocks;
        const unsigned short* a = c + static_cast<size_t>(rb) * 64 * n_cols + static_cast<size_t>(cb) * 64;
        asm volatile("ld.relaxed.gpu.global.b16 %0, [%1];" : "=h"(v[i]) : "l"(a));
      }
    }
    const unsigned long long t = gtime();
#pragma unroll
    for (int i = 0; i < kMax; ++i) {
      if (i < n && !(done & (1u << i)) && v[i] != 0xFFFF) {
        done |= 1u << i;
        t_out[mine[i]] = t;
      }
    }
    if (t - t0 > deadline_ns) break;
  }
  if (smem[0] == 1 && done == 12345) smem[1] = 0;  // keep the shared memory allocated
}

int main() {
  cublasHandle_t h;
  if (cublasCreate(&h) != CUBLAS_STATUS_SUCCESS) return 1;
  cudaStream_t gs, ws;
  CK(cudaStreamCreateWithFlags(&gs, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&ws, cudaStreamNonBlocking));
  cublasSetStream(h, gs);
  const int smem = 200 * 1024;
  CK(cudaFuncSetAttribute(watch, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  printf("gemm,held,rep,row_block,col_block,t_ns\n");
  for (const Shape& sh : {Shape{"gpt3.op.tp32", 2048, 12288, 384}, Shape{"palm.fc2.tp32", 2048, 18432, 2304},
                          Shape{"megagpt2.op.tp8", 16384, 3072, 384}}) {
    const TorchMmGemm gemm(h, sh);
    for (int i = 0; i < 30; ++i) gemm();
    CK(cudaDeviceSynchronize());
    const int rb = sh.M / 64, cb = sh.N / 64, points = rb * cb;
    unsigned long long* t_dev;
    unsigned* sm_dev;
    CK(cudaMalloc(&t_dev, points * sizeof(unsigned long long)));
    CK(cudaMalloc(&sm_dev, 64 * sizeof(unsigned)));
    std::vector<unsigned long long> t(points);
    cudaEvent_t e0, e1;
    CK(cudaEventCreate(&e0));
    CK(cudaEventCreate(&e1));
    // The GEMM alone, marker included (the reference for the watched runs' last tile).
    for (int rep = 0; rep < 3; ++rep) {
      float ms = 0;
      CK(cudaEventRecord(e0, gs));
      marker<<<1, 1, 0, gs>>>();
      gemm();
      CK(cudaEventRecord(e1, gs));
      CK(cudaDeviceSynchronize());
      CK(cudaEventElapsedTime(&ms, e0, e1));
      fprintf(stderr, "%s held=0 rep=%d marker_to_end_us=%.2f\n", sh.name, rep, ms * 1000);
    }
    for (int held : {1, 2, 3, 4, 6, 8, 12, 16, 24}) {
      const int threads = 384;
      if (points > held * threads * 32) continue;  // kMax points per thread
      for (int rep = 0; rep < 3; ++rep) {
        CK(cudaMemset(gemm.C, 0xFF, size_t(sh.M) * sh.N * 2));
        CK(cudaMemset(t_dev, 0, points * sizeof(unsigned long long)));
        CK(cudaDeviceSynchronize());
        watch<<<held, threads, smem, ws>>>(reinterpret_cast<const unsigned short*>(gemm.C), sh.N, rb, cb, t_dev, sm_dev, 20000000ull);
        usleep(2000);  // the watchers are resident before the GEMM is launched
        CK(cudaEventRecord(e0, gs));
        marker<<<1, 1, 0, gs>>>();
        gemm();
        CK(cudaEventRecord(e1, gs));
        CK(cudaDeviceSynchronize());
        CK(cudaGetLastError());
        float ms = 0;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        unsigned long long start;
        CK(cudaMemcpyFromSymbol(&start, g_start, sizeof(start)));
        CK(cudaMemcpy(t.data(), t_dev, points * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
        std::vector<unsigned> sms(held);
        CK(cudaMemcpy(sms.data(), sm_dev, held * sizeof(unsigned), cudaMemcpyDeviceToHost));
        unsigned long long last = 0, missing = 0;
        for (int p = 0; p < points; ++p) {
          if (t[p] == 0) {
            ++missing;
            continue;
          }
          last = std::max(last, t[p] - start);
          printf("%s,%d,%d,%d,%d,%llu\n", sh.name, held, rep, p / cb, p % cb, t[p] - start);
        }
        fprintf(stderr, "%s held=%d rep=%d marker_to_end_us=%.2f last_tile_us=%.2f missing=%llu sms=", sh.name, held,
                rep, ms * 1000, last / 1000.0, missing);
        for (unsigned s : sms) fprintf(stderr, "%u ", s);
        fprintf(stderr, "\n");
      }
    }
    CK(cudaFree(t_dev));
    CK(cudaFree(sm_dev));
  }
  return 0;
}
