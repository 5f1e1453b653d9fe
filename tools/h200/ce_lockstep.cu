// Do a GEMM and a local copy-engine copy beside it run in step (issue 41)?
// ce_footprint_graded.csv: beside a stream of DRAM-sized local copies, each GEMM takes as
// long as one copy (or two) of whatever size the copies are: gpt3.op.tp32 50.1 / 54.6 /
// 70.9 / 102.7 us beside pieces of 24 / 32 / 64 / 128 MiB that take 50.5 / 54.6 / 70.8 /
// 102 us each; megagpt2.op.tp8 the same. This records when every copy and every GEMM
// ends (an event after each; 150 of each, copies queued first, no graph), so the ends of
// one stream can be set against the other's.
// ZEROS=1 leaves the GEMM's operands zero (ce_lockstep_zeros.csv): the GPU then draws
// ~400 W instead of its 700 W cap (gemm_k_sweep_zeros.csv).
// Prints CSV: shape,piece_mib,stream,index,end_ms   (ms from the first GEMM's start)
//   nvcc -O3 -arch=sm_90 -std=c++17 -o ce_lockstep ce_lockstep.cu -lcublas

#include <chrono>
#include <cstdio>
#include <vector>

#include "h200_common.cuh"

int main() {
  const GemmAndSideStreams streams;
  cublasHandle_t h = streams.handle;
  cudaStream_t gs = streams.gemm, cs = streams.side;
  char* src = device_bytes(size_t(128) << 20, 1);
  char* dst = device_bytes(size_t(128) << 20, 0);
  const int n = 150;
  std::vector<cudaEvent_t> ge(n + 1), ce(n);
  for (auto& e : ge) CK(cudaEventCreate(&e));
  for (auto& e : ce) CK(cudaEventCreate(&e));
  // LONG=1: the long-K GEMMs (tnlg.fc2.tp8, palm.fc2.tp32) beside 64 MiB copies instead
  // (ce_lockstep_long.csv).
  const bool long_k = std::getenv("LONG") != nullptr;
  const std::vector<Shape> shapes =
      long_k ? std::vector<Shape>{{"tnlg.fc2.tp8", 8192, 4256, 2128}, {"palm.fc2.tp32", 2048, 18432, 2304}}
             : std::vector<Shape>{{"gpt3.op.tp32", 2048, 12288, 384}, {"megagpt2.op.tp8", 16384, 3072, 384}};
  const std::vector<int> pieces = long_k ? std::vector<int>{64} : std::vector<int>{32, 64, 128};
  // SINGLE=1: the host waits for each GEMM before launching the next (ce_lockstep_single.csv),
  // so no GEMM waits behind the running one while the copies run.
  const bool single = std::getenv("SINGLE") != nullptr;
  printf("shape,piece_mib,stream,index,end_ms\n");
  for (const Shape& sh : shapes) {
    TorchMmGemm gemm(h, sh);
    if (std::getenv("ZEROS") == nullptr) randomize_operands(gemm, gs);  // ZEROS=1: zero operands (~400 W, below the cap)
    for (int piece_mib : pieces) {
      run_gemms_for(gemm, gs, 300);
      for (int i = 0; i < n; ++i) {
        CK(cudaMemcpyAsync(dst, src, size_t(piece_mib) << 20, cudaMemcpyDeviceToDevice, cs));
        CK(cudaEventRecord(ce[i], cs));
      }
      CK(cudaEventRecord(ge[0], gs));
      for (int i = 1; i <= n; ++i) {
        gemm();
        CK(cudaEventRecord(ge[i], gs));
        if (single) CK(cudaStreamSynchronize(gs));  // no GEMM queued behind the running one
      }
      CK(cudaDeviceSynchronize());
      for (int i = 0; i <= n; ++i) {
        float t = 0;
        CK(cudaEventElapsedTime(&t, ge[0], ge[i]));
        printf("%s,%d,gemm,%d,%.4f\n", sh.name, piece_mib, i, t);
      }
      for (int i = 0; i < n; ++i) {
        float t = 0;
        CK(cudaEventElapsedTime(&t, ge[0], ce[i]));
        printf("%s,%d,copy,%d,%.4f\n", sh.name, piece_mib, i, t);
      }
      fflush(stdout);
    }
  }
  return 0;
}
