// Does a copy engine's traffic slow a GEMM through the power cap's clock (issue 41)?
// interference_2gpu.csv shows a GEMM 1.05-1.11x slower beside a copy engine that reads
// its HBM for NVLink (ce_peer_out, 380 GB/s), where the model's GEMM does not slow: its
// DRAM has headroom. Candidate mechanisms: the DRAM (read/write turnarounds under the
// GEMM's C write stream) and power (the GPU sits at its power cap during GEMMs; HBM,
// copy-engine and link power taken from the same budget lowers the SM clock). This
// separates them on one GPU: back-to-back GEMMs (~150 ms, after 1 s of GEMMs so the clock
// sits at the cap) alone and beside copy-engine copies, with one warp sampling the SM
// clock through the window (the sampler holds one SM in every case):
//   alone   the GEMMs alone
//   d2d     a local device-to-device copy (256 MiB, repeated): reads and writes HBM
//   d2h     device to pinned host over PCIe: reads HBM at PCIe's rate (the nearest one
//           GPU has to ce_peer_out's read-only stream)
//   h2d     pinned host to device: writes HBM at PCIe's rate
//   peer_out  (with two GPUs) GPU 0's copy engine reads its HBM into GPU 1 over NVLink
//           (interference_2gpu.csv's ce_peer_out)
//   peer_pull GPU 0's copy engine reads GPU 1 into its HBM (a write stream into GPU 0's
//           HBM at NVLink's rate; interfere.py's ce_peer_in is GPU 1's engine pushing)
// A GEMM slower by about its clock's ratio is the power mechanism; slower at the same
// clock is the memory system.
//
// Prints CSV: shape,case,rep,n_gemm,gemm_us,sm_mhz,copy_gbps  (copy_gbps: bytes of the
// copies that ended inside the window over the window)
//   nvcc -O3 -arch=sm_90 -o clock_beside_copy clock_beside_copy.cu -lcublas

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "h200_common.cuh"

