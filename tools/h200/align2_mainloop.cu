// The mainloop of CUTLASS's Ampere GEMM kernel that cuBLAS falls back to on the H200 for
// K not a multiple of 8 (cutlass_80_tensorop_f16_s16816gemm_f16_256x128_64x3_tn_align2,
// issue 42 item 4), taken apart: per K step of 64, a 256 x 128 CTA tile of 8 warps
// (64 x 64 each) fills the next of 3 shared-memory stages with cp.async (4 bytes per
// thread: align2; 16 for comparison), reads its fragments with ldmatrix (32 x4 per warp:
// 16 KiB) and runs 128 mma.sync m16n8k16 per warp (4.19 MFLOP per CTA). Each part alone
// and together, one CTA per SM on every SM, cycles per K step (clock64). The operands'
// values do not matter (timing only).
#include "h200_common.cuh"

constexpr int kThreads = 256;
constexpr int kStageBytes = 48 * 1024;
constexpr int kStages = 3;

template <int W, bool kFill, bool kLdm, bool kMma>
__global__ void __launch_bounds__(kThreads) mainloop(const char* src, size_t src_bytes, int steps,
                                                     unsigned long long* cycles, float* sink) {
  extern __shared__ __align__(128) char smem[];
  const unsigned smem0 = static_cast<unsigned>(__cvta_generic_to_shared(smem));
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  float d[4][8][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j)
#pragma unroll
      for (int k = 0; k < 4; ++k) d[i][j][k] = 0.f;
  unsigned a[4][4], b[8][2];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int k = 0; k < 4; ++k) a[i][k] = threadIdx.x * 3 + i + k;
#pragma unroll
  for (int j = 0; j < 8; ++j) b[j][0] = b[j][1] = threadIdx.x * 5 + j;
  const size_t base = (size_t(blockIdx.x) * kStageBytes * 7) % (src_bytes - kStageBytes);
  __syncthreads();
  const long long t0 = clock64();
  for (int step = 0; step < steps; ++step) {
    if (kFill) {
      const unsigned stage = smem0 + ((step + 2) % kStages) * kStageBytes;
      const char* g = src + (base + size_t(step) * 4096) % (src_bytes - kStageBytes);
      for (int off = threadIdx.x * W; off < kStageBytes; off += kThreads * W) cp_async_bytes<W>(stage + off, g + off);
      asm volatile("cp.async.commit_group;");
      asm volatile("cp.async.wait_group 1;");
      __syncthreads();
    }
    const unsigned stage = smem0 + (step % kStages) * kStageBytes;
#pragma unroll
    for (int kk = 0; kk < 4; ++kk) {  // 4 k16 sub-steps of the K step of 64
      if (kLdm) {
        // A: 4 m16 x k16 fragments (rows 64 x warp-row), B: 8 n8 x k16 as 4 x4 loads.
        // Rows of 128 B (64 fp16 of K), 16 B chunks XOR-swizzled by the row (as CUTLASS's
        // layouts are), so the 8 rows an ldmatrix reads hit 8 different bank groups.
        const int chunk = kk * 2 + lane / 16;
#pragma unroll
        for (int i = 0; i < 4; ++i) {
          const int row = (warp / 2) * 64 + i * 16 + lane % 16;
          asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                       : "=r"(a[i][0]), "=r"(a[i][1]), "=r"(a[i][2]), "=r"(a[i][3])
                       : "r"(stage + row * 128 + ((chunk ^ (row & 7)) * 16)));
        }
#pragma unroll
        for (int j = 0; j < 4; ++j) {
          const int row = (warp % 2) * 64 + j * 16 + lane % 16;
          asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];"
                       : "=r"(b[2 * j][0]), "=r"(b[2 * j][1]), "=r"(b[2 * j + 1][0]), "=r"(b[2 * j + 1][1])
                       : "r"(stage + 32768 + row * 128 + ((chunk ^ (row & 7)) * 16)));
        }
      }
      if (kMma) {
#pragma unroll
        for (int i = 0; i < 4; ++i)
#pragma unroll
          for (int j = 0; j < 8; ++j)
            mma_m16n8k16(d[i][j], a[i][0], a[i][1], a[i][2], a[i][3], b[j][0], b[j][1]);
      }
    }
    if (!kFill) __syncthreads();
  }
  asm volatile("cp.async.wait_group 0;");
  __syncthreads();
  const long long t1 = clock64();
  float s = 0;
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 8; ++j) s += d[i][j][0] + d[i][j][3] + float(a[i][0] & 1) + float(b[j][1] & 1);
  if (s == 1234.5f) sink[0] = s;
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

template <int W, bool kFill, bool kLdm, bool kMma>
void run(const char* what, const char* src, size_t src_bytes, int sms, unsigned long long* cycles, float* sink) {
  const int steps = 4000, smem = kStages * kStageBytes;
  auto k = mainloop<W, kFill, kLdm, kMma>;
  CK(cudaFuncSetAttribute(k, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  const CycleTiming t = time_in_cycles([&](int n) { k<<<sms, kThreads, smem>>>(src, src_bytes, n, cycles, sink); },
                                       100, steps, cycles, sms);
  const double cyc = t.mean_cycles / steps;
  const double mhz = t.mean_cycles / (t.ms * 1e3);  // SM cycles per microsecond
  printf("%s,%d,%.0f,%.0f,%.0f\n", what, W, cyc, 4194304.0 / cyc, mhz);
}

int main() {
  int sms = 0;
  CK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0));
  const size_t src_bytes = 16u << 20;  // L2-resident
  const char* src = device_bytes(src_bytes, 0);
  auto* cycles = reinterpret_cast<unsigned long long*>(device_bytes(1024 * sizeof(unsigned long long), 0));
  auto* sink = reinterpret_cast<float*>(device_bytes(64, 0));
  printf("parts,fill_width_B,cycles_per_k_step,mma_flop_per_sm_cycle_if_all_math,sm_mhz\n");
  for (int rep = 0; rep < 2; ++rep) {
    run<4, true, false, false>("fill", src, src_bytes, sms, cycles, sink);
    run<16, true, false, false>("fill", src, src_bytes, sms, cycles, sink);
    run<4, false, false, true>("mma", src, src_bytes, sms, cycles, sink);
    run<4, false, true, false>("ldmatrix", src, src_bytes, sms, cycles, sink);
    run<4, false, true, true>("ldmatrix+mma", src, src_bytes, sms, cycles, sink);
    run<4, true, true, false>("fill+ldmatrix", src, src_bytes, sms, cycles, sink);
    run<4, true, true, true>("fill+ldmatrix+mma", src, src_bytes, sms, cycles, sink);
    run<16, true, true, true>("fill+ldmatrix+mma", src, src_bytes, sms, cycles, sink);
  }
  return 0;
}
