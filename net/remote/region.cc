#include "remote/region.h"

#include <algorithm>
#include <atomic>
#include <cstring>
#include <new>

#include <sys/mman.h>

#include "forein/error.h"

namespace forein::net::remote {

namespace {

constexpr std::uint64_t kHugePagesFrom = std::uint64_t{64} << 20;

// Acquire loads and release stores (region.h): whatever a READ sees, it
// also sees everything the writer stored before it.
std::uint64_t load_word(const std::uint64_t* words, std::uint64_t i) {
  // atomic_ref needs a non-const object; a load never writes.
  return std::atomic_ref<std::uint64_t>(const_cast<std::uint64_t&>(words[i])).load(std::memory_order_acquire);
}

void store_word(std::uint64_t* words, std::uint64_t i, std::uint64_t v) {
  std::atomic_ref<std::uint64_t>(words[i]).store(v, std::memory_order_release);
}

}  // namespace

const char* to_string(ReadError e) {
  switch (e) {
    case ReadError::kOk:
      return "ok";
    case ReadError::kOutOfRange:
      return "out_of_range";
    case ReadError::kPastEnd:
      return "past_end";
    case ReadError::kTooLong:
      return "too_long";
  }
  return "unknown";
}

void Region::Free::operator()(std::uint64_t* p) const { munmap(p, bytes); }

Region::Region(std::uint64_t bytes) {
  if (bytes < kRegionHeaderBytes) bytes = kRegionHeaderBytes;
  if (bytes > (std::uint64_t{1} << 47)) throw InvalidArgument("remote region: size above 128 TiB");
  bytes_ = (bytes + 7) & ~std::uint64_t{7};
  // Fresh zero pages, touched on first write. A big region asks for
  // transparent huge pages: a 2 GB tree otherwise spends its build in page
  // faults, and random READs over it in TLB misses (the kernel may stall
  // the first touches to compact memory; small regions do not ask).
  void* p = mmap(nullptr, bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) throw std::bad_alloc();
  if (bytes_ >= kHugePagesFrom) madvise(p, bytes_, MADV_HUGEPAGE);
  words_ = std::unique_ptr<std::uint64_t[], Free>(static_cast<std::uint64_t*>(p), Free{bytes_});
}

ReadError Region::read(Address address, std::size_t length, std::byte* out) const {
  if (length > kMaxReadBytes) return ReadError::kTooLong;
  if (address > bytes_ || (address == bytes_ && length > 0)) return ReadError::kOutOfRange;
  if (length > bytes_ - address) return ReadError::kPastEnd;
  std::uint64_t pos = address;
  const std::uint64_t end = address + length;
  if (pos % 8 == 0) {  // the usual READ: whole words
    for (; end - pos >= 8; pos += 8) {
      const std::uint64_t word = load_word(words_.get(), pos / 8);
      std::memcpy(out + (pos - address), &word, 8);
    }
  }
  while (pos < end) {
    const std::uint64_t word = load_word(words_.get(), pos / 8);
    const std::uint64_t in_word = pos % 8;
    const std::uint64_t n = std::min<std::uint64_t>(8 - in_word, end - pos);
    std::memcpy(out + (pos - address), reinterpret_cast<const std::byte*>(&word) + in_word, n);
    pos += n;
  }
  return ReadError::kOk;
}

Address Region::allocate(std::uint64_t bytes) {
  const std::uint64_t rounded = (bytes + 7) & ~std::uint64_t{7};
  if (rounded > bytes_ - used_) return 0;
  const Address a = used_;
  used_ += rounded;
  return a;
}

void Region::write(Address address, std::span<const std::byte> data) {
  if (address > bytes_ || data.size() > bytes_ - address) {
    throw InvalidArgument("remote region: write outside the region");
  }
  std::uint64_t pos = address;
  const std::uint64_t end = address + data.size();
  if (pos % 8 == 0) {  // objects are 8-aligned: whole words
    for (; end - pos >= 8; pos += 8) {
      std::uint64_t word;
      std::memcpy(&word, data.data() + (pos - address), 8);
      store_word(words_.get(), pos / 8, word);
    }
  }
  while (pos < end) {
    const std::uint64_t i = pos / 8;
    const std::uint64_t in_word = pos % 8;
    const std::uint64_t n = std::min<std::uint64_t>(8 - in_word, end - pos);
    // A partial word keeps its other bytes (only this thread writes).
    std::uint64_t word = n == 8 ? 0 : load_word(words_.get(), i);
    std::memcpy(reinterpret_cast<std::byte*>(&word) + in_word, data.data() + (pos - address), n);
    store_word(words_.get(), i, word);
    pos += n;
  }
}

}  // namespace forein::net::remote
