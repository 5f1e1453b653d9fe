// What a same-GPU copy leaves in the L2 (issue 41). The model's driver copy kernel
// (gpu.local_copy_kernel) streams its source and destination through the L2 like any
// kernel, evicting what was there (a GEMM's output C); on the machine, a GEMM right
// after a stream of 64 MiB copies runs as fast as alone and each copy takes about its
// alone time after a GEMM (ce_lockstep.csv). Does the driver's copy leave other lines in
// the L2 (streaming, evict-first accesses), or evict them as a plain copy kernel does?
// A 16 MiB buffer X is made L2-resident (read twice, or written: dirty), then one of:
// nothing, a reader of 256 MiB of other data, a device-to-device cudaMemcpyAsync of 32 or
// 64 MiB, interfere.py's copy16 kernel copying 64 MiB; then one pass of reads over X is
// timed (all SMs, 16 B L2-only loads). L2-resident X reads in ~3 us, from DRAM ~6.
// Prints CSV: warm_by,disturber,read_us (median of 5),read_GBps
//   nvcc -O3 -arch=sm_90 -std=c++17 -o l2_after_copy l2_after_copy.cu

#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "h200_common.cuh"

int main() {
  const size_t xbytes = size_t(16) << 20, big = size_t(256) << 20, copy_max = size_t(64) << 20;
  const size_t xn = xbytes / 16;
  int4* x = (int4*)device_bytes(xbytes, 1);
  int4* other = (int4*)device_bytes(big, 2);
  char* src = device_bytes(copy_max, 3);
  char* dst = device_bytes(copy_max, 0);
  int4* sink = (int4*)device_bytes(64, 0);
  unsigned long long* stamps;
  CK(cudaMalloc(&stamps, 2 * 132 * 4 * sizeof(unsigned long long)));
  cudaStream_t s;
  CK(cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking));
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  const int grid = 132 * 4, block = 512;
  printf("warm_by,disturber,read_us,read_GBps\n");
  const char* disturbers[] = {"none", "reader_256MiB", "memcpy_d2d_32MiB", "memcpy_d2d_64MiB", "copy16_64MiB"};
  for (const char* warm : {"read", "write"}) {
    for (const char* d : disturbers) {
      std::vector<float> t;
      for (int rep = 0; rep < 5; ++rep) {
        if (std::string(warm) == "read") {
          read_pass<<<grid, block, 0, s>>>(x, xn, sink);
          read_pass<<<grid, block, 0, s>>>(x, xn, sink);
        } else {
          write_pass<<<grid, block, 0, s>>>(x, xn);
        }
        const std::string dd = d;
        if (dd == "reader_256MiB") read_pass<<<grid, block, 0, s>>>(other, big / 16, sink);
        if (dd == "memcpy_d2d_32MiB") CK(cudaMemcpyAsync(dst, src, copy_max / 2, cudaMemcpyDeviceToDevice, s));
        if (dd == "memcpy_d2d_64MiB") CK(cudaMemcpyAsync(dst, src, copy_max, cudaMemcpyDeviceToDevice, s));
        if (dd == "copy16_64MiB") copy16<<<132, 512, 0, s>>>((const int4*)src, (int4*)dst, copy_max / 16, stamps);
        CK(cudaEventRecord(e0, s));
        read_pass<<<grid, block, 0, s>>>(x, xn, sink);
        CK(cudaEventRecord(e1, s));
        CK(cudaStreamSynchronize(s));
        float ms;
        CK(cudaEventElapsedTime(&ms, e0, e1));
        t.push_back(ms * 1e3f);
      }
      std::sort(t.begin(), t.end());
      printf("%s,%s,%.2f,%.1f\n", warm, d, t[2], xbytes / (t[2] * 1e-6) / 1e9);
      fflush(stdout);
    }
  }
  return 0;
}
