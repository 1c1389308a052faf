#include "counters.h"

#include "forein/control/v1/control.pb.h"
#include "ports.h"

namespace forein::net::sw {
namespace {

constexpr const char* kPortNames[2] = {"client", "server"};

}  // namespace

void add_port_stats(const Side* sides, forein::control::v1::StatsReply* reply) {
  auto v = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  for (int i = 0; i < 2; ++i) {
    const PortCounters& c = sides[i].counters;
    auto* p = reply->add_ports();
    p->set_port(kPortNames[i]);
    p->set_iface(sides[i].iface);
    p->set_rx(v(c.rx));
    p->set_forwarded(v(c.forwarded));
    p->set_hinted(v(c.hinted));
    p->set_misses(v(c.misses));
    p->set_malformed(v(c.malformed));
    p->set_dropped(v(c.dropped));
    for (const auto& r : kDropReasons) (*p->mutable_dropped_by_reason())[r.name] = v(c.*r.counter);
  }
}

std::string counters_json(const Side* sides, const SwitchTotals& totals) {
  const std::vector<ServerCounters>& servers = totals.servers;
  auto v = [](const std::atomic<std::uint64_t>& a) { return std::to_string(a.load(std::memory_order_relaxed)); };
  std::string s = "{";
  std::uint64_t tot[6] = {0, 0, 0, 0, 0, 0};
  for (int i = 0; i < 2; ++i) {
    const PortCounters& c = sides[i].counters;
    s += "\"" + std::string(kPortNames[i]) + "\":{\"iface\":\"" + sides[i].iface + "\",\"rx\":" + v(c.rx) +
         ",\"forwarded\":" + v(c.forwarded) + ",\"hinted\":" + v(c.hinted) + ",\"misses\":" + v(c.misses) +
         ",\"malformed\":" + v(c.malformed) + ",\"dropped\":" + v(c.dropped) +
         ",\"arp_replies\":" + v(c.arp_replies) + ",\"dropped_by_reason\":{";
    for (const auto& r : kDropReasons) {
      s += std::string(&r == kDropReasons ? "\"" : ",\"") + r.name + "\":" + v(c.*r.counter);
    }
    s += "}},";
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
  if (!totals.members.empty()) s += "," + totals.members;
  s += "}";
  return s;
}

}  // namespace forein::net::sw
