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
//   tools/h200/measure_copy_gaps.sh OUTDIR (builds it with CUPTI: cupti_env.sh)

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cupti_kernels.cuh"
#include "h200_common.cuh"


namespace {

constexpr int kCtas = 24, kThreads = 512;
constexpr size_t kCopyBytes = 64ull << 20;

}  // namespace

int main() {
  const Shape shapes[] = {{"palm.fc2.tp32", 2048, 18432, 2304}, {"gpt3.op.tp32", 2048, 12288, 384}};
  if (!start_kernel_activity()) return 1;
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
      take_kernel_records();  // the warm-up's
      auto gemms = [&] { for (int i = 0; i < n_gemm; ++i) gemm(); };
      auto copies = [&] {
        for (int k = 0; k < kCopies; ++k)
          copy16<<<kCtas, kThreads, 0, cs>>>(src, dst, kCopyBytes / 16, stamps + 2 * kCtas * k);
      };
      if (strcmp(order, "gemm_first") == 0) { gemms(); copies(); } else { copies(); gemms(); }
      CK(cudaDeviceSynchronize());
      std::vector<unsigned long long> st(2 * kCtas * kCopies);
      CK(cudaMemcpy(st.data(), stamps, st.size() * sizeof(st[0]), cudaMemcpyDeviceToHost));
      // The GEMMs' and the copies' kernels (cuBLAS's nvjet, this program's copy16).
      const std::vector<CopyOrGemm> recs = take_copies_and_gemms("copy16");
      if (recs.empty()) continue;
      const unsigned long long t0 = recs.front().start;
      int gi = 0, ci = 0;
      for (const CopyOrGemm& r : recs) {
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
