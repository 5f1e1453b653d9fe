// Does SM memory traffic starve a copy engine's peer copies as it starves a local one?
// (issue 41: beside the same GEMM, interference_2gpu.csv's ce_local rows keep 224-983 GB/s
// while ce_peer_out / ce_peer_both keep their 376-381 GB/s; d2d_engine.cu found the local
// copy served from what the SMs leave at the L2. Which path is it: the L2 reads every copy
// engine copy makes, the local copy's writes, or the local copy alone?)
//
// GPU 0 runs 20 ms of traffic kernels (d2d_engine.cu's L2-resident readers at 1-4 CTAs of
// 512 threads per SM, one 16 B load in flight per thread; DRAM readers; L2 writers), and
// beside them a stream of 64 MiB copies of one path:
//   local     GPU 0 -> GPU 0, cudaMemcpyAsync on a GPU 0 stream (its copy engine reads and
//             writes GPU 0's memory)
//   peer_out  GPU 0 -> GPU 1, cudaMemcpyPeerAsync on a GPU 0 stream (GPU 0's engine reads
//             GPU 0's memory, the writes go out over NVLink)
//   peer_in   GPU 1 -> GPU 0, cudaMemcpyPeerAsync on a GPU 1 stream (GPU 1's engine; its
//             writes come into GPU 0's memory over NVLink)
//   peer_both peer_out and peer_in at once
//   d2h       GPU 0 -> pinned host memory, cudaMemcpyAsync on a GPU 0 stream (the engine
//             reads GPU 0's memory, the writes go out over PCIe; the peer_out of one GPU)
//   h2d       pinned host memory -> GPU 0 (the engine writes GPU 0's memory)
// The peer paths need 2 GPUs and are left out on one.
// Every copy has an event behind it, so the rate during the traffic counts only the copies
// that ended inside it (from the traffic's launch to the last such end). Each case is run
// with the copies alone too.
#include "h200_common.cuh"

#include <chrono>
#include <cstring>
#include <thread>
#include <vector>

struct Traffic {
  const char* what;
  int kind;  // -1 none, 0 read, 1 write
  size_t buf_bytes;
  int ctas_per_sm;
};

