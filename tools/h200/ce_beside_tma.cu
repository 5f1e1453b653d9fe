// What a local copy-engine copy gets beside TMA bulk loads of a given depth (issue 41).
// Point 20: beside a running GEMM the copy moves ~50-230 GB/s (the GEMM's TMA loads);
// point 10: beside plain loads it keeps 1,025 GB/s at 24 KiB in flight per SM and stops
// at 32. This runs the GEMM's kind of load alone: one CTA per SM (132) streaming 32 KiB
// chunks with cp.async.bulk into `stages` shared-memory buffers (bulk_reader,
// h200_common.cuh), so stages x 32 KiB in flight per SM, from an L2-resident 16 MiB
// buffer or a 1 GiB one (DRAM); beside it 100 local copies of 64 MiB, queued just after
// the reader on another stream. Per case: the reader's rate alone and beside, the
// copy's rate over the copies that ended while the reader ran.
// Prints CSV: source,stages,kib_in_flight_per_sm,reader_alone_GBps,reader_GBps,copy_GBps,copies_during
//   nvcc -O3 -arch=sm_90 -std=c++17 -o ce_beside_tma ce_beside_tma.cu

#include <cstdio>
#include <vector>

#include "h200_common.cuh"

int main() {
  const int ctas = 132, copies = 100;
  const size_t copy_bytes = size_t(64) << 20;
  cudaStream_t ks, cs;
  CK(cudaStreamCreateWithFlags(&ks, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  CK(cudaFuncSetAttribute(bulk_reader, cudaFuncAttributeMaxDynamicSharedMemorySize, 6 * kBulkChunk));
  char* l2buf = device_bytes(size_t(16) << 20, 1);
  char* dram = device_bytes(size_t(1) << 30, 1);
  char* src = device_bytes(copy_bytes, 1);
  char* dst = device_bytes(copy_bytes, 0);
  unsigned long long* stamps;
  int* sink;
  CK(cudaMalloc(&stamps, 16));
  CK(cudaMalloc(&sink, 4));
  cudaEvent_t r0, r1;
  CK(cudaEventCreate(&r0));
  CK(cudaEventCreate(&r1));
  std::vector<cudaEvent_t> ce(copies + 1);
  for (auto& e : ce) CK(cudaEventCreate(&e));
  printf("source,stages,kib_in_flight_per_sm,reader_alone_GBps,reader_GBps,copy_GBps,copies_during\n");
  struct Case {
    const char* source;
    int stages;
  };
  const Case cases[] = {{"l2", 1}, {"l2", 2}, {"l2", 3}, {"l2", 4}, {"l2", 6}, {"dram", 2}, {"dram", 4}, {"dram", 6}};
  for (const Case& c : cases) {
    const bool l2 = std::string(c.source) == "l2";
    const char* buf = l2 ? l2buf : dram;
    const unsigned long long bytes = l2 ? (16ull << 20) : (1ull << 30);
    // ~20 ms of reading at ~55 GB/s per SM (L2) or ~30 (DRAM)
    const int chunks = l2 ? 33000 : 18000;
    auto read = [&](bool beside) {
      CK(cudaEventRecord(r0, ks));
      bulk_reader<<<ctas, 128, c.stages * kBulkChunk, ks>>>(buf, bytes, chunks, c.stages, kBulkChunk, stamps, sink);
      CK(cudaEventRecord(r1, ks));
      if (beside) {
        CK(cudaEventRecord(ce[0], cs));
        for (int i = 1; i <= copies; ++i) {
          CK(cudaMemcpyAsync(dst, src, copy_bytes, cudaMemcpyDeviceToDevice, cs));
          CK(cudaEventRecord(ce[i], cs));
        }
      }
      CK(cudaDeviceSynchronize());
      float ms = 0;
      CK(cudaEventElapsedTime(&ms, r0, r1));
      return double(chunks) * kBulkChunk * ctas / (ms * 1e-3) / 1e9;
    };
    const double alone = read(false);
    const double beside = read(true);
    const CopiesBefore during = copies_before(ce, copies, r1, copy_bytes);
    const double copy_gbps = during.gbps;
    const int first = during.first, last = during.last;
    printf("%s,%d,%d,%.1f,%.1f,%.1f,%d\n", c.source, c.stages, c.stages * 32, alone, beside, copy_gbps,
           last < 0 ? 0 : last - first + 1);
    fflush(stdout);
  }
  return 0;
}
