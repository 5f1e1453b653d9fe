// What a local copy-engine copy gets beside TMA loads made the way cuBLAS's Hopper GEMM
// makes them (issue 41). Point 22: beside bulk TMA loads on every SM (bulk_reader, one CTA
// per SM) the copy keeps 1.2-1.7 TB/s, while beside a running cuBLAS GEMM it moves only
// ~50-230 GB/s (point 20). What the GEMM does that the reader did not: it runs in 2-CTA
// clusters, loads its shared operand with multicast (one L2 read into both CTAs' shared
// memory), and stores its output. This runs the reader in those ways, one at a time:
//   mode none:      one CTA per SM, no cluster (point 22's reader)
//   mode cluster:   2-CTA clusters (cluster launch), each CTA loading its own chunks
//   mode multicast: 2-CTA clusters, each chunk read once and multicast to both CTAs
//                   (each CTA issues half of it with .multicast::cluster)
// each optionally storing every `store_every`-th chunk back to a 1 GiB buffer with a bulk
// store (the epilogue's kind of write), and with CTAs of three shapes: 128 threads, 1024
// threads holding the whole register file, or a GEMM CTA's 384 threads x 168 registers,
// with 4 or 7 stages (128 or 224 KiB of shared memory: a GEMM's 213 KiB fills the SM). Beside it, 100 local copies of 64 MiB queued just
// after the reader on another stream. Per case: the reader's rate (bytes landed in shared
// memory) alone and beside, the copy's rate over the copies that ended while it ran.
// Prints CSV: source,shape (threads x registers),mode,stages,store_every,reader_alone_GBps,reader_GBps,copy_GBps (between the first and
// last copy ending during the reader),copy_window_GBps (copies ended by its end over its run),copies_during
//   nvcc -O3 -arch=sm_90a -std=c++17 -o ce_beside_cluster ce_beside_cluster.cu

#include <cstdio>
#include <string>
#include <vector>

#include "h200_common.cuh"

enum Mode : int { kNone = 0, kCluster = 1, kMulticast = 2 };
static const char* const kModeName[] = {"none", "cluster", "multicast"};

__device__ __forceinline__ unsigned cluster_rank() {
  unsigned r;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r));
  return r;
}

