#include "sim/huge_pages.h"

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <map>
#include <mutex>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#if !defined(MADV_COLLAPSE)
#define MADV_COLLAPSE 25  // Linux 6.1+; glibc < 2.37 headers lack it (older kernels: EINVAL, ignored)
#endif
#endif

// AddressSanitizer: GCC defines __SANITIZE_ADDRESS__; clang 14 (the fuzz preset's
// compiler) does not, and answers __has_feature(address_sanitizer) instead.
#if defined(__SANITIZE_ADDRESS__)
#define T3SIM_ADDRESS_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define T3SIM_ADDRESS_SANITIZER 1
#endif
#endif

namespace t3sim {

void back_with_huge_pages() {
#if defined(T3SIM_ADDRESS_SANITIZER)
  // Under AddressSanitizer the anonymous mappings include terabytes of shadow memory:
  // walking them costs seconds per call (the asan preset's tests), for nothing.
  return;
#endif
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  constexpr std::uintptr_t kHuge = std::uintptr_t{2} << 20;
  static std::mutex mutex;  // sweeps run simulators on several threads
  static std::map<std::uintptr_t, std::uintptr_t> done;  // start -> end already advised
  const std::lock_guard lock(mutex);
  const auto page = static_cast<std::uintptr_t>(::sysconf(_SC_PAGESIZE));
  if (page == 0 || kHuge % page != 0) return;
  std::FILE* maps = std::fopen("/proc/self/maps", "r");
  if (maps == nullptr) return;
  std::vector<std::pair<std::uintptr_t, std::uintptr_t>> ranges;
  char line[512];
  while (std::fgets(line, sizeof line, maps) != nullptr) {
    unsigned long lo = 0, hi = 0, offset = 0, inode = 0;
    char perms[8] = {}, dev[16] = {};
    int name_at = 0;
    if (std::sscanf(line, "%lx-%lx %7s %lx %15s %lu %n", &lo, &hi, perms, &offset, dev, &inode, &name_at) < 6)
      continue;
    // Private, read-write, not file-backed: the heap ("[heap]") or an anonymous mmap.
    const char* name = line + name_at;
    const bool anonymous = inode == 0 && (name[0] == '\0' || std::strncmp(name, "[heap]", 6) == 0);
    if (!anonymous || std::strncmp(perms, "rw-p", 4) != 0) continue;
    const std::uintptr_t start = (lo + kHuge - 1) & ~(kHuge - 1), end = hi & ~(kHuge - 1);
    if (end > start) ranges.emplace_back(start, end);
  }
  std::fclose(maps);
  std::vector<unsigned char> resident(kHuge / page);
  for (const auto& [start, end] : ranges) {
    auto it = done.find(start);
    if (it != done.end() && it->second >= end) continue;
    done[start] = end;
    if (::madvise(reinterpret_cast<void*>(start), end - start, MADV_HUGEPAGE) != 0) continue;
    // Future faults get huge pages; what is already there is collapsed now (not
    // whenever khugepaged gets there), 2 MiB at a time, where mostly in use: collapsing
    // a sparse block (a reserved, untouched vector) would make it all resident.
    for (std::uintptr_t b = start; b < end; b += kHuge) {
      if (::mincore(reinterpret_cast<void*>(b), kHuge, resident.data()) != 0) continue;
      std::size_t in_use = 0;
      for (const unsigned char r : resident) in_use += r & 1;
      if (in_use * 2 >= resident.size()) ::madvise(reinterpret_cast<void*>(b), kHuge, MADV_COLLAPSE);
    }
  }
#endif
}

}  // namespace t3sim
