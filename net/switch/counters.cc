#include "counters.h"

#include "ports.h"

namespace forein::net::sw {

std::string counters_json(const Side* sides, const SwitchTotals& totals) {
  const std::vector<ServerCounters>& servers = totals.servers;
  auto v = [](const std::atomic<std::uint64_t>& a) { return std::to_string(a.load(std::memory_order_relaxed)); };
  std::string s = "{";
  std::uint64_t tot[6] = {0, 0, 0, 0, 0, 0};
  const char* names[2] = {"client", "server"};
  for (int i = 0; i < 2; ++i) {
    const PortCounters& c = sides[i].counters;
    s += "\"" + std::string(names[i]) + "\":{\"iface\":\"" + sides[i].iface + "\",\"rx\":" + v(c.rx) +
         ",\"forwarded\":" + v(c.forwarded) + ",\"hinted\":" + v(c.hinted) + ",\"misses\":" + v(c.misses) +
         ",\"malformed\":" + v(c.malformed) + ",\"dropped\":" + v(c.dropped) +
         ",\"arp_replies\":" + v(c.arp_replies) + ",\"dropped_by_reason\":{\"not_ipv4\":" + v(c.not_ipv4) +
         ",\"bad_ip\":" + v(c.bad_ip) + ",\"not_for_switch\":" + v(c.not_for_switch) +
         ",\"no_room\":" + v(c.no_room) + ",\"tx_full\":" + v(c.tx_full) + ",\"fragment\":" + v(c.fragment) + "}},";
    const std::atomic<std::uint64_t>* t[6] = {&c.rx, &c.forwarded, &c.hinted, &c.misses, &c.malformed, &c.dropped};
    for (int k = 0; k < 6; ++k) tot[k] += t[k]->load(std::memory_order_relaxed);
  }
  s += "\"rx\":" + std::to_string(tot[0]) + ",\"forwarded\":" + std::to_string(tot[1]) +
       ",\"hinted\":" + std::to_string(tot[2]) + ",\"misses\":" + std::to_string(tot[3]) +
       ",\"malformed\":" + std::to_string(tot[4]) + ",\"dropped\":" + std::to_string(tot[5]) +
       ",\"lookups\":" + std::to_string(totals.lookups) + ",\"stage\":\"" + totals.stage +
       "\",\"deeper\":" + std::to_string(totals.deeper);
  if (!servers.empty()) {
    s += ",\"servers\":[";
    for (std::size_t i = 0; i < servers.size(); ++i) {
      s += (i > 0 ? ",{\"port\":" : "{\"port\":") + std::to_string(servers[i].port) +
           ",\"requests\":" + std::to_string(servers[i].requests) +
           ",\"lookups\":" + std::to_string(servers[i].lookups) + "}";
    }
    s += "]";
  }
  s += "}";
  return s;
}

}  // namespace forein::net::sw
