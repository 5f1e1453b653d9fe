// Every kernel's GPU start and end, name and launch shape, from CUPTI's activity API
// (tools/h200 programs that time cuBLAS's kernels, whose launches they do not see).
// Link with -lcupti; KREC names the newest kernel record type the installed CUPTI has
// (measure_*.sh find it: CUpti_ActivityKernel10 in CUDA 13).
#pragma once
#include <cupti.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#ifndef KREC
#define KREC CUpti_ActivityKernel9
#endif

struct KernelRecord {
  std::string name;
  unsigned long long start, end;  // ns, the GPU's global timer
  int grid[3], block[3], regs, smem;
  unsigned long long ns() const { return end - start; }
};

namespace cupti_detail {
inline std::mutex mutex;
inline std::vector<KernelRecord> records;

inline void CUPTIAPI requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *size = 16u << 20;
  *buffer = static_cast<uint8_t*>(aligned_alloc(8, *size));
  *max_records = 0;
}

inline void CUPTIAPI completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  CUpti_Activity* rec = nullptr;
  std::lock_guard<std::mutex> lock(mutex);
  while (cuptiActivityGetNextRecord(buffer, valid, &rec) == CUPTI_SUCCESS) {
    if (rec->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) continue;
    const auto* k = reinterpret_cast<const KREC*>(rec);
    records.push_back({k->name ? k->name : "?", k->start, k->end, {int(k->gridX), int(k->gridY), int(k->gridZ)},
                       {int(k->blockX), int(k->blockY), int(k->blockZ)}, int(k->registersPerThread),
                       int(k->staticSharedMemory + k->dynamicSharedMemory)});
  }
  free(buffer);
}
}  // namespace cupti_detail

// Starts recording every kernel (concurrent kernel records: kernels are not serialized).
inline bool start_kernel_activity() {
  return cuptiActivityRegisterCallbacks(cupti_detail::requested, cupti_detail::completed) == CUPTI_SUCCESS &&
         cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) == CUPTI_SUCCESS;
}

// The records of the kernels completed since the last call (CUPTI's buffers flushed).
inline std::vector<KernelRecord> take_kernel_records() {
  cuptiActivityFlushAll(1);
  std::lock_guard<std::mutex> lock(cupti_detail::mutex);
  std::vector<KernelRecord> out;
  out.swap(cupti_detail::records);
  return out;
}

// The copies' and the GEMMs' kernels among the records since the last call, in start
// order: a copy if its name contains `copy_name`, a GEMM if it contains "nvjet" (cuBLAS's
// Hopper kernels); the others are dropped (copy_gaps.cu, copy_phase.cu).
struct CopyOrGemm {
  bool copy;
  unsigned long long start, end;
};
inline std::vector<CopyOrGemm> take_copies_and_gemms(const char* copy_name) {
  std::vector<CopyOrGemm> recs;
  for (const KernelRecord& k : take_kernel_records()) {
    const bool copy = k.name.find(copy_name) != std::string::npos;
    if (copy || k.name.find("nvjet") != std::string::npos) recs.push_back({copy, k.start, k.end});
  }
  std::sort(recs.begin(), recs.end(), [](const CopyOrGemm& a, const CopyOrGemm& b) { return a.start < b.start; });
  return recs;
}