int main() {
  int gpus = 0;
  CK(cudaGetDeviceCount(&gpus));
  const bool peers = gpus >= 2;
  const size_t bytes = 64ull << 20;
  const int max_copies = 120;  // 64 MiB each: 4.3 ms at 1.8 TB/s, 20 ms at 380 GB/s
  void *src0, *dst0, *src1 = nullptr, *dst1 = nullptr, *host_src, *host_dst;
  cudaStream_t s_in = nullptr;
  std::vector<cudaEvent_t> in_ev(max_copies + 1);
  if (peers) {
    CK(cudaSetDevice(1));
    CK(cudaDeviceEnablePeerAccess(0, 0));
    CK(cudaMalloc(&src1, bytes));
    CK(cudaMalloc(&dst1, bytes));
    CK(cudaMemset(src1, 2, bytes));
    CK(cudaStreamCreateWithFlags(&s_in, cudaStreamNonBlocking));
    for (auto& e : in_ev) CK(cudaEventCreate(&e));
    CK(cudaSetDevice(0));
    CK(cudaDeviceEnablePeerAccess(1, 0));
  }
  CK(cudaMallocHost(&host_src, bytes));
  CK(cudaMallocHost(&host_dst, bytes));
  memset(host_src, 3, bytes);
  CK(cudaMalloc(&src0, bytes));
  CK(cudaMalloc(&dst0, bytes));
  CK(cudaMemset(src0, 1, bytes));
  int4* big;
  const size_t big_bytes = 1ull << 30;
  CK(cudaMalloc(&big, big_bytes + 4096));
  CK(cudaMemset(big, 0, big_bytes));
  unsigned long long* moved;
  CK(cudaMalloc(&moved, sizeof(unsigned long long)));
  cudaDeviceProp prop;
  CK(cudaGetDeviceProperties(&prop, 0));
  const int sms = prop.multiProcessorCount;
  cudaStream_t s_traffic, s_out;
  CK(cudaStreamCreateWithFlags(&s_traffic, cudaStreamNonBlocking));
  CK(cudaStreamCreateWithFlags(&s_out, cudaStreamNonBlocking));
  cudaEvent_t t_begin, t_end;
  CK(cudaEventCreate(&t_begin));
  CK(cudaEventCreate(&t_end));
  std::vector<cudaEvent_t> out_ev(max_copies + 1);
  for (auto& e : out_ev) CK(cudaEventCreate(&e));

  const Traffic traffics[] = {
      {"none", -1, 0, 0},
      {"l2_readers_1cta", 0, 16ull << 20, 1},
      {"l2_readers_2cta", 0, 16ull << 20, 2},
      {"l2_readers_3cta", 0, 16ull << 20, 3},
      {"l2_readers_4cta", 0, 16ull << 20, 4},
      {"dram_readers_4cta", 0, big_bytes, 4},
      {"l2_writers_1cta", 1, 16ull << 20, 1},
      {"l2_writers_4cta", 1, 16ull << 20, 4},
  };
  const char* paths[] = {"local", "peer_out", "peer_in", "peer_both", "d2h", "h2d"};
  const unsigned long long traffic_ns = 20'000'000ull;
  printf("traffic,path,traffic_GBps,traffic_ms,stream,copies_during,copy_GBps_during,copies_total,copy_GBps_total\n");
  for (const Traffic& t : traffics) {
    for (int path = 0; path < 6; ++path) {
      if (!peers && path >= 1 && path <= 3) continue;
      const bool out_stream = path != 2;             // local, peer_out, d2h, h2d on GPU 0's stream
      const bool in_stream = path == 2 || path == 3;  // peer_in on GPU 1's stream
      const int copies = path >= 4 ? 24 : max_copies;  // PCIe: ~55 GB/s, 1.2 ms each
      CK(cudaSetDevice(0));
      CK(cudaMemset(moved, 0, sizeof(unsigned long long)));
      CK(cudaDeviceSynchronize());
      CK(cudaEventRecord(t_begin, s_traffic));
      const size_t n = t.buf_bytes / sizeof(int4);
      if (t.kind == 0)
        traffic_reader<1><<<sms * t.ctas_per_sm, 512, 0, s_traffic>>>(big, n, traffic_ns, big + big_bytes / sizeof(int4), moved);
      else if (t.kind == 1)
        traffic_writer<<<sms * t.ctas_per_sm, 512, 0, s_traffic>>>(big, n, traffic_ns, moved);
      CK(cudaEventRecord(t_end, s_traffic));
      if (t.kind >= 0) std::this_thread::sleep_for(std::chrono::microseconds(200));  // the traffic is resident
      // the copies: an event before the first and after each
      if (out_stream) {
        CK(cudaEventRecord(out_ev[0], s_out));
        for (int i = 0; i < copies; ++i) {
          if (path == 0)
            CK(cudaMemcpyAsync(dst0, src0, bytes, cudaMemcpyDeviceToDevice, s_out));
          else if (path == 4)
            CK(cudaMemcpyAsync(host_dst, src0, bytes, cudaMemcpyDeviceToHost, s_out));
          else if (path == 5)
            CK(cudaMemcpyAsync(dst0, host_src, bytes, cudaMemcpyHostToDevice, s_out));
          else
            CK(cudaMemcpyPeerAsync(dst1, 1, src0, 0, bytes, s_out));
          CK(cudaEventRecord(out_ev[i + 1], s_out));
        }
      }
      if (in_stream) {
        CK(cudaSetDevice(1));
        CK(cudaEventRecord(in_ev[0], s_in));
        for (int i = 0; i < copies; ++i) {
          CK(cudaMemcpyPeerAsync(dst0, 0, src1, 1, bytes, s_in));
          CK(cudaEventRecord(in_ev[i + 1], s_in));
        }
        CK(cudaSetDevice(0));
      }
      if (peers) {
        CK(cudaSetDevice(1));
        CK(cudaDeviceSynchronize());
        CK(cudaSetDevice(0));
      }
      CK(cudaDeviceSynchronize());
      float traffic_ms = 0;
      CK(cudaEventElapsedTime(&traffic_ms, t_begin, t_end));
      unsigned long long traffic_bytes = 0;
      CK(cudaMemcpy(&traffic_bytes, moved, sizeof(traffic_bytes), cudaMemcpyDeviceToHost));
      const double traffic_GBps = t.kind >= 0 ? traffic_bytes / (traffic_ms * 1e-3) / 1e9 : 0.0;
      auto report = [&](const char* stream, std::vector<cudaEvent_t>& ev, int device) {
        CK(cudaSetDevice(device));
        // copies that ended while the traffic ran (t_begin is on GPU 0: compare through
        // each stream's own first event, recorded after the traffic's launch)
        float begin_after_traffic = 0.25f;  // GPU 1: the 200 us wait and the enqueue
        if (device == 0) CK(cudaEventElapsedTime(&begin_after_traffic, t_begin, ev[0]));
        int during = 0;
        float last_during_ms = 0, total_ms = 0;
        for (int i = 1; i <= copies; ++i) {
          float ms;
          CK(cudaEventElapsedTime(&ms, ev[0], ev[i]));
          if (t.kind < 0 || begin_after_traffic + ms <= traffic_ms) {
            during = i;
            last_during_ms = ms;
          }
          total_ms = ms;
        }
        if (t.kind < 0) during = 0;
        const double during_GBps = during ? during * bytes / (last_during_ms * 1e-3) / 1e9 : 0.0;
        printf("%s,%s,%.0f,%.2f,%s,%d,%.1f,%d,%.1f\n", t.what, paths[path], traffic_GBps, traffic_ms, stream, during,
               during_GBps, copies, copies * bytes / (total_ms * 1e-3) / 1e9);
        CK(cudaSetDevice(0));
      };
      const char* out_names[] = {"gpu0_local", "gpu0_to_gpu1", "", "gpu0_to_gpu1", "gpu0_to_host", "host_to_gpu0"};
      if (out_stream) report(out_names[path], out_ev, 0);
      // GPU 1's events cannot be timed against GPU 0's: its stream's first event is taken
      // to be 0.25 ms after the traffic's launch (the 200 us wait and the enqueue)
      if (in_stream) report("gpu1_to_gpu0", in_ev, 1);
      fflush(stdout);
    }
  }
  return 0;
}
