// What a same-GPU cudaMemcpyAsync needs of an SM (issue 41). ce_beside_cluster.csv: beside
// TMA loads from CTAs that hold the whole register file (384 x 168 or 256 x 255 or
// 1024 x 64 registers) the local copy stops; beside the same loads from CTAs holding 62 %
// of it (1024 x 40) or half (128 x 255) it keeps 1.35-1.4 TB/s. Point 10's spinners, which
// did not stop it, held 200 KiB of shared memory but few registers. So the copy behaves as
// CTAs that need room on an SM. Here holder CTAs that do nothing but wait (no memory
// traffic) take a chosen part of every SM for 2 ms: registers (256 threads x 128-255
// registers, 120 KiB of shared memory, one per SM), threads (two CTAs per SM of 768-1024
// threads, 100 KiB each) or shared memory (256 threads, 164-227 KiB); then, 50 us after
// they start, one 64 MiB device-to-device copy on another stream. If the copy finds room
// it ends in ~40 us, long before the holders; if not, after them. A last part holds
// every SM but k with CTAs that fill the register file: the copy's rate on k SMs; and the
// same for interfere.py's copy16 kernel of 24 CTAs (rows copy16_free_sms).
// Prints CSV: part,holder,ctas,threads,regs_per_thread,smem_KiB,sms_used,free_regs_per_sm,
//   free_threads_per_sm,free_smem_KiB,copy_us,copy_GBps,copy_end_after_holder_start_us,holder_us
//   nvcc -O3 -arch=sm_90 -std=c++17 -o d2d_footprint d2d_footprint.cu

#include <cstdio>
#include <set>
#include <string>
#include <vector>

#include "h200_common.cuh"

// Waits `ns` on the global timer holding kBurn registers per thread live; its shared memory
// is dynamic (only its size matters). Records each CTA's SM.
template <int kThreads, int kBurn>
__global__ void __launch_bounds__(kThreads, 1) holder(unsigned long long ns, unsigned* sms, int* sink) {
  extern __shared__ char smem[];
  float held[kBurn > 0 ? kBurn : 1];
#pragma unroll
  for (int r = 0; r < kBurn; ++r) held[r] = float(threadIdx.x * (r + 1));
  const unsigned long long t0 = gtime();
  if (threadIdx.x == 0) sms[blockIdx.x] = smid();
  while (gtime() - t0 < ns) {
#pragma unroll
    for (int r = 0; r < kBurn; ++r) asm volatile("" : "+f"(held[r]));
  }
  int acc = 0;
#pragma unroll
  for (int r = 0; r < kBurn; ++r) acc += int(held[r]);
  if (acc == 0x7fffffff) {
    sink[0] = acc;
    smem[0] = 1;
  }
}

using Kernel = void (*)(unsigned long long, unsigned*, int*);

struct Holder {
  const char* name;
  Kernel kernel;
  int threads;
};

