// Does Hopper's cluster co-scheduling make an SM held by another kernel cost a 2-CTA-
// cluster kernel more than that SM (issue 41)? cuBLAS's H200 GEMMs are persistent grids
// of 2-CTA clusters, one CTA per SM (cublas_kernels.csv); a cluster's CTAs are placed
// together on one GPC (CUDA C++ Programming Guide, "Thread Block Clusters"), so a GPC
// left with an odd number of free SMs would leave one idle.
//
// 1. The GPCs: clusters of 16 CTAs (non-portable size), one CTA per SM (200 KiB of shared
//    memory), 8 of them at once: each cluster's SMs share a GPC ("gpc" rows: the
//    cluster, then its SM ids). Then cudaOccupancyMaxActiveClusters for sizes 1-16.
// 2. Held SMs: k = 0-24 spinner CTAs (one per SM, 3 ms) launched first, then a probe of
//    132 CTAs, one per SM, in clusters of `c` = 1 or 2, each spinning 400 us: how many
//    probe CTAs start at once ("held" rows: k, c, the spinners' SMs, the probe CTAs in
//    its first wave, its idle SMs).
// 1b. The CTA scheduler's order for a plain grid: CTA i's SM ("order" rows).
//   nvcc -O3 -arch=sm_90 -o cluster_gpc cluster_gpc.cu && ./cluster_gpc

#include "h200_common.cuh"

#include <set>
#include <string>

__global__ void hold(unsigned long long ns, unsigned* sm, unsigned long long* start) {
  extern __shared__ char smem[];
  const unsigned long long t0 = gtime();
  if (threadIdx.x == 0) {
    sm[blockIdx.x] = smid();
    start[blockIdx.x] = t0;
  }
  unsigned long long t;
  do t = gtime();
  while (t - t0 < ns);
  if (t == 0) smem[threadIdx.x] = 1;
}

constexpr int kSmem = 200 * 1024;

// A launch of `ctas` CTAs of `hold` (128 threads, kSmem) in clusters of `cluster`.
struct ClusterLaunch {
  cudaLaunchConfig_t cfg = {};
  cudaLaunchAttribute attr[1];
  ClusterLaunch(int ctas, int cluster, cudaStream_t s) {
    cfg.gridDim = dim3(ctas);
    cfg.blockDim = dim3(128);
    cfg.dynamicSmemBytes = kSmem;
    cfg.stream = s;
    attr[0].id = cudaLaunchAttributeClusterDimension;
    attr[0].val.clusterDim.x = cluster;
    attr[0].val.clusterDim.y = 1;
    attr[0].val.clusterDim.z = 1;
    cfg.attrs = attr;
    cfg.numAttrs = 1;
  }
  ClusterLaunch(const ClusterLaunch&) = delete;
};

void launch(int ctas, int cluster, unsigned long long ns, unsigned* sm, unsigned long long* start, cudaStream_t s) {
  const ClusterLaunch l(ctas, cluster, s);
  CK(cudaLaunchKernelEx(&l.cfg, hold, ns, sm, start));
}

int main() {
  CK(cudaFuncSetAttribute(hold, cudaFuncAttributeMaxDynamicSharedMemorySize, kSmem));
  CK(cudaFuncSetAttribute(hold, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  unsigned *sm, *sm2;
  unsigned long long *st, *st2;
  CK(cudaMallocManaged(&sm, 4096 * sizeof(unsigned)));
  CK(cudaMallocManaged(&sm2, 4096 * sizeof(unsigned)));
  CK(cudaMallocManaged(&st, 4096 * sizeof(unsigned long long)));
  CK(cudaMallocManaged(&st2, 4096 * sizeof(unsigned long long)));
  cudaStream_t s1, s2;
  CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  printf("section,a,b,c,d,e\n");
  printf("sms,%d,,,,\n", sms);

  // 1. GPCs: clusters of 16, as many at once as fit (repeated, the union names each SM's GPC).
  for (int rep = 0; rep < 3; ++rep) {
    launch(8 * 16, 16, 2000000ull, sm, st, s1);
    CK(cudaStreamSynchronize(s1));
    CK(cudaGetLastError());
    unsigned long long first = ~0ull;
    for (int i = 0; i < 128; ++i) first = std::min(first, st[i]);
    for (int c = 0; c < 8; ++c) {
      std::string ids;
      bool wave = true;
      for (int i = c * 16; i < c * 16 + 16; ++i) {
        ids += (ids.empty() ? "" : ";") + std::to_string(sm[i]);
        if (st[i] - first > 1000000ull) wave = false;
      }
      printf("gpc,%d,%d,%s,%s,\n", rep, c, ids.c_str(), wave ? "first_wave" : "later");
    }
  }
  for (int size : {1, 2, 4, 8, 16}) {
    const ClusterLaunch l(size * 64, size, nullptr);
    int clusters = 0;
    CK(cudaOccupancyMaxActiveClusters(&clusters, hold, &l.cfg));
    printf("max_active_clusters,%d,%d,,,\n", size, clusters);
  }

  // 1b. The order the CTA scheduler places a plain grid in: CTA i's SM, for grids of 132
  //     CTAs of one per SM (repeated) ("order" rows: repetition, then the SMs of CTAs 0, 1, ...).
  for (int rep = 0; rep < 3; ++rep) {
    launch(sms, 1, 1000000ull, sm, st, s1);
    CK(cudaStreamSynchronize(s1));
    std::string ids;
    for (int i = 0; i < sms; ++i) ids += (i ? ";" : "") + std::to_string(sm[i]);
    printf("order,%d,%s,,,\n", rep, ids.c_str());
  }

  // 2. Held SMs, then a probe of one CTA per SM in clusters of 1 or 2.
  for (int cluster : {1, 2}) {
    for (int k : {0, 1, 2, 3, 6, 8, 12, 16, 24, 36, 48}) {
      for (int rep = 0; rep < 2; ++rep) {
        if (k > 0) launch(k, 1, 3000000ull, sm2, st2, s1);
        launch(sms, cluster, 400000ull, sm, st, s2);
        CK(cudaDeviceSynchronize());
        CK(cudaGetLastError());
        unsigned long long first = ~0ull;
        for (int i = 0; i < sms; ++i) first = std::min(first, st[i]);
        std::set<unsigned> busy;
        int wave = 0;
        for (int i = 0; i < sms; ++i)
          if (st[i] - first < 200000ull) {
            ++wave;
            busy.insert(sm[i]);
          }
        std::string held, idle;
        for (int i = 0; i < k; ++i) {
          held += (held.empty() ? "" : ";") + std::to_string(sm2[i]);
          busy.insert(sm2[i]);
        }
        for (int s = 0; s < sms; ++s)
          if (!busy.count(s)) idle += (idle.empty() ? "" : ";") + std::to_string(s);
        printf("held,%d,%d,%d,%s,%s\n", k, cluster, wave, held.c_str(), idle.c_str());
        fflush(stdout);
      }
    }
  }
  return 0;
}
