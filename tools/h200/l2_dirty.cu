// What the H200's L2 does with a written line (issue 41, after point 24: a 50 MB write
// pass runs at DRAM's rate, C re-reads at nearly the cold rate after it, and a copy after
// it pays no write-back). For buffers of 4-48 MiB, medians of 9: one read pass over the
// buffer (all SMs, 16 B L2-only loads) right after a write pass over it, after two read
// passes (warm) and after 256 MiB of other reads (cold); the write pass alone, over a
// buffer already written and over one just read (both L2-resident); and a 64 MiB local
// copy right after the write pass, after the write pass and a 100 us or 1 ms wait on the
// GPU, and right after a read pass (no dirty lines).
// Prints CSV: MiB,read_after_write_us,read_warm_us,read_cold_us,write_after_write_us,
//   write_after_read_us,copy_after_write_us,copy_after_write_100us_us,copy_after_write_1ms_us,copy_after_read_us
//   nvcc -O3 -arch=sm_90 -std=c++17 -o l2_dirty l2_dirty.cu

#include <algorithm>
#include <cstdio>
#include <vector>

#include "h200_common.cuh"

__global__ void wait_ns(unsigned long long ns) {
  const unsigned long long t0 = gtime();
  while (gtime() - t0 < ns) {
  }
}

int main() {
  const size_t most = size_t(48) << 20, flush_bytes = size_t(256) << 20, copy_bytes = size_t(64) << 20;
  int4* buf = (int4*)device_bytes(most, 1);
  int4* flush = (int4*)device_bytes(flush_bytes, 2);
  char* src = device_bytes(copy_bytes, 3);
  char* dst = device_bytes(copy_bytes, 0);
  int4* sink = (int4*)device_bytes(64, 0);
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  const int grid = 132 * 4, block = 512;
  auto timed = [&](auto&& before, auto&& what) {
    std::vector<float> t;
    for (int rep = 0; rep < 9; ++rep) {
      read_pass<<<grid, block, 0, s>>>(flush, flush_bytes / 16, sink);  // a clean L2 to start from
      before();
      CK(cudaEventRecord(e0, s));
      what();
      CK(cudaEventRecord(e1, s));
      CK(cudaStreamSynchronize(s));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      t.push_back(ms * 1e3f);
    }
    std::sort(t.begin(), t.end());
    return t[t.size() / 2];
  };
  printf("MiB,read_after_write_us,read_warm_us,read_cold_us,write_after_write_us,write_after_read_us,"
         "copy_after_write_us,copy_after_write_100us_us,copy_after_write_1ms_us,copy_after_read_us\n");
  for (size_t mib : {4, 16, 32, 48}) {
    const size_t n = (mib << 20) / 16;
    auto rd = [&] { read_pass<<<grid, block, 0, s>>>(buf, n, sink); };
    auto wr = [&] { write_pass<<<grid, block, 0, s>>>(buf, n); };
    auto copy = [&] { CK(cudaMemcpyAsync(dst, src, copy_bytes, cudaMemcpyDeviceToDevice, s)); };
    auto nothing = [] {};
    const float raw = timed(wr, rd);
    const float warm = timed([&] { rd(); rd(); }, rd);
    const float cold = timed(nothing, rd);
    const float waw = timed(wr, wr);
    const float war = timed([&] { rd(); rd(); }, wr);
    const float caw = timed(wr, copy);
    const float caw100 = timed([&] { wr(); wait_ns<<<1, 32, 0, s>>>(100'000); }, copy);
    const float caw1ms = timed([&] { wr(); wait_ns<<<1, 32, 0, s>>>(1'000'000); }, copy);
    const float car = timed(rd, copy);
    printf("%zu,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f\n", mib, raw, warm, cold, waw, war, caw, caw100, caw1ms,
           car);
    fflush(stdout);
  }
  return 0;
}
