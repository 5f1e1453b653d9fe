// Where does a copy kernel beside back-to-back cuBLAS GEMMs spend the time its CTAs do
// not run (issue 41)? copy_residency.csv: a 64 MiB copy beside palm.fc2 spans ~355 us
// while its CTAs run ~265 us. This program records every kernel of a run (CUPTI: start
// and end on the GPU's global timer) and the copy's CTAs' own start and end stamps
// (%globaltimer, the same clock), so each copy's start can be set against the GEMMs'
// ends, and each GEMM's start against the previous one's end (does the next GEMM start
// before the last ends, as programmatic dependent launch would let it?).
//
// Prints CSV: gemm,order,kind,index,start_ns,end_ns,cta_first_start_ns,cta_last_start_ns,cta_last_end_ns
// (times from the run's first kernel start; CTA columns for copies only).
//   nvcc -O3 -arch=sm_90 -DKREC=CUpti_ActivityKernel10 -I$CUPTI/include -o copy_gaps copy_gaps.cu -lcublas -lcupti

#include <cupti.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <mutex>
#include <string>
#include <vector>

#include "h200_common.cuh"

#ifndef KREC
#define KREC CUpti_ActivityKernel9
#endif

namespace {

struct Rec {
  bool copy;
  unsigned long long start, end;
};
std::mutex g_mutex;
std::vector<Rec> g_recs;

void CUPTIAPI requested(uint8_t** b, size_t* size, size_t* max) {
  *size = 16u << 20;
  *b = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max = 0;
}
void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* b, size_t, size_t valid) {
  CUpti_Activity* r = nullptr;
  std::lock_guard<std::mutex> lock(g_mutex);
  while (cuptiActivityGetNextRecord(b, valid, &r) == CUPTI_SUCCESS) {
    if (r->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    const auto* k = reinterpret_cast<const KREC*>(r);
    const bool copy = k->name && strstr(k->name, "copy16") != nullptr;
    const bool gemm = k->name && strstr(k->name, "nvjet") != nullptr;
    if (copy || gemm) g_recs.push_back({copy, k->start, k->end});
  }
  free(b);
}

constexpr int kCtas = 24, kThreads = 512;
constexpr size_t kCopyBytes = 64ull << 20;

__global__ void copy16(const int4* __restrict__ src, int4* __restrict__ dst, unsigned long long n16,
                       unsigned long long* stamps) {
  if (threadIdx.x == 0) stamps[2 * blockIdx.x] = gtime();
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  const unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    int4 a = src[i]; int4 b = src[i + stride]; int4 c = src[i + 2 * stride]; int4 d = src[i + 3 * stride];
    dst[i] = a; dst[i + stride] = b; dst[i + 2 * stride] = c; dst[i + 3 * stride] = d;
  }
  for (; i < n16; i += stride) dst[i] = src[i];
  __syncthreads();
  if (threadIdx.x == 0) stamps[2 * blockIdx.x + 1] = gtime();
}

__global__ void fill_random(__half* p, size_t n, unsigned seed) {
  for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
    unsigned x = unsigned(i) * 2654435761u ^ seed;
    x ^= x >> 15;
    x *= 2246822519u;
    x ^= x >> 13;
    p[i] = __float2half((x & 0xFFFF) / 16384.0f - 2.0f);
  }
}

}  // namespace

int main() {
  const Shape shapes[] = {{"palm.fc2.tp32", 2048, 18432, 2304}, {"gpt3.op.tp32", 2048, 12288, 384}};
  if (cuptiActivityRegisterCallbacks(requested, completed) != CUPTI_SUCCESS ||
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) != CUPTI_SUCCESS)
    return 1;
  cublasHandle_t h;
  cublasCreate(&h);
  cudaStream_t gs, cs;
  CK(cudaStreamCreateWithFlags(&gs, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  int4 *src, *dst;
  CK(cudaMalloc(&src, kCopyBytes));
  CK(cudaMalloc(&dst, kCopyBytes));
  CK(cudaMemset(src, 1, kCopyBytes));
  constexpr int kCopies = 16;
  unsigned long long* stamps;
  CK(cudaMalloc(&stamps, sizeof(unsigned long long) * 2 * kCtas * kCopies));
  printf("gemm,order,kind,index,start_ns,end_ns,cta_first_start_ns,cta_last_start_ns,cta_last_end_ns\n");
  for (const Shape& sh : shapes) {
    TorchMmGemm gemm(h, sh);
    fill_random<<<1024, 256>>>(gemm.A, size_t(sh.M) * sh.K, 1);
    fill_random<<<1024, 256>>>(gemm.W, size_t(sh.N) * sh.K, 2);
    CK(cudaDeviceSynchronize());
    cublasSetStream(h, gs);
    // Enough GEMMs for the copies to run beside them throughout (~1.5x their time).
    const int n_gemm = sh.K > 1000 ? 24 : 120;
    for (const char* order : {"gemm_first", "comm_first"}) {
      for (int i = 0; i < 20; ++i) gemm();  // warm, and the clock at its cap
      CK(cudaDeviceSynchronize());
      cuptiActivityFlushAll(1);
      {
        std::lock_guard<std::mutex> lock(g_mutex);
        g_recs.clear();
      }
      auto gemms = [&] { for (int i = 0; i < n_gemm; ++i) gemm(); };
      auto copies = [&] {
        for (int k = 0; k < kCopies; ++k)
          copy16<<<kCtas, kThreads, 0, cs>>>(src, dst, kCopyBytes / 16, stamps + 2 * kCtas * k);
      };
      if (strcmp(order, "gemm_first") == 0) { gemms(); copies(); } else { copies(); gemms(); }
      CK(cudaDeviceSynchronize());
      cuptiActivityFlushAll(1);
      std::vector<unsigned long long> st(2 * kCtas * kCopies);
      CK(cudaMemcpy(st.data(), stamps, st.size() * sizeof(st[0]), cudaMemcpyDeviceToHost));
      std::vector<Rec> recs;
      {
        std::lock_guard<std::mutex> lock(g_mutex);
        recs = g_recs;
      }
      std::sort(recs.begin(), recs.end(), [](const Rec& a, const Rec& b) { return a.start < b.start; });
      if (recs.empty()) continue;
      const unsigned long long t0 = recs.front().start;
      int gi = 0, ci = 0;
      for (const Rec& r : recs) {
        if (r.copy && ci < kCopies) {
          unsigned long long fs = ~0ull, ls = 0, le = 0;
          for (int c = 0; c < kCtas; ++c) {
            fs = std::min(fs, st[2 * kCtas * ci + 2 * c]);
            ls = std::max(ls, st[2 * kCtas * ci + 2 * c]);
            le = std::max(le, st[2 * kCtas * ci + 2 * c + 1]);
          }
          printf("%s,%s,copy,%d,%llu,%llu,%llu,%llu,%llu\n", sh.name, order, ci, r.start - t0, r.end - t0, fs - t0,
                 ls - t0, le - t0);
          ++ci;
        } else if (!r.copy) {
          printf("%s,%s,gemm,%d,%llu,%llu,,,\n", sh.name, order, gi++, r.start - t0, r.end - t0);
        }
      }
      fflush(stdout);
    }
  }
  return 0;
}
