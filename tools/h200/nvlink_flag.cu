// How long does a flag take from one GPU's SM to another's over NVLink (issue 42 item 3)?
//
// A ring collective's step ends with the sender's flag (NCCL's "tail") stored into the
// receiver's memory, which the receiver's CTA polls; the receiver answers with its own
// flag ("head") into the sender's memory once it has taken the data. So each step's fixed
// cost holds a flag's trip each way. The model charges the network's latency for it
// (configs/systems/h200.yaml net.latency per link, net.switch_latency), which no
// measurement has given yet. This program ping-pongs a flag between one thread on GPU 0
// and one on GPU 1, each storing into the other's memory and polling its own, N times;
// a round trip over two is one flag's trip (store, NVLink and switch, visibility to the
// poller). Variants: a plain volatile store; __threadfence_system() (fence.sc.sys) before
// it ("fenced"); fence.acq_rel.sys before it, the fence NCCL's Simple protocol puts
// between a step's data and its tail flag (src/device/prims_simple.h, postPeer); the same
// ping-pong within one GPU (both threads on GPU 0, flags in its memory) for the part
// that is not the link.
//
// Prints CSV: variant,round_trips,round_trip_ns_median,one_way_ns
//   tools/h200/measure_program.sh nvlink_flag OUTDIR   (two GPUs with peer access)

#include <algorithm>
#include <cstdio>
#include <vector>

#include "h200_common.cuh"

namespace {

constexpr int kTrips = 20000;

// Player 0 starts: it stores i into the other's flag, waits for i back in its own.
// Player 1 waits for i in its own flag, then stores i into the other's. Each records
// player 0's round trips on the global timer.
// The fence before a store: none, NCCL's (fence.acq_rel.sys, prims_simple.h's postPeer
// before it stores the tail), or __threadfence_system() (fence.sc.sys).
enum Fence { kNone = 0, kAcqRel = 1, kSc = 2 };
__device__ __forceinline__ void fence_before_store(int fence) {
  if (fence == kAcqRel) asm volatile("fence.acq_rel.sys;" ::: "memory");
  if (fence == kSc) __threadfence_system();
}

__global__ void ping(volatile unsigned* mine, volatile unsigned* theirs, int player, int fence,
                     unsigned long long* trip_ns) {
  for (int i = 1; i <= kTrips; ++i) {
    if (player == 0) {
      const unsigned long long t0 = gtime();
      fence_before_store(fence);
      *theirs = i;
      while (*mine != unsigned(i)) {
      }
      trip_ns[i - 1] = gtime() - t0;
    } else {
      while (*mine != unsigned(i)) {
      }
      fence_before_store(fence);
      *theirs = i;
    }
  }
}

double median(std::vector<unsigned long long> v) {
  std::sort(v.begin(), v.end());
  return double(v[v.size() / 2]);
}

void run(const char* variant, int dev0, int dev1, int fence) {
  unsigned *flag0, *flag1;
  unsigned long long* trips;
  CK(cudaSetDevice(dev0));
  CK(cudaMalloc(&flag0, 4));
  CK(cudaMemset(flag0, 0, 4));
  CK(cudaMalloc(&trips, sizeof(unsigned long long) * kTrips));
  CK(cudaSetDevice(dev1));
  CK(cudaMalloc(&flag1, 4));
  CK(cudaMemset(flag1, 0, 4));
  CK(cudaDeviceSynchronize());
  cudaStream_t s0, s1;
  CK(cudaSetDevice(dev1));
  CK(cudaStreamCreateWithFlags(&s1, cudaStreamNonBlocking));
  ping<<<1, 1, 0, s1>>>(flag1, flag0, 1, fence, nullptr);  // waits for player 0
  CK(cudaSetDevice(dev0));
  CK(cudaStreamCreateWithFlags(&s0, cudaStreamNonBlocking));
  ping<<<1, 1, 0, s0>>>(flag0, flag1, 0, fence, trips);
  CK(cudaStreamSynchronize(s0));
  CK(cudaSetDevice(dev1));
  CK(cudaStreamSynchronize(s1));
  CK(cudaSetDevice(dev0));
  std::vector<unsigned long long> t(kTrips);
  CK(cudaMemcpy(t.data(), trips, sizeof(t[0]) * kTrips, cudaMemcpyDeviceToHost));
  t.erase(t.begin(), t.begin() + 100);  // the first trips: cold
  const double rt = median(t);
  printf("%s,%zu,%.0f,%.0f\n", variant, t.size(), rt, rt / 2);
  fflush(stdout);
  cudaFree(flag0);
  cudaFree(flag1);
  cudaFree(trips);
}

}  // namespace

int main() {
  int n = 0;
  CK(cudaGetDeviceCount(&n));
  printf("variant,round_trips,round_trip_ns_median,one_way_ns\n");
  run("same_gpu", 0, 0, kNone);
  run("same_gpu_fenced", 0, 0, kSc);
  run("same_gpu_acq_rel", 0, 0, kAcqRel);
  if (n < 2) return 0;
  CK(cudaSetDevice(0));
  CK(cudaDeviceEnablePeerAccess(1, 0));
  CK(cudaSetDevice(1));
  CK(cudaDeviceEnablePeerAccess(0, 0));
  CK(cudaSetDevice(0));
  run("nvlink", 0, 1, kNone);
  run("nvlink_fenced", 0, 1, kSc);
  run("nvlink_acq_rel", 0, 1, kAcqRel);
  return 0;
}
