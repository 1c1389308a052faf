// data_node_logs.h: what the Switch-delta end-to-end tests compare reads
// against: every entry of every data node's log, fetched directly from the
// nodes (LOG_FETCH from log id 1 until no more), the ground truth that a
// read through the switch or a metadata node must agree with.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "protocol/packet.h"
#include "protocol/visibility.h"
#include "udp_client.h"

namespace forein::testing {

// LOG_FETCH of at most `count` entries from log id `first`.
inline net::Packet log_fetch_request(std::uint32_t first, std::uint32_t count, std::uint64_t seq = 0) {
  net::Packet p;
  p.op = net::Op::kLogFetch;
  p.seq = seq;
  p.value = std::string{static_cast<char>(first >> 24), static_cast<char>(first >> 16),
                        static_cast<char>(first >> 8), static_cast<char>(first)};
  p.count = count;
  return p;
}

// Every entry of one data node's log from log id 1 on, paging with
// `count` through `call`; *pages = the LOG_FETCH replies it took. Checks
// each page is whole and only the last lacks the more flag.
inline std::vector<net::ScanEntry> fetch_all(const std::function<net::Packet(const net::Packet&)>& call,
                                             std::uint32_t count, std::size_t* pages) {
  std::vector<net::ScanEntry> all;
  std::uint32_t next = 1;
  *pages = 0;
  for (;;) {
    const net::Packet r = call(log_fetch_request(next, count, *pages + 1));
    REQUIRE(r.op == net::Op::kReply);
    REQUIRE(r.status == net::Status::kOk);
    const auto entries = net::decode_scan_entries(r.value);
    REQUIRE(entries);
    REQUIRE(entries->size() == r.count);
    ++*pages;
    all.insert(all.end(), entries->begin(), entries->end());
    if (!r.more) break;
    REQUIRE(!entries->empty());
    next += static_cast<std::uint32_t>(entries->size());
  }
  return all;
}

// key -> (ts, location) of each key's newest entry over data nodes
// 0..nodes-1; client_of(i) gives a UdpClient (pointer-like) to node i.
// With every, also each entry's (key, encoded location).
template <typename ClientOf>
std::map<std::string, net::StampedLocation> newest_in_logs(
    int nodes, ClientOf&& client_of, std::set<std::pair<std::string, std::string>>* every = nullptr) {
  std::map<std::string, net::StampedLocation> newest;
  for (int i = 0; i < nodes; ++i) {
    auto c = client_of(i);
    std::uint32_t from = 1;
    for (;;) {
      net::Packet p = request(net::Op::kLogFetch, "");
      p.value = std::string{static_cast<char>(from >> 24), static_cast<char>(from >> 16),
                            static_cast<char>(from >> 8), static_cast<char>(from)};
      p.count = 256;
      const net::Packet r = c->call(p);
      REQUIRE(r.op == net::Op::kReply);
      const auto entries = net::decode_scan_entries(r.value);
      REQUIRE(entries);
      for (const auto& e : *entries) {
        const auto s = net::decode_stamped(e.value);
        REQUIRE(s);
        auto& n = newest[e.key];
        if (s->ts > n.ts) n = *s;
        if (every != nullptr) every->emplace(e.key, net::encode_location(s->location));
        from = s->location.log_id + 1;
      }
      if (!r.more || entries->empty()) break;
    }
  }
  return newest;
}

}  // namespace forein::testing
