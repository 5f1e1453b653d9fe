// Does a copy kernel that ends in a GEMM's tail let the next copy spread (issue 41)?
//
// copy_gaps.csv: beside back-to-back cuBLAS GEMMs each 64 MiB copy runs packed (3-4 CTAs
// on 6-8 SMs), ends a few us into a GEMM, and the next copy waits for that GEMM's tail.
// The model's copies do the same when they end inside a GEMM, but a packed copy that ends
// in a GEMM's tail (its CTAs leaving SMs free) lets the next copy find 24 SMs free and
// spread over them (85 us instead of ~350), which doubles its rate beside the GEMMs. On
// the machine the copies always ended inside a GEMM, so whether it does the same was not
// seen. This program moves the copy's end across the GEMMs' period by its size (32-94
// MiB in steps of 2: the packed copy takes ~6.2 us per MiB, a step ~0.26 of a gpt3.op
// GEMM) and records for every copy the SMs its CTAs ran on (%smid) and their start and
// end stamps (%globaltimer), and every kernel's start and end (CUPTI).
//
// Prints CSV: gemm,size_mib,kind,index,start_ns,end_ns,sms,cta_first_start_ns,cta_last_end_ns
// (times from the size's first kernel start, CUPTI's clock; sms and cta_* for copies only:
// cta_first_start is the record's start, cta_last_end that plus the CTAs' span, first
// start to last end, on %globaltimer).
//   tools/h200/measure_program.sh copy_phase OUTDIR [--push] [GEMM...]; tools/h200/copy_phase.py OUTDIR/copy_phase.csv
// (GEMM: gpt3.op.tp32 megagpt2.op.tp8 palm.fc2.tp32 tnlg.fc2.tp8; default the first two;
// --push: the copy stores into GPU 1's memory over NVLink, as sm_push, on two GPUs)

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "cupti_kernels.cuh"
#include "h200_common.cuh"

namespace {

constexpr int kCtas = 24, kThreads = 512, kCopies = 12;

// copy16 (h200_common.cuh) with the CTA's SM recorded too: stamps[3 b .. 3 b + 2] =
// start, end, SM.
__global__ void copy16_sm(const int4* __restrict__ src, int4* __restrict__ dst, unsigned long long n16,
                          unsigned long long* stamps) {
  if (threadIdx.x == 0) {
    stamps[3 * blockIdx.x] = gtime();
    stamps[3 * blockIdx.x + 2] = smid();
  }
  copy16_loop(src, dst, n16);
  __syncthreads();
  if (threadIdx.x == 0) stamps[3 * blockIdx.x + 1] = gtime();
}

}  // namespace

int main(int argc, char** argv) {
  // The GEMMs to run beside (by name; default the two short-K ones).
  const Shape known[] = {{"gpt3.op.tp32", 2048, 12288, 384},
                         {"megagpt2.op.tp8", 16384, 3072, 384},
                         {"palm.fc2.tp32", 2048, 18432, 2304},
                         {"tnlg.fc2.tp8", 8192, 4256, 2128}};
  std::vector<Shape> shapes;
  bool push = false;  // --push: the copy stores into GPU 1's memory (interference_2gpu.csv's sm_push)
  for (int a = 1; a < argc; ++a) {
    push = push || strcmp(argv[a], "--push") == 0;
    for (const Shape& s : known)
      if (strcmp(argv[a], s.name) == 0) shapes.push_back(s);
  }
  if (shapes.empty()) shapes = {known[0], known[1]};
  if (!start_kernel_activity()) return 1;
  GemmAndSideStreams streams;
  constexpr size_t kMaxBytes = 94ull << 20;
  int4 *src, *dst;
  CK(cudaMalloc(&src, kMaxBytes));
  if (push) {
    CK(cudaSetDevice(1));
    CK(cudaMalloc(&dst, kMaxBytes));
    CK(cudaSetDevice(0));
    CK(cudaDeviceEnablePeerAccess(1, 0));
  } else {
    CK(cudaMalloc(&dst, kMaxBytes));
  }
  CK(cudaMemset(src, 1, kMaxBytes));
  unsigned long long* stamps;
  CK(cudaMalloc(&stamps, sizeof(unsigned long long) * 3 * kCtas * kCopies));
  printf("gemm,size_mib,kind,index,start_ns,end_ns,sms,cta_first_start_ns,cta_last_end_ns\n");
  for (const Shape& sh : shapes) {
    TorchMmGemm gemm(streams.handle, sh);
    randomize_operands(gemm, streams.gemm);
    // The GEMM alone at the cap (for the count below).
    for (int i = 0; i < 200; ++i) gemm();
    CK(cudaDeviceSynchronize());
    take_kernel_records();
    for (int i = 0; i < 20; ++i) gemm();
    CK(cudaDeviceSynchronize());
    double alone_ns = 0;
    for (const KernelRecord& k : take_kernel_records()) alone_ns = std::max(alone_ns, double(k.ns()));
    for (int mib = 32; mib <= 94; mib += 2) {
      const size_t bytes = size_t(mib) << 20;
      // Enough GEMMs for the copies to run beside them throughout: a packed copy takes
      // ~6.5 us per MiB plus a wait of up to a GEMM, 1.5x that.
      const int n_gemm = int(1.5 * kCopies * (mib * 6500.0 + alone_ns * 1.4) / alone_ns) + 4;
      for (int i = 0; i < 20; ++i) gemm();  // the clock at its cap
      CK(cudaDeviceSynchronize());
      take_kernel_records();
      // Copies first (comm_first), as interference_2gpu.csv's comm_first rows.
      for (int k = 0; k < kCopies; ++k)
        copy16_sm<<<kCtas, kThreads, 0, streams.side>>>(src, dst, bytes / 16, stamps + 3 * kCtas * k);
      for (int i = 0; i < n_gemm; ++i) gemm();
      CK(cudaDeviceSynchronize());
      std::vector<unsigned long long> st(3 * kCtas * kCopies);
      CK(cudaMemcpy(st.data(), stamps, st.size() * sizeof(st[0]), cudaMemcpyDeviceToHost));
      const std::vector<CopyOrGemm> recs = take_copies_and_gemms("copy16_sm");
      if (recs.empty()) continue;
      const unsigned long long t0 = recs.front().start;
      int gi = 0, ci = 0;
      for (const CopyOrGemm& r : recs) {
        if (r.copy && ci < kCopies) {
          unsigned long long fs = ~0ull, le = 0;
          std::vector<unsigned> sms;
          for (int c = 0; c < kCtas; ++c) {
            const unsigned long long* s = &st[3 * kCtas * ci + 3 * c];
            fs = std::min(fs, s[0]);
            le = std::max(le, s[1]);
            sms.push_back(unsigned(s[2]));
          }
          std::sort(sms.begin(), sms.end());
          const long n_sms = std::unique(sms.begin(), sms.end()) - sms.begin();
          // The CTAs' stamps (%globaltimer) and the kernel records (CUPTI) are ~59 us apart
          // (copy_gaps.cu, a constant): only the CTAs' span is taken from the stamps, laid
          // from the record's start.
          printf("%s,%d,copy,%d,%llu,%llu,%ld,%llu,%llu\n", sh.name, mib, ci, r.start - t0, r.end - t0, n_sms,
                 r.start - t0, r.start - t0 + (le - fs));
          ++ci;
        } else if (!r.copy) {
          printf("%s,%d,gemm,%d,%llu,%llu,,,\n", sh.name, mib, gi++, r.start - t0, r.end - t0);
        }
      }
      fflush(stdout);
    }
  }
  return 0;
}