__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned; barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// kThreads threads per CTA; kBurn registers per thread held live all along (the GEMM's
// CTA holds 384 x 168 of the SM's 65,536), so the CTA takes the register file a GEMM's does.
template <int kThreads, int kBurn>
__global__ void __launch_bounds__(kThreads, 1)
    cluster_reader(const char* __restrict__ src, unsigned long long bytes, int chunks, int stages, int mode,
                   char* __restrict__ out, unsigned long long out_bytes, int store_every, unsigned long long* stamps,
                   int* sink) {
  extern __shared__ __align__(128) char smem[];
  float held[kBurn > 0 ? kBurn : 1];
#pragma unroll
  for (int r = 0; r < kBurn; ++r) held[r] = float(threadIdx.x * (r + 1));
  __shared__ __align__(8) unsigned long long bar[8];
  if (threadIdx.x == 0 && blockIdx.x == 0) stamps[0] = gtime();
  const bool clustered = mode != kNone;
  const unsigned rank = clustered ? cluster_rank() : 0;
  if (threadIdx.x == 0) {
    for (int s = 0; s < stages; ++s) asm volatile("mbarrier.init.shared.b64 [%0], 1;" ::"r"(shared_address(&bar[s])));
    asm volatile("fence.mbarrier_init.release.cluster;");
  }
  __syncthreads();
  if (clustered) cluster_sync();  // the peer's barriers exist before any multicast lands
  const unsigned long long nchunks = bytes / kBulkChunk;
  // multicast: both CTAs of a cluster read the cluster's chunk; otherwise each its own
  const unsigned long long reader = mode == kMulticast ? blockIdx.x / 2 : blockIdx.x;
  const unsigned long long readers = mode == kMulticast ? gridDim.x / 2 : gridDim.x;
  auto issue = [&](int i) {
    const int s = i % stages;
    const unsigned long long c = (reader + (unsigned long long)i * readers) % nchunks;
    asm volatile("mbarrier.arrive.expect_tx.shared.b64 _, [%0], %1;" ::"r"(shared_address(&bar[s])), "r"(kBulkChunk));
    if (mode == kMulticast) {
      const unsigned half = kBulkChunk / 2, o = rank * half;
      const unsigned short both = 0x3;
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1], %2, [%3], "
          "%4;" ::"r"(shared_address(smem + s * kBulkChunk + o)),
          "l"(src + c * kBulkChunk + o), "r"(half), "r"(shared_address(&bar[s])), "h"(both)
          : "memory");
    } else {
      asm volatile(
          "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(
              shared_address(smem + s * kBulkChunk)),
          "l"(src + c * kBulkChunk), "r"(kBulkChunk), "r"(shared_address(&bar[s]))
          : "memory");
    }
  };
  if (threadIdx.x == 0)
    for (int i = 0; i < stages && i < chunks; ++i) issue(i);
  int acc = 0;
  const unsigned long long out_chunks = out_bytes / kBulkChunk;
  for (int i = 0; i < chunks; ++i) {
    const int s = i % stages;
    const unsigned phase = (i / stages) & 1;
    wait_stage(&bar[s], phase);
    acc += smem[s * kBulkChunk + (threadIdx.x * 4) % kBulkChunk];
#pragma unroll
    for (int r = 0; r < kBurn; ++r) asm volatile("" : "+f"(held[r]));
    if (store_every > 0 && i % store_every == 0 && threadIdx.x == 0) {
      const unsigned long long oc = ((unsigned long long)blockIdx.x + (unsigned long long)i * gridDim.x) % out_chunks;
      asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
      asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;" ::"l"(out + oc * kBulkChunk),
                   "r"(shared_address(smem + s * kBulkChunk)), "r"(kBulkChunk)
                   : "memory");
      asm volatile("cp.async.bulk.commit_group;" ::: "memory");
      // the stage is refilled below: its bytes must have been read out first
      asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory");
    }
    __syncthreads();
    if (mode == kMulticast) cluster_sync();  // both CTAs done with stage s before either refills it
    if (threadIdx.x == 0 && i + stages < chunks) issue(i + stages);
  }
  if (threadIdx.x == 0) asm volatile("cp.async.bulk.wait_group 0;" ::: "memory");
#pragma unroll
  for (int r = 0; r < kBurn; ++r) acc += int(held[r]);
  if (acc == 0x7fffffff) sink[0] = acc;
  __syncthreads();
  if (clustered) cluster_sync();  // no CTA exits while its peer may still multicast into it
  if (threadIdx.x == 0) atomicMax(stamps + 1, gtime());
}

