// What of a copy engine's reads slows the GEMM beside it (issue 41, stop 60)?
// clock_beside_copy_2gpu.csv (results/h200-measurements/README.md point 16): GPU 0's copy
// engine reading its HBM into GPU 1 over NVLink (~391 GB/s) slows the GEMM on GPU 0
// 1.05 (megagpt2 op), 1.07-1.08 (gpt3 op), 1.03-1.04 (tnlg fc2), 1.01-1.02 (palm fc2),
// while the same rate of writes into its HBM slows nothing; the model's GEMM slows about
// half as much. The reads pass GPU 0's memory-side L2: they may cost the GEMM DRAM time
// (the reads themselves), L2 room (a 256 MiB source streams through the 60 MB L2), L2
// bandwidth (every byte passes a slice), or power (the SM clock at the cap). Reads of
// GPU 0's memory by GPU 1's SMs over NVLink (the same path into GPU 0's L2, none of GPU
// 0's SMs or engines) separate them by the size of what they read:
//   out_256m  GPU 0's copy engine copying a 256 MiB buffer into GPU 1, over and over
//             (CUDA graphs of 1 GiB; interference_2gpu.csv's ce_peer_out)
//   out_64m   the same from a 64 MiB buffer
//   rd_256m   132 CTAs on GPU 1 reading a 256 MiB buffer of GPU 0 (16 B loads, 4 in
//             flight per thread): DRAM reads and an L2 swept
//   rd_8m     the same over 8 MiB: L2-resident after the first pass (no DRAM reads, no
//             sweep; only the L2's slices and the path in)
// With SWEEP=1 instead: rd_8m from 8, 16, 33, 66 and 132 CTAs (the rate GPU 0 sends at),
// and wr_8m (132 CTAs of GPU 1 writing 8 MiB of GPU 0: what GPU 0 receives), with alone
// rows between them, three rounds, megagpt2 op and palm fc2 only.
// beside back-to-back GEMMs (~150 ms after 1 s of GEMMs, random operands: the clock at
// the power cap), with one warp sampling GPU 0's SM clock (as clock_beside_copy.cu).
// Needs two GPUs with peer access. Prints CSV:
//   shape,case,rep,n_gemm,gemm_us,sm_mhz,traffic_gbps
// traffic_gbps: out_*: the 1 GiB graphs that ended inside the window, over the window
// (marked copies_ended_early when the last ended before the window did); rd_*: bytes the
// readers moved over their run (they outlast the window).
//   nvcc -O3 -arch=sm_90 -o ce_read_source ce_read_source.cu -lcublas

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "h200_common.cuh"

