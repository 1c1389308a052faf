// dpa: DPA-Store's learned index on a BlueField-3 DPA (DPA-Store,
// shared/papers/004_af7888c35286a936.txt; docs/dpa.md) -- the hardware's
// numbers and the index's geometry, each with its source. Everything in
// offload/backends/dpa/ (the start-hint backend) and dpa/store/ (the
// store, the DPA model, the hot-entry cache) takes its numbers from here.
//
// Section numbers below are the paper's.
#pragma once

#include <cstddef>
#include <cstdint>

namespace forein::offload::dpa {

// ---- The BlueField-3 DPA (sections 2.3, 4.2.2, 4.2.6, 4.2.7) ----

// DPA memory: "a dedicated 1 GiB region of the BlueField-3 DDR5 memory" (2.3).
inline constexpr std::uint64_t kDpaMemoryBytes = std::uint64_t{1} << 30;
// "average memory access times of 465 ns for DPA memory, compared with 910
// ns for DMA accesses to host memory" (4.2.6, citing Chen et al.).
inline constexpr double kDpaAccessNs = 465.0;
inline constexpr double kHostDmaNs = 910.0;
// An access that hits the DPA's shared L3 (4.2.6 replaces the root's first
// two cache lines by L3 accesses; the figure itself is lost from our copy
// of the text). An estimate, named as such wherever it is used.
inline constexpr double kDpaL3AccessNs = 50.0;
// Host-to-DPA copies: "192 MByte ... resulting in a host-to-DPA memory
// bandwidth of only 120 MByte/s" (4.2.7); stitched nodes travel at this rate.
inline constexpr double kHostToDpaBytesPerSecond = 120e6;
// Threads: 16 cores x 16 threads, "only 189 concurrent threads ... can be
// used" (2.3); 176 traversers on 11 cores, four stitchers on a dedicated
// core, four host-side patchers (4.2.2).
inline constexpr std::size_t kDpaThreads = 189;
inline constexpr std::size_t kTraverserThreads = 176;
inline constexpr std::size_t kStitcherThreads = 4;
inline constexpr std::size_t kPatcherThreads = 4;
// DPA receive queues: "The per-thread DPA receive queues (256 packets for
// each traverser) allow for a maximum number of 45,056 in-flight packets"
// (3.1.3).
inline constexpr std::size_t kReceiveQueuePackets = 256;

// ---- The packet engine and the clients (sections 4.1, 4.2.3, 4.2.9) ----

// The cards' packet ceilings, measured by the paper with "ping tests that
// return packets by the receiving DPA thread without memory access. For
// ping, the B3140L model reached 44.9 MOPS, whereas the B3220 delivered
// 69 % more throughput" (4.2.9). No request, whatever it does, gets past it.
inline constexpr double kPingOpsPerSecondB3140L = 44.9e6;
inline constexpr double kPingGainB3220 = 1.69;
// The network: "connected through a 100 Gb/s Dell PowerSwitch S5232F" (4.1).
inline constexpr double kLinkBitsPerSecond = 100e9;
// The paper's clients: "Each of the 6 client nodes are running 31 threads.
// Threads issue between 1 and 64 concurrent requests"; "a queue depth of 32
// is used for GET requests ... a queue depth of 18 for insert and range
// workloads" (4.2.3).
inline constexpr std::size_t kClientNodes = 6;
inline constexpr std::size_t kClientThreadsPerNode = 31;
inline constexpr std::size_t kGetQueueDepth = 32;
inline constexpr std::size_t kRangeInsertQueueDepth = 18;
// Frame sizes on the wire. The paper gives the MTU bound (64 pairs "within
// a 1500-byte maximum transmission unit", 3.1) but not the request layout:
// ESTIMATES, used only for the wire's serialization time at low load.
// Ethernet + IPv4 + UDP headers, FCS, preamble and inter-frame gap:
inline constexpr std::size_t kFrameOverheadBytes = 14 + 20 + 8 + 4 + 8 + 12;
// A request's payload (type, key, value field) and a pair's bytes in a
// RANGE response (a 64-bit key and a 64-bit value, 4.1).
inline constexpr std::size_t kRequestPayloadBytes = 1 + 8 + 8;
inline constexpr std::size_t kPairBytes = 16;
inline constexpr std::size_t kCacheLineBytes = 64;

// ---- The learned index (sections 3.1, 3.1.1, 3.2.1) ----

// "Inner nodes contain seven learned models" (3.1), each segment holding
// "at most 128 pivot keys and child pointers" (3.1.1); leaves hold at most
// 128 keys (3.1.1).
inline constexpr std::size_t kInnerSegments = 7;
inline constexpr std::size_t kSegmentPivots = 128;
inline constexpr std::size_t kLeafCapacity = 128;
// Error bounds (3.1.1): inner "at most two cache line accesses" over
// 8-byte pivots is a window of at most 9 pivots (2 x 4 + 1); leaf "at most
// three DMA-accessed cache lines" over 8-byte keys is at most 17 keys
// (2 x 8 + 1). 4.2.6's 4.5 cache lines per inner node (1 metadata + 1
// model + 1.5 pivots + 1 child) follows from the same figures.
inline constexpr std::uint32_t kDefaultEpsilonInner = 4;
inline constexpr std::uint32_t kDefaultEpsilonLeaf = 8;
// "When splitting becomes necessary, we limit segment sizes by a retrain
// bound (0.25 capacity)" (3.2.1): a leaf made by a split holds at most a
// quarter of its capacity, so later patches are absorbed without a split.
inline constexpr double kDefaultRetrainBound = 0.25;
// Insert-buffer entries per leaf. The text gives no figure; 16 entries of
// 16 bytes plus one op byte each, with the leaf's 64-byte metadata line,
// make a 384-byte leaf, which reproduces Table 1's DPA bytes per key for
// the uniform data sets (docs/dpa.md).
inline constexpr std::size_t kInsertBufferEntries = 16;

// ---- The hot-entry cache (section 3.1.2) ----

// "Each Bloom filter contains 256 bits"; three hashes ("three-way Bloom
// filter"); "96 entries per traverser thread" in buckets of "four KV
// pairs each", a bucket a cache line; 176 x 96 = 16,896 entries.
inline constexpr std::size_t kBloomBits = 256;
inline constexpr std::size_t kBloomHashes = 3;
inline constexpr std::size_t kHotEntriesPerThread = 96;
inline constexpr std::size_t kHotBucketPairs = 4;
inline constexpr std::size_t kHotBuckets = kHotEntriesPerThread / kHotBucketPairs;  // 24
inline constexpr std::size_t kHotEntriesTotal = kHotEntriesPerThread * kTraverserThreads;  // 16,896

// ---- Responses (section 3.1) ----

// "each packet carries at most 64 KV pairs to stay within a 1500-byte MTU".
inline constexpr std::size_t kMaxRangePairs = 64;

}  // namespace forein::offload::dpa