int main() {
  const int ctas = 132, copies = 100;
  const size_t copy_bytes = size_t(64) << 20;
  cudaStream_t ks, cs;
  CK(cudaStreamCreateWithFlags(&ks, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  // the CTA shapes: 128 threads (point 22's reader), 1024 threads holding 64 registers each
  // (the whole register file, as point 10's spinners), 384 x 168 (a cuBLAS GEMM's CTA,
  // cublas_kernels.csv), and to tell threads from registers 384 and 1024 threads holding
  // none, 128 and 256 threads holding 255 each (half and all of the register file)
  using Kernel = void (*)(const char*, unsigned long long, int, int, int, char*, unsigned long long, int,
                          unsigned long long*, int*);
  struct Shape {
    const char* name;
    Kernel kernel;
    int threads;
  };
  const Shape shapes[] = {{"128x0", cluster_reader<128, 0>, 128},
                          {"1024x64", cluster_reader<1024, 56>, 1024},
                          {"384x168", cluster_reader<384, 156>, 384},
                          // which of the two: threads without registers, registers without threads
                          {"384x0", cluster_reader<384, 0>, 384},
                          {"1024x0", cluster_reader<1024, 0>, 1024},
                          {"128x255", cluster_reader<128, 240>, 128},
                          {"256x255", cluster_reader<256, 240>, 256}};
  for (const Shape& sh : shapes) {
    CK(cudaFuncSetAttribute(sh.kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 7 * kBulkChunk));
    CK(cudaFuncSetAttribute(sh.kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, sh.kernel));
    int fit = 0;
    CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&fit, sh.kernel, sh.threads, 4 * kBulkChunk));
    printf("# shape %s: %d registers per thread, %d CTAs fit per SM with 128 KiB of shared memory\n", sh.name,
           fa.numRegs, fit);
  }
  const size_t out_bytes = size_t(1) << 30;
  char* l2buf = device_bytes(size_t(16) << 20, 1);
  char* dram = device_bytes(size_t(1) << 30, 1);
  char* out = device_bytes(out_bytes, 0);
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
  printf("source,shape,mode,stages,store_every,reader_alone_GBps,reader_GBps,copy_GBps,copy_window_GBps,copies_during\n");
  struct Case {
    const char* source;
    int shape, mode, stages, store_every;
  };
  const Case cases[] = {
      {"l2", 0, kNone, 4, 0},      {"l2", 0, kCluster, 4, 0},   {"l2", 0, kMulticast, 4, 0},
      {"l2", 0, kNone, 4, 4},      {"l2", 0, kNone, 4, 1},      {"l2", 0, kMulticast, 4, 4},
      {"dram", 0, kNone, 4, 0},    {"dram", 0, kMulticast, 4, 0}, {"dram", 0, kMulticast, 4, 4},
      // the SM as full as a GEMM leaves it: threads, registers, then shared memory too
      {"l2", 0, kNone, 7, 0},      {"l2", 1, kNone, 4, 0},      {"l2", 2, kNone, 4, 0},
      {"l2", 2, kNone, 7, 0},      {"l2", 2, kMulticast, 6, 4}, {"l2", 1, kNone, 7, 0},
      {"dram", 2, kNone, 7, 0},    {"dram", 2, kMulticast, 6, 4},
      {"l2", 3, kNone, 4, 0},      {"l2", 4, kNone, 4, 0},      {"l2", 5, kNone, 4, 0},
      {"l2", 6, kNone, 4, 0},      {"dram", 6, kNone, 4, 0},    {"dram", 4, kNone, 4, 0}};
  for (const Case& c : cases) {
    const bool l2 = std::string(c.source) == "l2";
    const char* buf = l2 ? l2buf : dram;
    const unsigned long long bytes = l2 ? (16ull << 20) : (1ull << 30);
    const int chunks = l2 ? 33000 : 18000;  // ~20 ms of reading (point 22's reader)
    cudaLaunchAttribute attr{};
    attr.id = cudaLaunchAttributeClusterDimension;
    attr.val.clusterDim.x = c.mode == kNone ? 1 : 2;
    attr.val.clusterDim.y = 1;
    attr.val.clusterDim.z = 1;
    cudaLaunchConfig_t cfg{};
    cfg.gridDim = dim3(ctas);
    cfg.blockDim = dim3(shapes[c.shape].threads);
    cfg.dynamicSmemBytes = c.stages * kBulkChunk;
    cfg.stream = ks;
    cfg.attrs = &attr;
    cfg.numAttrs = c.mode == kNone ? 0 : 1;
    auto read = [&](bool beside) {
      CK(cudaEventRecord(r0, ks));
      CK(cudaLaunchKernelEx(&cfg, shapes[c.shape].kernel, buf, bytes, chunks, c.stages, c.mode, out,
                            (unsigned long long)out_bytes, c.store_every, stamps, sink));
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
    // over the reader's whole run: the copies that ended before it did, from when they
    // were queued (ce[0], on an idle stream: about the reader's start)
    float window = 0;
    CK(cudaEventElapsedTime(&window, ce[0], r1));
    const double window_gbps = during.first < 0 ? 0.0 : double(during.last) * copy_bytes / (window * 1e-3) / 1e9;
    const double copy_gbps = during.gbps;
    const int first = during.first, last = during.last;
    printf("%s,%s,%s,%d,%d,%.1f,%.1f,%.1f,%.1f,%d\n", c.source, shapes[c.shape].name, kModeName[c.mode], c.stages, c.store_every, alone,
           beside, copy_gbps, window_gbps, last < 0 ? 0 : last - first + 1);
    fflush(stdout);
  }
  return 0;
}
