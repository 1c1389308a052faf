// A memory node's registered memory (docs/remote-read.md): one flat byte
// region addressed by byte offset, served to clients by READ(address,
// length) the way an RDMA NIC serves RDMA READ: bytes, nothing else.
//
// One writer thread, any number of concurrent readers. A reader may see a
// write half done (torn bytes, as an RDMA READ racing the owner's CPU):
// what it read is checked afterwards (node_layout.h: versions and
// checksums). So that torn reads are not data races in the C++ model, the
// region is an array of 64-bit words reached only through
// std::atomic_ref: reads copy word by word with acquire loads, writes
// store word by word with release stores (plain moves on x86; no fences,
// which ThreadSanitizer does not model). A reader that sees a word (say a
// child pointer) therefore sees everything stored before it (the child):
// publish an object by writing it first and the pointer to it after.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>

namespace forein::net::remote {

// A byte offset in a region; 0 is the region header, never a node or a
// value record, so 0 doubles as "no address".
using Address = std::uint64_t;

// The region header's bytes at address 0 (its format: node_layout.h);
// objects are allocated after it.
inline constexpr std::uint64_t kRegionHeaderBytes = 64;

// The longest READ a region serves: a node of up to 1024 branches and any
// value record fit, and so does a READ reply in one datagram.
inline constexpr std::size_t kMaxReadBytes = 32768;

// Why a READ was refused. Nothing is copied then.
enum class ReadError : std::uint8_t {
  kOk = 0,
  kOutOfRange,  // address at or past the region's end
  kPastEnd,     // address + length past the region's end
  kTooLong,     // length above kMaxReadBytes
};

const char* to_string(ReadError e);

class Region {
 public:
  // `bytes` (rounded up to 8, at least kRegionHeaderBytes), all zero.
  // Pages are touched only when written, so a generous size costs address
  // space, not memory; from 64 MiB on, transparent huge pages are asked for.
  explicit Region(std::uint64_t bytes);
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  std::uint64_t size() const { return bytes_; }

  // Any thread: copies [address, address + length) to out, or refuses.
  // A zero-length READ inside the region (or at its end) is OK.
  ReadError read(Address address, std::size_t length, std::byte* out) const;

  // The writer thread only. Where `bytes` more fit, 8-byte aligned, or 0
  // when the region is full (nothing allocated then).
  Address allocate(std::uint64_t bytes);
  std::uint64_t used() const { return used_; }
  std::uint64_t available() const { return bytes_ - used_; }
  // Stores `data` at address (inside the region; throws InvalidArgument
  // otherwise), word by word in address order (see above).
  void write(Address address, std::span<const std::byte> data);

 private:
  struct Free {
    std::uint64_t bytes;
    void operator()(std::uint64_t* p) const;
  };
  std::uint64_t bytes_;
  std::uint64_t used_ = kRegionHeaderBytes;
  std::unique_ptr<std::uint64_t[], Free> words_;
};

}  // namespace forein::net::remote
