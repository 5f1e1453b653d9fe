// How long a local copy takes right after a GEMM, and what of the GEMM's output C the L2
// still holds then (issue 41). In the model a GEMM that writes a C that fits the L2
// (gpt3.op.tp32: 50 MB; megagpt2.op.tp8: 100 MB) leaves it there dirty, and the 64 MiB copy
// that follows pays for writing it back (the copy after a GEMM ~40 us against 37 alone);
// on the machine the copy after a GEMM ends 29-34 us after it (ce_lockstep.csv; 35.6
// alone). Per GEMM (random operands, 50 ms of them first for the clock): the median of
// 20 of (a) a 64 MiB cudaMemcpyAsync after 1 ms idle, (b) the same copy queued right
// behind one GEMM (timed from the GEMM's end), (c) one pass of reads over C right after
// a GEMM (all SMs, 16 B L2-only loads), (d) over C after C was read twice (warm), (e) over
// C after a 256 MiB read of other data (cold), (f) the copy right after a plain kernel
// wrote all of C (dirty lines of a kernel's stores), (g) that write pass alone and (h) the
// read pass over C right after the write pass.
// Prints CSV: gemm,c_MB,copy_alone_us,copy_after_gemm_us,read_c_after_gemm_us,read_c_warm_us,
//   read_c_cold_us,copy_after_write_c_us,write_c_us,read_c_after_write_c_us
//   nvcc -O3 -arch=sm_90 -std=c++17 -o copy_after_gemm copy_after_gemm.cu -lcublas

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <thread>
#include <vector>

#include "h200_common.cuh"

static float median(std::vector<float> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main() {
  GemmAndSideStreams g;
  const size_t copy_bytes = size_t(64) << 20;
  char* src = device_bytes(copy_bytes, 1);
  char* dst = device_bytes(copy_bytes, 0);
  int4* sink = (int4*)device_bytes(64, 0);
  cudaEvent_t e0, e1;
  CK(cudaEventCreate(&e0));
  CK(cudaEventCreate(&e1));
  const cudaStream_t s = g.gemm;
  auto timed = [&](auto&& before, auto&& what) {
    std::vector<float> t;
    for (int rep = 0; rep < 20; ++rep) {
      before();
      CK(cudaEventRecord(e0, s));
      what();
      CK(cudaEventRecord(e1, s));
      CK(cudaStreamSynchronize(s));
      float ms;
      CK(cudaEventElapsedTime(&ms, e0, e1));
      t.push_back(ms * 1e3f);
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
    return median(t);
  };
  printf("gemm,c_MB,copy_alone_us,copy_after_gemm_us,read_c_after_gemm_us,read_c_warm_us,read_c_cold_us,"
         "copy_after_write_c_us,write_c_us,read_c_after_write_c_us\n");
  const size_t flush_bytes = size_t(256) << 20;
  int4* flush = (int4*)device_bytes(flush_bytes, 5);
  const Shape shapes[] = {{"gpt3.op.tp32", 2048, 12288, 384}, {"megagpt2.op.tp8", 16384, 3072, 384}};
  for (const Shape& sh : shapes) {
    TorchMmGemm gemm(g.handle, sh);
    randomize_operands(gemm, s);
    run_gemms_for(gemm, s, 50);
    const size_t cn = size_t(sh.M) * sh.N * 2 / 16;
    auto nothing = [] {};
    auto copy = [&] { CK(cudaMemcpyAsync(dst, src, copy_bytes, cudaMemcpyDeviceToDevice, s)); };
    auto one_gemm = [&] { gemm(); };
    auto read_c = [&] { read_pass<<<132 * 4, 512, 0, s>>>((const int4*)gemm.C, cn, sink); };
    auto warm_c = [&] {
      read_c();
      read_c();
    };
    auto cold = [&] { read_pass<<<132 * 4, 512, 0, s>>>(flush, flush_bytes / 16, sink); };
    auto write_c = [&] { write_pass<<<132 * 4, 512, 0, s>>>((int4*)gemm.C, cn); };
    const float alone = timed(nothing, copy);
    const float after = timed(one_gemm, copy);
    const float read_after = timed(one_gemm, read_c);
    const float read_warm = timed(warm_c, read_c);
    const float read_cold = timed(cold, read_c);
    const float after_write = timed(write_c, copy);
    const float write_alone = timed(nothing, write_c);
    const float read_after_write = timed(write_c, read_c);
    printf("%s,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f,%.1f\n", sh.name, cn * 16 / 1e6, alone, after, read_after,
           read_warm, read_cold, after_write, write_alone, read_after_write);
    fflush(stdout);
  }
  return 0;
}
