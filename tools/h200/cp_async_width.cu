// How fast an SM fills its shared memory with cp.async by access width (issue 42 item 4:
// cuBLAS's align2 fallback, CUTLASS's Ampere kernel with 4-byte cp.async, runs 2.8-3.0x
// slower than the TMA kernel beside it at 135 W: what bounds it).
//
// Each CTA (256 threads, 8 warps, as the align2 kernel) copies tiles of 48 KiB (a
// 256 x 64 + 128 x 64 fp16 K step) from an L2-resident buffer into 3 shared-memory
// stages with cp.async of 4, 8 or 16 bytes per thread, waiting for the oldest stage
// before reusing it (cp.async.wait_group 1), as a 3-stage mainloop does without the
// math. One CTA per SM (147 KiB of shared memory, as the kernel), on 1 SM or on all.
// Prints bytes per SM cycle and GB/s per SM.
#include "h200_common.cuh"

constexpr int kThreads = 256;
constexpr int kStageBytes = 48 * 1024;
constexpr int kStages = 3;

template <int W>
__global__ void __launch_bounds__(kThreads) fill(const char* src, size_t src_bytes, int steps,
                                                 unsigned long long* cycles) {
  extern __shared__ __align__(16) char smem[];
  const long long t0 = clock64();
  size_t base = (size_t(blockIdx.x) * kStageBytes * 7) % src_bytes;
  for (int step = 0; step < steps; ++step) {
    char* stage = smem + (step % kStages) * kStageBytes;
    const char* g = src + (base + size_t(step) * kStageBytes) % (src_bytes - kStageBytes);
    for (int off = threadIdx.x * W; off < kStageBytes; off += kThreads * W) cp_async_bytes<W>(static_cast<unsigned>(__cvta_generic_to_shared(stage + off)), g + off);
    asm volatile("cp.async.commit_group;");
    asm volatile("cp.async.wait_group 1;");
    __syncthreads();
  }
  asm volatile("cp.async.wait_group 0;");
  __syncthreads();
  if (threadIdx.x == 0) cycles[blockIdx.x] = clock64() - t0;
}

template <int W>
void run(const char* src, size_t src_bytes, int ctas, unsigned long long* cycles, int sms) {
  const int steps = 2000;
  const int smem = kStages * kStageBytes;
  CK(cudaFuncSetAttribute(fill<W>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const CycleTiming t = time_in_cycles(
      [&](int n) { fill<W><<<ctas, kThreads, smem>>>(src, src_bytes, n, cycles); }, 50, steps, cycles, ctas);
  const double bytes = double(steps) * kStageBytes;
  printf("%d,%d,%d,%.2f,%.1f,%.0f,%.1f\n", W, ctas, std::min(ctas, sms), bytes / t.mean_cycles,
         bytes / (t.ms * 1e-3) / 1e9, t.mean_cycles / steps, bytes * ctas / (t.ms * 1e-3) / 1e9);
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t src_bytes = 8u << 20;  // L2-resident
  const char* src = device_bytes(src_bytes, 1);
  auto* cycles = reinterpret_cast<unsigned long long*>(device_bytes(1024 * sizeof(unsigned long long), 0));
  printf("width_B,ctas,sms,bytes_per_sm_cycle,GBps_per_cta,cycles_per_48KiB_step,GBps_all\n");
  for (int rep = 0; rep < 2; ++rep) {
    for (int ctas : {1, sms}) {
      run<4>(src, src_bytes, ctas, cycles, sms);
      run<8>(src, src_bytes, ctas, cycles, sms);
      run<16>(src, src_bytes, ctas, cycles, sms);
    }
  }
  return 0;
}
