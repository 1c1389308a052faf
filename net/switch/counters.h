// forein-switch's per-port counters and the JSON line it prints on exit.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "common/json.h"

namespace forein::control::v1 {
class StatsReply;
}

namespace forein::net::sw {

// Per port, written by the data plane only (relaxed), read by anyone.
struct PortCounters {
  std::atomic<std::uint64_t> rx{0}, forwarded{0}, hinted{0}, misses{0}, malformed{0}, dropped{0},
      arp_replies{0};
  // dropped, by reason
  std::atomic<std::uint64_t> not_ipv4{0}, bad_ip{0}, not_for_switch{0}, no_room{0}, tx_full{0},
      fragment{0};
};

// The drop reasons by name, in the exit line's and Stats' order.
inline constexpr struct {
  const char* name;
  std::atomic<std::uint64_t> PortCounters::*counter;
} kDropReasons[] = {{"not_ipv4", &PortCounters::not_ipv4}, {"bad_ip", &PortCounters::bad_ip},
                    {"not_for_switch", &PortCounters::not_for_switch}, {"no_room", &PortCounters::no_room},
                    {"tx_full", &PortCounters::tx_full}, {"fragment", &PortCounters::fragment}};

// A load and a store, not an atomic add: each counter has one writer.
inline void bump(std::atomic<std::uint64_t>& c, std::uint64_t n = 1) {
  c.store(c.load(std::memory_order_relaxed) + n, std::memory_order_relaxed);
}

struct Side;

// One server's line in the exit JSON (with --servers).
struct ServerCounters {
  std::uint16_t port = 0;
  std::uint64_t requests = 0;  // routed to it
  std::uint64_t lookups = 0;   // image lookups for its requests
};

// What the whole switch counted beside its ports.
struct SwitchTotals {
  std::uint64_t lookups = 0;             // image lookups
  std::vector<ServerCounters> servers;   // with --servers
  const char* stage = "all";             // --stage
  std::uint64_t deeper = 0;              // chain stages: requests this switch's node sets took deeper
  std::uint64_t reads = 0;               // READ requests forwarded (remote reads)
  std::uint64_t reads_rewritten = 0;     // start READs whose address the image replaced
  Json members;                          // more members (an object, or null): Switch-delta's counters
};

// Both ports' counters, their totals and the switch's (a "servers" array
// when there are any; "stage" and "deeper"), as one JSON object.
std::string counters_json(const Side* sides, const SwitchTotals& totals);

// Both ports' counters for the agent's Stats reply (its `ports`).
void add_port_stats(const Side* sides, forein::control::v1::StatsReply* reply);

}  // namespace forein::net::sw
