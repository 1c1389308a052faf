// The workload generator: which operation comes next and on which key.
//
// Mixes (percent): YCSB A read 50 / update 50; B read 95 / update 5; C read
// 100; D read 95 / insert 5 (reads from the latest distribution unless
// --dist says otherwise); E scan 95 / insert 5 (scan length uniform in
// 1..100, YCSB's default); F read 50 / read-modify-write 50; getputdel get
// 90 / put of a new key 5 / delete 5 (docs/forein-experiments.md's Fig 10
// mix at dynamic ratio 0.1: half the updates grow the tree, half shrink it).
// Switch-delta's mixes (paper 002, V-B): write-only write 100; write-heavy
// read 50 / write 50, where a write is an ordered write (LOG_APPEND, then
// META_PUT when the switch did not take it) and a read is META_GET then
// LOG_READ (load/ordered.h); secondary-index (VI-B) read 50 / write 50,
// its reads SIDX_READ then LOG_READs (load/sidx_ops.h; the engine draws
// a read's secondary key from a generator of its own over the secondary
// keys).
//
// Keys are indexes into the data set (protocol/dataset.h). Reads, updates
// and deletes draw from the N loaded keys: uniform; Zipf (Gray et al.,
// tests/support/zipf.h), ranks scattered over the keys by a fixed affine
// permutation so hot keys are not neighbours; latest: the newest key minus
// a Zipf rank (the newest is the last insert issued, N-1 before any).
// Inserts take keys N, N+1, ... in order.
#pragma once

#include <cstdint>
#include <memory>
#include <random>

#include "load/options.h"
#include "support/zipf.h"

namespace forein::net::load {

// kWrite: an ordered write (write-only, write-heavy); those workloads'
// reads are kRead, run as META_GET + LOG_READ.
enum class OpKind : std::uint8_t { kRead, kUpdate, kInsert, kScan, kRmw, kDelete, kWrite };
inline constexpr std::size_t kOpKinds = 7;
const char* to_string(OpKind k);

// Percentages of each OpKind, summing to 100.
struct Mix {
  unsigned percent[kOpKinds] = {};
};
Mix mix_for(Workload w);

struct Operation {
  OpKind kind = OpKind::kRead;
  std::uint64_t key = 0;        // data set index
  std::uint32_t scan_len = 0;   // kScan: entries wanted
};

inline constexpr std::uint32_t kMaxScanLength = 100;

class WorkloadGenerator {
 public:
  WorkloadGenerator(Workload w, Distribution d, std::uint64_t keys, double theta, std::uint64_t seed);
  // The same workload with its own random stream (the Zipf table, whose
  // set-up sums over every key, is copied, not recomputed).
  WorkloadGenerator(const WorkloadGenerator& other, std::uint64_t seed);

  Operation next();

  // Keys handed out for inserts so far: [keys, keys + inserts()).
  std::uint64_t inserts() const { return next_insert_ - keys_; }
  std::uint64_t keys() const { return keys_; }

  // A key from the distribution (exposed for the tests).
  std::uint64_t draw_key();
  // The fixed permutation of Zipf ranks over [0, keys).
  std::uint64_t scatter(std::uint64_t rank) const {
    return static_cast<std::uint64_t>(static_cast<unsigned __int128>(rank % keys_) * multiplier_ % keys_);
  }

 private:
  Mix mix_;
  Distribution dist_;
  std::uint64_t keys_;
  std::uint64_t next_insert_;
  std::uint64_t multiplier_ = 1;
  std::mt19937_64 rng_;
  std::unique_ptr<forein::testing::ZipfGenerator> zipf_;
};

}  // namespace forein::net::load
