// The 16-byte copy kernel of the H200 copy measurements (an NCCL-like k-CTA copy):
// compiled by tools/h200/interfere_common.py (cupy) and by
// tools/h200/copy_kernel_resources.sh (nvcc, for its registers and shared memory).
extern "C" __global__ void copy16(const int4* __restrict__ src, int4* __restrict__ dst, unsigned long long n16) {
  unsigned long long i = (unsigned long long)blockIdx.x * blockDim.x + threadIdx.x;
  unsigned long long stride = (unsigned long long)gridDim.x * blockDim.x;
  for (; i + 3 * stride < n16; i += 4 * stride) {
    int4 a = src[i]; int4 b = src[i + stride]; int4 c = src[i + 2 * stride]; int4 d = src[i + 3 * stride];
    dst[i] = a; dst[i + stride] = b; dst[i + 2 * stride] = c; dst[i + 3 * stride] = d; }
  for (; i < n16; i += stride) dst[i] = src[i];
}
