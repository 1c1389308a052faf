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
  auto v = [](const std::atomic<std::uint64_t>& a) { return a.load(std::memory_order_relaxed); };
  Json s = Json::object();
  std::uint64_t tot[6] = {0, 0, 0, 0, 0, 0};
  for (int i = 0; i < 2; ++i) {
    const PortCounters& c = sides[i].counters;
    Json& port = s[kPortNames[i]] = Json::object();
    port["iface"] = sides[i].iface;
    port["rx"] = v(c.rx);
    port["forwarded"] = v(c.forwarded);
    port["hinted"] = v(c.hinted);
    port["misses"] = v(c.misses);
    port["malformed"] = v(c.malformed);
    port["dropped"] = v(c.dropped);
    port["arp_replies"] = v(c.arp_replies);
    Json& by_reason = port["dropped_by_reason"] = Json::object();
    for (const auto& r : kDropReasons) by_reason[r.name] = v(c.*r.counter);
    const std::atomic<std::uint64_t>* t[6] = {&c.rx, &c.forwarded, &c.hinted, &c.misses, &c.malformed, &c.dropped};
    for (int k = 0; k < 6; ++k) tot[k] += v(*t[k]);
  }
  s["rx"] = tot[0];
  s["forwarded"] = tot[1];
  s["hinted"] = tot[2];
  s["misses"] = tot[3];
  s["malformed"] = tot[4];
  s["dropped"] = tot[5];
  s["lookups"] = totals.lookups;
  s["stage"] = totals.stage;
  s["deeper"] = totals.deeper;
  s["reads"] = totals.reads;
  s["reads_rewritten"] = totals.reads_rewritten;
  if (!totals.servers.empty()) {
    Json& servers = s["servers"] = Json::array();
    for (const ServerCounters& server : totals.servers) {
      Json one = Json::object();
      one["port"] = server.port;
      one["requests"] = server.requests;
      one["lookups"] = server.lookups;
      servers.push_back(std::move(one));
    }
  }
  if (totals.members.is_object()) s.update(totals.members);
  return json_line(s);
}

}  // namespace forein::net::sw