int main() {
  const int sms_on_gpu = 132;
  const size_t copy_bytes = size_t(64) << 20;
  const unsigned long long hold_ns = 2'000'000;
  cudaStream_t hs, cs;
  CK(cudaStreamCreateWithFlags(&hs, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&cs, cudaStreamNonBlocking));
  char* src = device_bytes(copy_bytes, 1);
  char* dst = device_bytes(copy_bytes, 0);
  unsigned* sms;
  int* sink;
  unsigned long long* stamps;
  CK(cudaMalloc(&stamps, 2 * 64 * sizeof(unsigned long long)));
  CK(cudaMalloc(&sms, 4096 * sizeof(unsigned)));
  CK(cudaMalloc(&sink, 4));
  cudaEvent_t h0, h1, c0, c1;
  for (cudaEvent_t* e : {&h0, &h1, &c0, &c1}) CK(cudaEventCreate(e));

  const Holder holders[] = {
      {"256x255", holder<256, 240>, 256}, {"256x248", holder<256, 232>, 256}, {"256x240", holder<256, 224>, 256},
      {"256x224", holder<256, 208>, 256}, {"256x192", holder<256, 176>, 256}, {"256x128", holder<256, 112>, 256},
      {"1024x0", holder<1024, 0>, 1024},  {"960x0", holder<960, 0>, 960},     {"896x0", holder<896, 0>, 896},
      {"768x0", holder<768, 0>, 768},     {"256x0", holder<256, 0>, 256},
  };
  int regs[std::size(holders)];
  for (size_t i = 0; i < std::size(holders); ++i) {
    CK(cudaFuncSetAttribute(holders[i].kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, 227 * 1024));
    cudaFuncAttributes fa;
    CK(cudaFuncGetAttributes(&fa, holders[i].kernel));
    regs[i] = fa.numRegs;
  }
  int smem_per_sm = 0;
  CK(cudaDeviceGetAttribute(&smem_per_sm, cudaDevAttrMaxSharedMemoryPerMultiprocessor, 0));

  // the copy alone, for its time
  float alone_ms = 1e9;
  for (int r = 0; r < 5; ++r) {
    CK(cudaEventRecord(c0, cs));
    CK(cudaMemcpyAsync(dst, src, copy_bytes, cudaMemcpyDeviceToDevice, cs));
    CK(cudaEventRecord(c1, cs));
    CK(cudaStreamSynchronize(cs));
    float ms;
    CK(cudaEventElapsedTime(&ms, c0, c1));
    alone_ms = std::min(alone_ms, ms);
  }
  printf("# copy alone (best of 5): %.1f us, %.1f GB/s; %d B of shared memory per SM\n", alone_ms * 1e3,
         copy_bytes / (alone_ms * 1e-3) / 1e9, smem_per_sm);
  printf(
      "part,holder,ctas,threads,regs_per_thread,smem_KiB,sms_used,free_regs_per_sm,free_threads_per_sm,free_smem_KiB,"
      "copy_us,copy_GBps,copy_end_after_holder_start_us,holder_us\n");

  // copy16_ctas > 0: interfere.py's copy kernel (copy16, that many CTAs of 512 threads)
  // copies instead of cudaMemcpyAsync
  auto run = [&](const char* part, int h, int ctas, int smem_kib, int ctas_per_sm, int copy16_ctas = 0) {
    const Holder& hd = holders[h];
    CK(cudaMemset(sms, 0xff, 4096 * sizeof(unsigned)));
    CK(cudaDeviceSynchronize());
    CK(cudaEventRecord(h0, hs));
    hd.kernel<<<ctas, hd.threads, size_t(smem_kib) * 1024, hs>>>(hold_ns, sms, sink);
    CK(cudaGetLastError());
    CK(cudaEventRecord(h1, hs));
    // 50 us after the holders start: the copy
    const auto t = std::chrono::steady_clock::now();
    while (std::chrono::steady_clock::now() - t < std::chrono::microseconds(50)) {
    }
    CK(cudaEventRecord(c0, cs));
    if (copy16_ctas > 0) {
      copy16<<<copy16_ctas, 512, 0, cs>>>((const int4*)src, (int4*)dst, copy_bytes / 16, stamps);
    } else {
      CK(cudaMemcpyAsync(dst, src, copy_bytes, cudaMemcpyDeviceToDevice, cs));
    }
    CK(cudaEventRecord(c1, cs));
    CK(cudaDeviceSynchronize());
    float copy_ms, end_ms, hold_ms;
    CK(cudaEventElapsedTime(&copy_ms, c0, c1));
    CK(cudaEventElapsedTime(&end_ms, h0, c1));
    CK(cudaEventElapsedTime(&hold_ms, h0, h1));
    std::vector<unsigned> placed(ctas);
    CK(cudaMemcpy(placed.data(), sms, ctas * sizeof(unsigned), cudaMemcpyDeviceToHost));
    const std::set<unsigned> used(placed.begin(), placed.end());
    const int regs_used = ctas_per_sm * hd.threads * regs[h];
    printf("%s,%s,%d,%d,%d,%d,%zu,%d,%d,%d,%.1f,%.1f,%.1f,%.1f\n", part, hd.name, ctas, hd.threads, regs[h], smem_kib,
           used.size(), 65536 - regs_used, 2048 - ctas_per_sm * hd.threads,
           smem_per_sm / 1024 - ctas_per_sm * (smem_kib + 1), copy_ms * 1e3,
           copy_bytes / (copy_ms * 1e-3) / 1e9, end_ms * 1e3, hold_ms * 1e3);
    fflush(stdout);
  };
  // registers: 256 threads, 120 KiB (one CTA per SM), 128-255 registers
  for (int h = 0; h <= 5; ++h) run("registers", h, sms_on_gpu, 120, 1);
  // threads: two CTAs per SM (100 KiB each), 768-1024 threads with few registers
  for (int h = 6; h <= 9; ++h) run("threads", h, 2 * sms_on_gpu, 100, 2);
  // shared memory: 256 threads, few registers, one CTA of 164-227 KiB per SM
  for (int kib : {227, 224, 220, 212, 196, 164}) run("shared_memory", 10, sms_on_gpu, kib, 1);
  // every SM but k held (the whole register file): the copy's rate on k SMs
  for (int k : {1, 2, 4, 8, 16, 33, 66}) run("free_sms", 0, sms_on_gpu - k, 120, 1);
  // the same for interfere.py's 24-CTA copy kernel (the sm_local rows' copy), which beside
  // a GEMM runs on the 6-8 SMs the GEMM's last tiles free (sm_ports.csv)
  for (int k : {1, 2, 6, 8, 24, 66}) run("copy16_free_sms", 0, sms_on_gpu - k, 120, 1, 24);
  return 0;
}
