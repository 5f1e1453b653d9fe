#pragma once
// The functional contents of a memory: one 64-bit word per value granule, kept in
// sparse pages of a power-of-two number of words, allocated (zeroed) on first write.
// A word never written reads as 0. Used by the HBM channels (at channel-local
// addresses) and by the ideal memory; the values that travel with requests (Payload)
// are read from and written into it.
//
// A one-entry cache of the last page touched makes a burst of accesses to one page
// (a request's words, consecutive requests of a stream) cost one hash look-up.

#include <algorithm>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace t3sim {

class WordStore {
 public:
  // `words_per_page`: a power of two.
  explicit WordStore(std::uint64_t words_per_page)
      : words_per_page_(words_per_page), page_shift_(static_cast<std::uint32_t>(std::countr_zero(words_per_page))) {}

  // out[0, n) = words [first_word, first_word + n).
  void read(std::uint64_t first_word, std::uint64_t* out, std::size_t n) const {
    for_each_segment(first_word, n, [&](std::uint64_t page, std::uint64_t offset, std::size_t count, std::size_t at) {
      if (const std::uint64_t* p = find_page(page)) {
        std::copy_n(p + offset, count, out + at);
      } else {
        std::fill_n(out + at, count, std::uint64_t{0});
      }
    });
  }
  // Words [first_word, first_word + n) = in[0, n).
  void write(std::uint64_t first_word, const std::uint64_t* in, std::size_t n) {
    for_each_segment(first_word, n, [&](std::uint64_t page, std::uint64_t offset, std::size_t count, std::size_t at) {
      std::copy_n(in + at, count, get_page(page) + offset);
    });
  }
  // Words [first_word, first_word + n) += in[0, n), wrapping mod 2^64 (the near-memory
  // op-and-store's element-wise sum).
  void add(std::uint64_t first_word, const std::uint64_t* in, std::size_t n) {
    for_each_segment(first_word, n, [&](std::uint64_t page, std::uint64_t offset, std::size_t count, std::size_t at) {
      std::uint64_t* p = get_page(page) + offset;
      for (std::size_t k = 0; k < count; ++k) p[k] += in[at + k];
    });
  }

  // Pages allocated so far (each words_per_page words).
  std::size_t pages() const { return pages_.size(); }

 private:
  static constexpr std::uint64_t kNoPage = UINT64_MAX;

  // fn(page, first word in the page, words, first word in the caller's buffer) for each
  // page the words [first_word, first_word + n) touch.
  template <class Fn>
  void for_each_segment(std::uint64_t first_word, std::size_t n, Fn&& fn) const {
    std::uint64_t word = first_word;
    for (std::size_t done = 0; done < n;) {
      const std::uint64_t offset = word & (words_per_page_ - 1);
      const std::size_t count = static_cast<std::size_t>(std::min<std::uint64_t>(n - done, words_per_page_ - offset));
      fn(word >> page_shift_, offset, count, done);
      done += count;
      word += count;
    }
  }
  std::uint64_t* find_page(std::uint64_t page) const {  // nullptr if never written
    if (page == cached_page_) return cached_words_;
    const auto it = pages_.find(page);
    if (it == pages_.end()) return nullptr;
    cached_page_ = page;
    cached_words_ = it->second.data();
    return cached_words_;
  }
  std::uint64_t* get_page(std::uint64_t page) {  // allocates a zero page
    if (page == cached_page_) return cached_words_;
    auto [it, inserted] = pages_.try_emplace(page);
    if (inserted) it->second.assign(words_per_page_, 0);
    cached_page_ = page;
    cached_words_ = it->second.data();
    return cached_words_;
  }

  std::uint64_t words_per_page_;
  std::uint32_t page_shift_;
  mutable std::unordered_map<std::uint64_t, std::vector<std::uint64_t>> pages_;
  mutable std::uint64_t cached_page_ = kNoPage;
  mutable std::uint64_t* cached_words_ = nullptr;
};

}  // namespace t3sim
