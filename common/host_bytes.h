// Storage for host tensors of up to gigabytes: a vector whose resize leaves
// the new bytes unwritten, so the pass that writes every element (a parallel
// fill, a reference's realize, a copy) is also the one that faults its pages
// in, on every core, instead of a serial zeroing pass before it. Large
// buffers are 2 MiB aligned and asked for transparent huge pages, which cuts
// their page faults 512-fold where the kernel grants them.
#pragma once

#include <sys/mman.h>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <utility>
#include <vector>

namespace fusekit {

template <class T>
struct UnzeroedAllocator {
  using value_type = T;
  static constexpr size_t kHuge = size_t{2} << 20;

  UnzeroedAllocator() = default;
  template <class U>
  UnzeroedAllocator(const UnzeroedAllocator<U>&) {}

  T* allocate(size_t n) {
    const size_t bytes = n * sizeof(T);
    if (bytes < kHuge) {
      void* p = std::malloc(bytes > 0 ? bytes : 1);
      if (!p) throw std::bad_alloc();
      return static_cast<T*>(p);
    }
    const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
    void* p = std::aligned_alloc(kHuge, rounded);
    if (!p) throw std::bad_alloc();
    madvise(p, rounded, MADV_HUGEPAGE);  // advice only: refused, the pages stay 4 KiB
    return static_cast<T*>(p);
  }
  void deallocate(T* p, size_t) { std::free(p); }

  // Value-initialization (what resize and vector(n) ask for) does nothing;
  // a value given, as in assign(n, 0), is still written.
  template <class U>
  void construct(U* p) noexcept {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... A>
  void construct(U* p, A&&... a) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }

  template <class U>
  bool operator==(const UnzeroedAllocator<U>&) const { return true; }
  template <class U>
  bool operator!=(const UnzeroedAllocator<U>&) const { return false; }
};

using HostBytes = std::vector<uint8_t, UnzeroedAllocator<uint8_t>>;

}  // namespace fusekit
