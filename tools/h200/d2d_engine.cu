// Who runs a same-GPU device-to-device cudaMemcpyAsync on the H200: a copy engine or
// the SMs? (issue 41: interference_2gpu.csv's ce_local rows, 64 MiB chunks, lose
// 47-87 % of their 1.8 TB/s beside a GEMM, more beside the long-K GEMMs, the order
// the SM copy kernel's rows follow.)
//
// 1. The copy alone, 64 MiB, 20 times: GB/s, and every kernel CUPTI saw meanwhile (a
//    driver copy kernel would show with its name and grid).
// 2. The same copy while spinner CTAs hold every SM (1 per SM: 1024 threads x 64
//    registers and 200 KiB of shared memory) for 3 ms: if the copy ends before the
//    spinners, no SM ran it.
// 3. The copy beside a spinner holding k = 132 - free SMs: its time against free SMs.
// 4. The copy beside readers on every SM (4 CTAs x 512 threads, 8 16-byte L2-only loads
//    in flight per thread) of an L2-resident (16 MiB) or DRAM-sized (1 GiB) buffer, or
//    writers of the same: which shared resource the copy engine loses.
#include "cupti_kernels.cuh"
#include "h200_common.cuh"

#include <chrono>
#include <thread>

__global__ void __launch_bounds__(1024) spin(unsigned long long ns, unsigned long long* starts) {
  extern __shared__ char smem[];
  const unsigned long long t0 = gtime();
  if (threadIdx.x == 0) {
    smem[0] = 1;
    starts[blockIdx.x] = t0;
  }
  while (gtime() - t0 < ns) {
  }
}

// Tensor-core work without memory traffic for `ns` (copy_contention.cu's mma_burn, timed).
__global__ void __launch_bounds__(512) mma_burn(unsigned long long ns, float* sink) {
  const unsigned long long t0 = gtime();
  unsigned a0 = threadIdx.x * 2654435761u, a1 = a0 * 3, a2 = a0 * 5, a3 = a0 * 7, b0 = a0 * 11, b1 = a0 * 13;
  float d[8][4] = {};
  while (gtime() - t0 < ns) {
    for (int it = 0; it < 64; ++it) {
#pragma unroll
      for (int k = 0; k < 8; ++k)
        mma_m16n8k16(d[k], a0, a1, a2, a3, b0, b1);
    }
  }
  float s = 0;
  for (int k = 0; k < 8; ++k) s += d[k][0] + d[k][1] + d[k][2] + d[k][3];
  if (s == 1234.5f) sink[0] = s;
}

