// forein-data-node's command line (docs/network.md, "forein-data-node").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace forein::net::data_node {

// The largest record a LOG_APPEND may carry (and --record-bytes may ask
// for); bigger ones get ERROR kBadRequest.
inline constexpr std::size_t kMaxRecordBytes = 4096;
// Data nodes: LogLocation's node field is 16 bits.
inline constexpr std::uint32_t kMaxDataNodes = 65536;
// Replication (paper section V-D): at most this many --backups.
inline constexpr std::size_t kMaxBackups = 8;
// A primary sends each LOG_REPLICATE this many times at most (the wait
// doubles after each: --replicate-timeout-us U, 2U, 4U ...), then gives
// up and answers the client SERVER_ERROR (255 U after the first send).
inline constexpr unsigned kReplicateSends = 8;

struct Options {
  std::string listen_host = "127.0.0.1";
  std::uint16_t listen_port = 0;  // 0: the kernel picks a free port
  // --node I/D: data node I of D; it owns slot s when data_node_of(s, D) == I.
  std::uint32_t node = 0;
  std::uint32_t nodes = 1;
  // --keys N: preload every dataset_key(i), 0 <= i < N, whose slot it owns.
  std::uint64_t keys = 0;
  std::size_t record_bytes = 128;  // --record-bytes: the preloaded records' size
  unsigned threads = 1;            // UDP worker threads, 1..64
  // Replication (section V-D): --backups H:P,...: this node is a primary
  // and replicates every LOG_APPEND to these; --acks N: ACKs awaited
  // before the client's reply (1 <= N <= backups); --backup: this node is
  // a backup (installs LOG_REPLICATE, refuses LOG_APPEND).
  std::vector<std::string> backups;  // HOST:PORT each, checked
  unsigned acks = 1;
  bool backup = false;
  std::uint32_t replicate_timeout_us = 1000;  // the first resend's wait
  // Switch-delta's secondary-index case study (paper VI-B, partial writes
  // III-C; protocol/secondary_index.h): --secondary-index makes LOG_APPEND
  // take SidxRecords and answer partial entries, one timestamp counter for
  // every write, a primary index for LOG_READ by key. --secondary-keys S:
  // the preload's secondary keys (0 until parse_options resolves the
  // default, default_secondary_keys(keys)).
  bool secondary_index = false;
  std::uint64_t secondary_keys = 0;
};

// Parses argv. On a bad command line returns false with a message in
// *error (the caller prints it with the usage and exits 2). --help sets
// *help and returns true.
bool parse_options(int argc, char** argv, Options* out, std::string* error, bool* help);

std::string usage_text(const char* argv0);

}  // namespace forein::net::data_node
