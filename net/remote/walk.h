// The client's walk of a remote tree (docs/remote-read.md, "Walk"), one
// READ per node, independent of the transport: the caller's ReadFn issues
// one READ (a local copy, a UDP request, an RDMA READ).
//
// A lookup starts at the root or at a hint (any address: the switch's
// node, a stale one, garbage), checks every node it reads (magic, version
// even, checksum, shape, the level it expects, key >= lo), moves right
// when the key is at or past the node's hi, READs a node again when it was
// torn (odd version or bad checksum) and a checked node pointed to it,
// restarts from the root on anything else, and finally reads the value
// record and checks it (magic, checksum, the key). It never returns a value that did not check; it
// gives up (kGaveUp) after a bounded number of READs, so garbage cannot
// make it loop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "remote/node_layout.h"
#include "remote/region.h"

namespace forein::net::remote {

// One READ of `len` bytes at `address` into out; false when it failed
// (refused, timed out): the walk treats that like bytes that do not check.
using ReadFn = std::function<bool(Address address, std::size_t len, std::byte* out)>;

struct WalkerOptions {
  // READs one lookup may issue; 0: 4 * height + 8 (height from the header).
  std::uint32_t max_reads = 0;
  // Right moves in a row before the walk restarts from the root: a few
  // follow a split; a long run is a hint far left of the key.
  std::uint32_t max_sibling_run = 4;
  // READs of the same node again after a torn one, before a restart from
  // the root. Only for nodes a checked node pointed to (nodes never move),
  // never for the hint.
  std::uint32_t max_retries = 4;
  // Header READs open() tries before it fails.
  std::uint32_t header_tries = 8;
};

enum class LookupStatus : std::uint8_t {
  kFound,
  kNotFound,  // a checked leaf whose range holds the key does not have it
  kGaveUp,    // no checked answer within max_reads (or no header)
};
const char* to_string(LookupStatus s);

struct WalkCounters {
  std::uint64_t reads = 0;          // READs issued (nodes, records, the header)
  std::uint64_t bytes = 0;          // bytes those READs returned
  std::uint64_t failed_reads = 0;   // READs the ReadFn refused
  std::uint64_t odd_versions = 0;   // node read mid-write
  std::uint64_t bad_checksums = 0;  // torn or corrupt bytes (nodes and records)
  std::uint64_t rejected = 0;       // everything else that did not check: magic, shape, level, lo, key
  std::uint64_t retries = 0;        // torn node READ again
  std::uint64_t fallbacks = 0;      // the hint was rejected: restarted from the root
  std::uint64_t restarts = 0;       // restarts from the root after the hint (or the root) was taken
  std::uint64_t sibling_moves = 0;
  std::uint64_t header_reads = 0;   // header READs (also in reads)

  void add(const WalkCounters& o);
};

struct LookupResult {
  LookupStatus status = LookupStatus::kGaveUp;
  std::string value;             // kFound: the checked record's value
  Address record = 0;            // kFound: where that record is
  std::uint32_t record_version = 0;
  Address leaf = 0;              // kFound, kNotFound: the checked leaf that answered
  bool hint_taken = false;       // the hint checked and the walk went on from it
  WalkCounters counters;
};

class Walker {
 public:
  explicit Walker(ReadFn read, WalkerOptions options = {});

  // READs the region header (root, height, geometry); false when no try
  // checked. lookup() opens first if needed, and again after seeing the
  // root split (a right move at the root's level).
  bool open();
  bool is_open() const { return open_; }
  const RegionHeader& header() const { return header_; }

  // `hint` 0: from the root.
  LookupResult lookup(std::uint64_t key, Address hint = 0);

  // Sums over every lookup (and open) so far.
  const WalkCounters& totals() const { return totals_; }

 private:
  bool open_counted(WalkCounters* c);
  bool read(Address a, std::size_t len, std::byte* out, WalkCounters* c);
  std::uint32_t read_budget() const;

  ReadFn read_;
  WalkerOptions options_;
  RegionHeader header_;
  bool open_ = false;
  bool stale_ = false;
  std::vector<std::byte> node_;
  std::vector<std::byte> record_;
  WalkCounters totals_;
};

}  // namespace forein::net::remote
