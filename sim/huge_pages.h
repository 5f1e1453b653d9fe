#pragma once
// An allocator for large, randomly accessed arrays (cache tag arrays, functional
// stores): blocks of 2 MiB and more are 2 MiB-aligned and advised to the kernel as
// transparent huge pages, so a look-up that misses the host's caches does not also
// miss its TLB. Smaller blocks come from operator new as usual. Performance only: the
// contents and the container's behaviour are those of std::allocator.

#include <cstddef>
#include <new>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace t3sim {

template <class T>
class HugePageAllocator {
 public:
  using value_type = T;
  static constexpr std::size_t kHugePage = std::size_t{2} << 20;

  HugePageAllocator() = default;
  template <class U>
  HugePageAllocator(const HugePageAllocator<U>&) noexcept {}

  T* allocate(std::size_t n) {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kHugePage) return static_cast<T*>(::operator new(bytes));
    const std::size_t rounded = round_up(bytes);
    void* p = ::operator new(rounded, std::align_val_t{kHugePage});
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    ::madvise(p, rounded, MADV_HUGEPAGE);  // a hint: failure only costs speed
#endif
    return static_cast<T*>(p);
  }
  void deallocate(T* p, std::size_t n) noexcept {
    const std::size_t bytes = n * sizeof(T);
    if (bytes < kHugePage) {
      ::operator delete(p);
    } else {
      ::operator delete(p, std::align_val_t{kHugePage});
    }
  }
  template <class U>
  bool operator==(const HugePageAllocator<U>&) const noexcept { return true; }

 private:
  static std::size_t round_up(std::size_t bytes) { return (bytes + kHugePage - 1) / kHugePage * kHugePage; }
};

}  // namespace t3sim