int main() {
  const size_t bytes = 64ull << 20;
  void *src, *dst;
  CK(cudaMalloc(&src, bytes));
  CK(cudaMalloc(&dst, bytes));
  CK(cudaMemset(src, 1, bytes));
  unsigned long long* starts;
  CK(cudaMalloc(&starts, 1024 * sizeof(unsigned long long)));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  const int smem = 200 << 10;
  CK(cudaFuncSetAttribute(spin, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  cudaStream_t s1, s2;
  CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s2, cudaStreamNonBlocking));
  cudaEvent_t a, b, c, d;
  CK(cudaEventCreate(&a));
  CK(cudaEventCreate(&b));
  CK(cudaEventCreate(&c));
  CK(cudaEventCreate(&d));
  const bool cupti = start_kernel_activity();
  printf("part,what,free_sms,copy_us,copy_GBps,spin_us,extra\n");
  // 1. alone
  for (int i = 0; i < 3; ++i) CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s2));
  CK(cudaStreamSynchronize(s2));
  (void)take_kernel_records();
  for (int i = 0; i < 20; ++i) {
    CK(cudaEventRecord(a, s2));
    CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s2));
    CK(cudaEventRecord(b, s2));
    CK(cudaEventSynchronize(b));
    float ms;
    CK(cudaEventElapsedTime(&ms, a, b));
    printf("alone,d2d_64MiB,%d,%.1f,%.1f,,\n", sms, ms * 1e3, bytes / (ms * 1e-3) / 1e9);
  }
  if (cupti) {
    const auto recs = take_kernel_records();
    printf("alone,kernels_seen_by_cupti,,,,,%zu", recs.size());
    for (size_t i = 0; i < recs.size() && i < 3; ++i)
      printf(" [%s grid %dx%dx%d block %d regs %d %.1f us]", recs[i].name.c_str(), recs[i].grid[0], recs[i].grid[1],
             recs[i].grid[2], recs[i].block[0], recs[i].regs, recs[i].ns() / 1e3);
    printf("\n");
  } else {
    printf("alone,kernels_seen_by_cupti,,,,,cupti unavailable\n");
  }
  // 2./3. beside spinners on sms - free SMs
  const int frees[] = {0, 0, 0, 2, 8, 24, 66};
  for (int free : frees) {
    const int held = sms - free;
    CK(cudaEventRecord(c, s1));
    spin<<<held, 1024, smem, s1>>>(3'000'000ull, starts);
    CK(cudaEventRecord(d, s1));
    std::this_thread::sleep_for(std::chrono::microseconds(300));  // the spinners are resident
    CK(cudaEventRecord(a, s2));
    CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s2));
    CK(cudaEventRecord(b, s2));
    CK(cudaDeviceSynchronize());
    float copy_ms, spin_ms, copy_end_after_spin_start;
    CK(cudaEventElapsedTime(&copy_ms, a, b));
    CK(cudaEventElapsedTime(&spin_ms, c, d));
    CK(cudaEventElapsedTime(&copy_end_after_spin_start, c, b));
    printf("beside_spinners,d2d_64MiB,%d,%.1f,%.1f,%.1f,copy ended %.1f us after the spinners' launch (%s)\n", free,
           copy_ms * 1e3, bytes / (copy_ms * 1e-3) / 1e9, spin_ms * 1e3, copy_end_after_spin_start * 1e3,
           copy_end_after_spin_start < spin_ms ? "before they ended" : "after they ended");
  }
  // 4.
  int4* big;
  const size_t big_bytes = 1ull << 30;
  CK(cudaMalloc(&big, big_bytes));
  CK(cudaMemset(big, 0, big_bytes));
  struct Traffic {
    const char* what;
    int kind;  // 0 read, 1 write, 2 mma
    size_t buf_bytes;
    int unroll, ctas_per_sm;
  };
  const Traffic kinds[] = {
      {"l2_readers_16MiB_u8_4cta", 0, 16ull << 20, 8, 4}, {"l2_readers_16MiB_u1_4cta", 0, 16ull << 20, 1, 4},
      {"l2_readers_16MiB_u1_1cta", 0, 16ull << 20, 1, 1}, {"l2_readers_16MiB_u2_1cta", 0, 16ull << 20, 2, 1},
      {"dram_readers_1GiB_u8_4cta", 0, big_bytes, 8, 4},  {"dram_readers_1GiB_u1_1cta", 0, big_bytes, 1, 1},
      {"l2_writers_16MiB_4cta", 1, 16ull << 20, 8, 4},    {"l2_writers_16MiB_1cta", 1, 16ull << 20, 8, 1},
      {"mma_random_4cta", 2, 0, 0, 4},
      // fewer warps per SM against CTAs left waiting for room (grid beyond one wave)
      {"mma_1cta", 2, 0, 0, 1},             {"mma_2cta", 2, 0, 0, 2},
      {"l2_readers_16MiB_u1_2cta", 0, 16ull << 20, 1, 2}, {"l2_readers_16MiB_u1_3cta", 0, 16ull << 20, 1, 3},
      {"l2_readers_16MiB_u1_8cta", 0, 16ull << 20, 1, 8},
  };
  {
    const void* fns[] = {(const void*)traffic_reader<1>, (const void*)traffic_reader<2>, (const void*)traffic_reader<8>, (const void*)traffic_writer,
                         (const void*)mma_burn};
    const char* names[] = {"reader_u1", "reader_u2", "reader_u8", "writer", "mma_burn"};
    for (int i = 0; i < 5; ++i) {
      cudaFuncAttributes fa;
      CK(cudaFuncGetAttributes(&fa, fns[i]));
      int per_sm = 0;
      CK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, fns[i], 512, 0));
      printf("resources,%s,,,,,%d registers; %d CTAs of 512 threads fit per SM\n", names[i], fa.numRegs, per_sm);
    }
  }
  for (const Traffic& t : kinds) {
    const size_t n = t.buf_bytes / sizeof(int4);
    for (int with_copy = 0; with_copy < 2; ++with_copy) {
      CK(cudaMemset(starts, 0, sizeof(unsigned long long)));
      CK(cudaEventRecord(c, s1));
      const int grid = sms * t.ctas_per_sm;
      if (t.kind == 1)
        traffic_writer<<<grid, 512, 0, s1>>>(big, n, 20'000'000ull, starts);
      else if (t.kind == 2)
        mma_burn<<<grid, 512, 0, s1>>>(20'000'000ull, (float*)(big));
      else if (t.unroll == 8)
        traffic_reader<8><<<grid, 512, 0, s1>>>(big, n, 20'000'000ull, big + n, starts);
      else if (t.unroll == 2)
        traffic_reader<2><<<grid, 512, 0, s1>>>(big, n, 20'000'000ull, big + n, starts);
      else
        traffic_reader<1><<<grid, 512, 0, s1>>>(big, n, 20'000'000ull, big + n, starts);
      CK(cudaEventRecord(d, s1));
      float copy_ms = 0, copy_end = 0;
      const int copies = 100;
      if (with_copy) {
        std::this_thread::sleep_for(std::chrono::microseconds(200));
        CK(cudaEventRecord(a, s2));
        for (int i = 0; i < copies; ++i) CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s2));
        CK(cudaEventRecord(b, s2));
      }
      CK(cudaDeviceSynchronize());
      float spin_ms;
      CK(cudaEventElapsedTime(&spin_ms, c, d));
      unsigned long long moved = 0;
      CK(cudaMemcpy(&moved, starts, sizeof(moved), cudaMemcpyDeviceToHost));
      const double traffic_GBps = moved / (spin_ms * 1e-3) / 1e9;
      if (with_copy) {
        CK(cudaEventElapsedTime(&copy_ms, a, b));
        CK(cudaEventElapsedTime(&copy_end, c, b));
        // the copies' bytes moved while the traffic ran: all of them if they ended
        // within it; otherwise what the time after it (at the alone rate) leaves
        printf("beside_traffic,%s,0,%.1f,%.1f,%.1f,traffic %.0f GB/s; %d copies ended %.1f us after its launch (%s)\n",
               t.what, copy_ms * 1e3, copies * bytes / (copy_ms * 1e-3) / 1e9, spin_ms * 1e3, traffic_GBps, copies,
               copy_end * 1e3, copy_end < spin_ms ? "all during it" : "some after it");
      } else {
        printf("traffic_alone,%s,0,,,%.1f,traffic %.0f GB/s\n", t.what, spin_ms * 1e3, traffic_GBps);
      }
    }
  }
  // 5. Tensor work whose CTAs all fit (2 per SM), as one 20 ms kernel or as 4 of 5 ms
  //    launched back to back (the next one queued behind the running one), against a
  //    grid of 3 per SM where 2 fit (a third of the CTAs wait for room) and 1,024-thread
  //    spinners with 2 waves of CTAs.
  struct Launches {
    const char* what;
    int ctas_per_sm, launches;
    unsigned long long ns;
  };
  const Launches runs[] = {{"mma_2cta_one_kernel", 2, 1, 20'000'000ull},
                           {"mma_2cta_4_kernels_back_to_back", 2, 4, 5'000'000ull},
                           {"mma_2cta_40_kernels_back_to_back", 2, 40, 500'000ull},
                           {"mma_3cta_one_kernel", 3, 1, 10'000'000ull}};
  for (const Launches& r : runs) {
    CK(cudaEventRecord(c, s1));
    for (int l = 0; l < r.launches; ++l) mma_burn<<<sms * r.ctas_per_sm, 512, 0, s1>>>(r.ns, (float*)(big));
    CK(cudaEventRecord(d, s1));
    std::this_thread::sleep_for(std::chrono::microseconds(200));
    CK(cudaEventRecord(a, s2));
    const int copies = 100;
    for (int i = 0; i < copies; ++i) CK(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, s2));
    CK(cudaEventRecord(b, s2));
    CK(cudaDeviceSynchronize());
    float copy_ms, spin_ms, copy_end;
    CK(cudaEventElapsedTime(&copy_ms, a, b));
    CK(cudaEventElapsedTime(&spin_ms, c, d));
    CK(cudaEventElapsedTime(&copy_end, c, b));
    printf("beside_launches,%s,0,%.1f,%.1f,%.1f,%d copies ended %.1f us after the first launch (%s)\n", r.what,
           copy_ms * 1e3, copies * bytes / (copy_ms * 1e-3) / 1e9, spin_ms * 1e3, copies, copy_end * 1e3,
           copy_end < spin_ms ? "all during the kernels" : "some after them");
  }
  if (cupti) {
    const auto recs = take_kernel_records();
    int other = 0;
    for (const auto& r : recs) other += r.name.find("spin") == std::string::npos;
    printf("beside_spinners,kernels_seen_by_cupti,,,,,%zu (%d not the spinner)\n", recs.size(), other);
  }
  return 0;
}
