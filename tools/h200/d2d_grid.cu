// How many CTAs the driver's same-GPU copy runs, and whether a kernel launched behind it
// gets SMs before all of them are placed (issue 41; d2d_footprint.csv: the copy runs on
// the SMs as CTAs of at most 512 threads, needing 2-4 K registers each, no shared memory).
// A device-to-device cudaMemcpyAsync of S bytes, then at once, on another stream, a probe
// kernel of 528 CTAs x 512 threads (few registers, no shared memory: four fit per SM, as
// four of the copy's do), each recording when it started (global timer) and spinning
// 5 us. The probe CTAs that start before the copy ends show the room the copy left; if
// none starts before, the copy's CTAs were still being placed (the dispatcher places a
// later kernel's CTAs only after all of an earlier one's: the "left-over" policy, Pai et
// al., ASPLOS'13). Prints CSV: bytes_MiB,copy_us,copy_GBps,probe_ctas,probes_started_before_copy_end,
//   first_probe_start_us,median_probe_start_us (from the copy's start event)
//   nvcc -O3 -arch=sm_90 -std=c++17 -o d2d_grid d2d_grid.cu

#include <algorithm>
#include <cstdio>
#include <vector>

#include "h200_common.cuh"

__global__ void __launch_bounds__(512) probe(unsigned long long* starts, unsigned long long ns) {
  const unsigned long long t0 = gtime();
  if (threadIdx.x == 0) starts[blockIdx.x] = t0;
  while (gtime() - t0 < ns) {
  }
}

__global__ void stamp(unsigned long long* at) { *at = gtime(); }

int main() {
  const int probes = 528;
  const size_t most = size_t(256) << 20;
  cudaStream_t cs, ps;
  CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&ps, cudaStreamNonBlocking));
  char* src = device_bytes(most, 1);
  char* dst = device_bytes(most, 0);
  unsigned long long *starts, *marks;
  CK(cudaMalloc(&starts, probes * sizeof(unsigned long long)));
  CK(cudaMalloc(&marks, 2 * sizeof(unsigned long long)));
  cudaEvent_t c0, c1;
  CK(cudaEventCreate(&c0));
  CK(cudaEventCreate(&c1));
  printf("bytes_MiB,copy_us,copy_GBps,probe_ctas,probes_started_before_copy_end,first_probe_start_us,"
         "median_probe_start_us\n");
  for (size_t mib : {1, 4, 16, 64, 256}) {
    const size_t bytes = mib << 20;
    for (int rep = 0; rep < 3; ++rep) {
      CK(cudaDeviceSynchronize());
      // the copy framed by two one-thread kernels on its stream: global-timer stamps
      stamp<<<1, 1, 0, cs>>>(marks);
      CK(cudaEventRecord(c0, cs));
      CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, cs));
      CK(cudaEventRecord(c1, cs));
      stamp<<<1, 1, 0, cs>>>(marks + 1);
      probe<<<probes, 512, 0, ps>>>(starts, 5000);
      CK(cudaDeviceSynchronize());
      float ms;
      CK(cudaEventElapsedTime(&ms, c0, c1));
      std::vector<unsigned long long> s(probes), m(2);
      CK(cudaMemcpy(s.data(), starts, probes * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
      CK(cudaMemcpy(m.data(), marks, 2 * sizeof(unsigned long long), cudaMemcpyDeviceToHost));
      // the copy's span on the global timer: after the first stamp, before the second
      const unsigned long long begin = m[0], end = m[1];
      int before = 0;
      for (unsigned long long t : s) before += t < end ? 1 : 0;
      std::sort(s.begin(), s.end());
      printf("%zu,%.1f,%.1f,%d,%d,%.1f,%.1f\n", mib, ms * 1e3, bytes / (ms * 1e-3) / 1e9, probes, before,
             (double(s.front()) - double(begin)) * 1e-3, (double(s[probes / 2]) - double(begin)) * 1e-3);
      fflush(stdout);
    }
  }
  return 0;
}
