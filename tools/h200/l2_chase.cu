// The H200's L2 hit latency, warm (issue 41/42). copy_paths.cu's "L2" chase (238 ns a hop
// alone) timed a 1 MiB chain from cold: its first pass (8,192 of its 20,000 hops) missed
// to DRAM. Here one thread chases a random cyclic chain of 128 B lines (`__ldcg`: the L2,
// not the L1) over footprints from 256 KiB to 256 MiB, after a warm pass over the whole
// chain: ns and SM cycles per hop, the SM clock they imply. Footprints up to ~56 MiB are
// L2 hits (l2_replacement.csv), 256 MiB DRAM.
// Prints CSV: footprint_mib,hops,ns_per_hop,cycles_per_hop,sm_mhz
//   nvcc -O3 -arch=sm_90 -std=c++17 -o l2_chase l2_chase.cu

#include <cstdio>

#include "h200_common.cuh"

__global__ void chase(const unsigned* __restrict__ next, unsigned long long hops, unsigned long long* out) {
  unsigned j = 0;
  const unsigned long long t0 = gtime();
  const long long c0 = clock64();
  for (unsigned long long h = 0; h < hops; ++h) j = __ldcg(next + j);
  out[1] = clock64() - c0;
  out[0] = gtime() - t0;
  out[2] = j;
}

int main() {
  unsigned long long* out;
  CK(cudaMalloc(&out, 3 * 8));
  printf("footprint_mib,hops,ns_per_hop,cycles_per_hop,sm_mhz\n");
  for (size_t mib : {size_t(0), size_t(1), size_t(4), size_t(16), size_t(32), size_t(48), size_t(256)}) {
    const size_t bytes = mib == 0 ? size_t(256) << 10 : mib << 20;
    unsigned* chain = make_chain(bytes);
    const unsigned long long lines = bytes / 128;
    const unsigned long long hops = std::max<unsigned long long>(lines, 20000);
    chase<<<1, 1>>>(chain, lines, out);  // warm: every line once
    CK(cudaDeviceSynchronize());
    for (int rep = 0; rep < 2; ++rep) {
      chase<<<1, 1>>>(chain, hops, out);
      CK(cudaDeviceSynchronize());
      unsigned long long o[3];
      CK(cudaMemcpy(o, out, sizeof o, cudaMemcpyDeviceToHost));
      printf("%.2f,%llu,%.1f,%.1f,%.0f\n", double(bytes) / (1 << 20), hops, double(o[0]) / hops, double(o[1]) / hops,
             1e3 * double(o[1]) / double(o[0]));
      fflush(stdout);
    }
    CK(cudaFree(chain));
  }
  return 0;
}