int main() {
  cublasHandle_t h;
  cublasCreate(&h);
  cudaStream_t gs, cs, ss;
  CK(cudaStreamCreateWithFlags(&gs, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&ss, cudaStreamNonBlocking));
  cublasSetStream(h, gs);
  const size_t copy_bytes = size_t(256) << 20;
  char *dsrc, *ddst, *host;
  CK(cudaMalloc(&dsrc, copy_bytes));
  CK(cudaMalloc(&ddst, copy_bytes));
  CK(cudaMallocHost(&host, copy_bytes));
  CK(cudaMemset(dsrc, 1, copy_bytes));
  int devices = 0;
  CK(cudaGetDeviceCount(&devices));
  char* peer = nullptr;
  if (devices > 1) {
    CK(cudaDeviceEnablePeerAccess(1, 0));
    CK(cudaSetDevice(1));
    CK(cudaDeviceEnablePeerAccess(0, 0));
    CK(cudaMalloc(&peer, copy_bytes));
    CK(cudaMemset(peer, 1, copy_bytes));
    CK(cudaSetDevice(0));
  }
  WindowClock clock;  // the SM clock through each window
  const int max_copies = 2000;
  std::vector<cudaEvent_t> copy_end(max_copies);
  for (auto& e : copy_end) CK(cudaEventCreate(&e));
  cudaEvent_t w0, w1;
  CK(cudaEventCreate(&w0));
  CK(cudaEventCreate(&w1));
  const Shape shapes[] = {{"megagpt2.op.tp8", 16384, 3072, 384},
                          {"gpt3.op.tp32", 2048, 12288, 384},
                          {"tnlg.fc2.tp8", 8192, 4256, 2128},
                          {"palm.fc2.tp32", 2048, 18432, 2304}};
  printf("shape,case,rep,n_gemm,gemm_us,sm_mhz,copy_gbps\n");
  for (const Shape& sh : shapes) {
    TorchMmGemm gemm(h, sh);
    fill_random<<<1024, 256, 0, gs>>>(gemm.A, size_t(sh.M) * sh.K, 1);
    fill_random<<<1024, 256, 0, gs>>>(gemm.W, size_t(sh.N) * sh.K, 2);
    CK(cudaStreamSynchronize(gs));
    for (int i = 0; i < 20; ++i) gemm();
    CK(cudaEventRecord(w0, gs));
    for (int i = 0; i < 20; ++i) gemm();
    CK(cudaEventRecord(w1, gs));
    CK(cudaStreamSynchronize(gs));
    float ms20 = 0;
    CK(cudaEventElapsedTime(&ms20, w0, w1));
    const int n_gemm = std::max(20, int(150.0f / (ms20 / 20)));
    for (int rep = 0; rep < 2; ++rep) {
      for (const char* kase : {"alone", "d2d", "d2h", "h2d", "peer_out", "peer_pull"}) {
        const std::string k = kase;
        if (k.rfind("peer", 0) == 0 && peer == nullptr) continue;
        // 1 s of GEMMs: the clock at the cap, as in interfere.py's windows.
        const auto t0 = std::chrono::steady_clock::now();
        while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1)) {
          for (int i = 0; i < 20; ++i) gemm();
          CK(cudaStreamSynchronize(gs));
        }
        // Copies queued first, so the window opens with the copy engine busy; enough of
        // them to outlast it (checked below: the last copy must end after the window).
        int n_copies = 0;
        if (k != "alone") {
          const double alone_gbps = k == "d2d" ? 1500.0 : k.rfind("peer", 0) == 0 ? 400.0 : 50.0;
          n_copies = std::min(max_copies, int(0.35 * alone_gbps * 1e9 / double(copy_bytes)) + 4);
          for (int i = 0; i < n_copies; ++i) {
            if (k == "d2d") CK(cudaMemcpyAsync(ddst, dsrc, copy_bytes, cudaMemcpyDeviceToDevice, cs));
            if (k == "d2h") CK(cudaMemcpyAsync(host, dsrc, copy_bytes, cudaMemcpyDeviceToHost, cs));
            if (k == "h2d") CK(cudaMemcpyAsync(ddst, host, copy_bytes, cudaMemcpyHostToDevice, cs));
            if (k == "peer_out") CK(cudaMemcpyPeerAsync(peer, 1, dsrc, 0, copy_bytes, cs));
            if (k == "peer_pull") CK(cudaMemcpyPeerAsync(ddst, 0, peer, 1, copy_bytes, cs));
            CK(cudaEventRecord(copy_end[i], cs));
          }
        }
        clock.open(ss, gs);
        CK(cudaEventRecord(w0, gs));
        for (int i = 0; i < n_gemm; ++i) gemm();
        CK(cudaEventRecord(w1, gs));
        clock.close(gs);
        CK(cudaDeviceSynchronize());
        float window_ms = 0;
        CK(cudaEventElapsedTime(&window_ms, w0, w1));
        double moved = 0;
        bool outlasted = k == "alone";
        for (int i = 0; i < n_copies; ++i) {
          float from_start = 0, to_end = 0;
          CK(cudaEventElapsedTime(&from_start, w0, copy_end[i]));
          CK(cudaEventElapsedTime(&to_end, copy_end[i], w1));
          if (from_start > 0 && to_end > 0) moved += double(copy_bytes);
          if (to_end < 0) outlasted = true;
        }
        // The clock over the window, from 5 ms in (the copies' start) to its end.
        const double mhz = clock.mhz(5000000ull);
        printf("%s,%s,%d,%d,%.2f,%.0f,%.1f%s\n", sh.name, kase, rep, n_gemm, 1e3 * window_ms / n_gemm, mhz,
               moved / (window_ms * 1e-3) / 1e9, outlasted ? "" : ",copies_ended_early");
        fflush(stdout);
      }
    }
  }
  return 0;
}