int main() {
  int devices = 0;
  CK(cudaGetDeviceCount(&devices));
  if (devices < 2) {
    fprintf(stderr, "ce_read_source: needs two GPUs\n");
    return 2;
  }
  cublasHandle_t h;
  cublasCreate(&h);
  cudaStream_t gs, cs, ss;
  CK(cudaStreamCreateWithFlags(&gs, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&ss, cudaStreamNonBlocking));
  cublasSetStream(h, gs);
  const size_t big = size_t(256) << 20;
  char *src, *dst;
  CK(cudaMalloc(&src, big));
  CK(cudaMalloc(&dst, big));
  CK(cudaMemset(src, 1, big));
  CK(cudaDeviceEnablePeerAccess(1, 0));
  CK(cudaSetDevice(1));
  CK(cudaDeviceEnablePeerAccess(0, 0));
  char* peer = nullptr;
  CK(cudaMalloc(&peer, big));
  CK(cudaMemset(peer, 1, big));
  CK(cudaSetDevice(0));
  WindowClock clock;  // the SM clock through each window
  const size_t graph_bytes = size_t(1) << 30;
  const int n_graphs = 64;  // 64 GiB: ~170 ms at NVLink's ~390 GB/s, past the window
  std::vector<cudaEvent_t> copy_end(n_graphs);
  for (auto& e : copy_end) CK(cudaEventCreate(&e));
  cudaEvent_t w0, w1;
  CK(cudaEventCreate(&w0));
  CK(cudaEventCreate(&w1));
  const Shape shapes[] = {{"megagpt2.op.tp8", 16384, 3072, 384},
                          {"gpt3.op.tp32", 2048, 12288, 384},
                          {"tnlg.fc2.tp8", 8192, 4256, 2128},
                          {"palm.fc2.tp32", 2048, 18432, 2304}};
  struct Case {
    const char* name;
    size_t bytes;      // per copy (out_*) or the buffer read or written (rd_*, wr_*)
    bool gpu1_reader;  // GPU 1's SMs read (or write) it (else GPU 0's copy engine copies it)
    int ctas = 132;    // GPU 1's CTAs
    bool write = false;
  };
  const size_t mib8 = size_t(8) << 20;
  // SWEEP=1: the rate of GPU 1's reads of 8 MiB of GPU 0 (what GPU 0 sends over NVLink,
  // from its L2) against GPU 0's clock, and GPU 1 writing the same into GPU 0 (what GPU 0
  // receives), alone rows between them; three rounds, two GEMMs.
  const bool sweep = getenv("SWEEP") != nullptr && std::string(getenv("SWEEP")) == "1";
  std::vector<Case> cases;
  if (sweep) {
    cases = {{"alone", 0, false},           {"rd_8m_c8", mib8, true, 8},   {"rd_8m_c16", mib8, true, 16},
             {"rd_8m_c33", mib8, true, 33}, {"alone", 0, false},           {"rd_8m_c66", mib8, true, 66},
             {"rd_8m_c132", mib8, true, 132}, {"wr_8m_c132", mib8, true, 132, true}};
  } else {
    cases = {{"alone", 0, false},
             {"out_256m", big, false},
             {"out_64m", size_t(64) << 20, false},
             {"rd_256m", big, true},
             {"rd_8m", mib8, true}};
  }
  cudaStream_t rs;  // GPU 1's reader stream
  unsigned long long* reader_bytes;
  int4* sink;
  CK(cudaSetDevice(1));
  CK(cudaStreamCreateWithFlags(&rs, cudaStreamNonBlocking));
  CK(cudaMalloc(&reader_bytes, 8));
  CK(cudaMalloc(&sink, 16));
  CK(cudaSetDevice(0));
  std::vector<cudaGraphExec_t> graph;
  for (const Case& k : cases)
    graph.push_back(k.bytes == 0 || k.gpu1_reader ? nullptr : copy_graph(peer, src, k.bytes, graph_bytes, cs));
  printf("shape,case,rep,n_gemm,gemm_us,sm_mhz,traffic_gbps\n");
  for (const Shape& sh : shapes) {
    if (sweep && std::string(sh.name) != "megagpt2.op.tp8" && std::string(sh.name) != "palm.fc2.tp32") continue;
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
    for (int rep = 0; rep < (sweep ? 3 : 2); ++rep) {
      for (size_t ci = 0; ci < cases.size(); ++ci) {
        const Case& k = cases[ci];
        const auto t0 = std::chrono::steady_clock::now();
        while (std::chrono::steady_clock::now() - t0 < std::chrono::seconds(1)) {
          for (int i = 0; i < 20; ++i) gemm();
          CK(cudaStreamSynchronize(gs));
        }
        // Copies queued first, enough to outlast the window (checked below).
        const int n_copies = k.bytes > 0 && !k.gpu1_reader ? n_graphs : 0;
        const unsigned long long reader_ns = 1000000ull * (unsigned long long)(ms20 / 20 * n_gemm + 60);
        if (k.gpu1_reader) {
          CK(cudaSetDevice(1));
          CK(cudaMemsetAsync(reader_bytes, 0, 8, rs));
          if (k.write)
            traffic_writer<<<k.ctas, 512, 0, rs>>>(reinterpret_cast<int4*>(dst), k.bytes / 16, reader_ns, reader_bytes);
          else
            traffic_reader<4><<<k.ctas, 512, 0, rs>>>(reinterpret_cast<const int4*>(src), k.bytes / 16, reader_ns,
                                                      sink, reader_bytes);
          CK(cudaGetLastError());
          CK(cudaSetDevice(0));
        }
        for (int i = 0; i < n_copies; ++i) {
          CK(cudaGraphLaunch(graph[ci], cs));
          CK(cudaEventRecord(copy_end[i], cs));
        }
        clock.open(ss, gs);
        CK(cudaEventRecord(w0, gs));
        for (int i = 0; i < n_gemm; ++i) gemm();
        CK(cudaEventRecord(w1, gs));
        clock.close(gs);
        CK(cudaDeviceSynchronize());
        float window_ms = 0;
        CK(cudaEventElapsedTime(&window_ms, w0, w1));
        double moved = 0, moved_by_reader = 0;
        bool outlasted = k.bytes == 0 || k.gpu1_reader;
        if (k.gpu1_reader) {
          CK(cudaSetDevice(1));
          CK(cudaDeviceSynchronize());
          unsigned long long b = 0;
          CK(cudaMemcpy(&b, reader_bytes, 8, cudaMemcpyDeviceToHost));
          CK(cudaSetDevice(0));
          moved_by_reader = double(b) / (reader_ns * 1e-9);
        }
        for (int i = 0; i < n_copies; ++i) {
          float from_start = 0, to_end = 0;
          CK(cudaEventElapsedTime(&from_start, w0, copy_end[i]));
          CK(cudaEventElapsedTime(&to_end, copy_end[i], w1));
          if (from_start > 0 && to_end > 0) moved += double(graph_bytes);
          if (to_end < 0) outlasted = true;
        }
        const double mhz = clock.mhz(5000000ull);
        printf("%s,%s,%d,%d,%.2f,%.0f,%.1f%s\n", sh.name, k.name, rep, n_gemm, 1e3 * window_ms / n_gemm, mhz,
               k.gpu1_reader ? moved_by_reader / 1e9 : moved / (window_ms * 1e-3) / 1e9,
               outlasted ? "" : ",copies_ended_early");
        fflush(stdout);
      }
    }
  }
  return 0;
}
