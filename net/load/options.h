// forein-load's command line (docs/network.md, "forein-load").
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "protocol/visibility.h"

namespace forein::net::load {

// kWriteOnly / kWriteHeavy run Switch-delta's ordered-write protocol
// (LOG_APPEND, META_PUT, META_GET, LOG_READ; load/ordered.h) instead of
// the KV server's GET/PUT; kSecondaryIndex its secondary-index case study
// (LOG_APPEND of a SidxRecord, META_PUT; SIDX_READ then LOG_READs;
// load/sidx_ops.h).
enum class Workload : std::uint8_t { kA, kB, kC, kD, kE, kF, kGetPutDel, kWriteOnly, kWriteHeavy, kSecondaryIndex };
enum class Distribution : std::uint8_t { kUniform, kZipf, kLatest };

// --record-bytes bounds: record_version needs 27 bytes (the head); 4096
// keeps a LOG_APPEND well inside one datagram.
inline constexpr std::size_t kMinRecordBytes = 27;
inline constexpr std::size_t kMaxRecordBytes = 4096;

const char* to_string(Workload w);
// Whether w runs Switch-delta's ordered writes (write-only, write-heavy,
// secondary-index).
bool is_ordered(Workload w);
const char* to_string(Distribution d);

struct LoadOptions {
  std::string target_host;
  std::uint16_t target_port = 0;
  std::uint64_t keys = 0;                  // the server's data set: dataset_key(0 .. keys-1)
  Workload workload = Workload::kC;
  Distribution dist = Distribution::kUniform;
  double theta = 0.99;                     // Zipf exponent (--zipf), 0 < theta <= 2
  double seconds = 10;
  unsigned outstanding = 16;               // requests in flight, 1..4096
  bool verify = false;
  std::uint32_t timeout_ms = 200;          // per attempt
  std::uint32_t retries = 3;               // extra attempts after a timeout
  std::uint64_t seed = 0;
  bool seed_given = false;                 // else drawn from random_device
  // --agent: hints from the image forein-agent holds for index_id (the
  // client plays the switch's part); empty: requests carry no hints.
  std::string agent;                       // HOST:PORT
  std::string agent_token;                 // bearer token for the agent's calls
  std::uint64_t index_id = 0;              // --index; kDatasetIndexId unless given
  // write-only / write-heavy: the records written (dataset_record(i, v,
  // record_bytes), protocol/visibility.h), 27..4096 bytes.
  std::size_t record_bytes = kRecordBytes;
  // --history FILE (write-only / write-heavy): one line per ordered
  // operation (load/history.h) for an offline linearizability check.
  std::string history;
  // --workload secondary-index: writes move primary key i to secondary
  // key secondary_key_of(i, v, secondary_keys) (protocol/secondary_index.h;
  // --secondary-keys, default default_secondary_keys(keys), as the data
  // node's preload); reads ask for sidx_read_count primary keys
  // (--sidx-read-count, 1..kMaxSidxReadCount, the paper's 10).
  std::uint64_t secondary_keys = 0;
  std::uint32_t sidx_read_count = 10;
  // --route-by-key N (forein-kv-server --engine dpa, DPA-Store's routing):
  // each request goes to target_port + traverser_of(key, 176) % N, the port
  // of the key's traverser thread; 0: every request to target_port.
  unsigned route_by_key = 0;
  // --remote-read (docs/remote-read.md): the target is a memory node
  // (forein-mem-server, or a switch in front of K of them); reads walk the
  // remote tree one READ per node (load/remote_read.h), updates are PUTs
  // to the tree's owner. Workloads a, b and c.
  bool remote_read = false;
  std::uint32_t shards = 1;  // --shards K: the memory nodes holding dataset shards 0..K-1
};

// --remote-read's limit on --outstanding (one thread per walk in flight).
inline constexpr unsigned kMaxRemoteOutstanding = 256;

// Parses argv. On a bad command line returns false with a message in
// *error (the caller prints it with the usage and exits 2). --help sets
// *help and returns true.
bool parse_options(int argc, char** argv, LoadOptions* out, std::string* error, bool* help);

std::string usage_text(const char* argv0);

// "HOST:PORT" -> host and port (1..65535); false if malformed.
bool split_host_port(const std::string& s, std::string* host, std::uint16_t* port);

}  // namespace forein::net::load
