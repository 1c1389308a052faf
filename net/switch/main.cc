// forein-switch: the DPDK data plane (docs/network.md, "forein-switch").
//
//   forein-switch [--agent-listen HOST:PORT] [--agent-token T] [--index ID]
//                 [--client-port tap|memif:PATH] [--server-port tap|memif:PATH]
//                 [--client-iface NAME] [--server-iface NAME]
//                 [--client-net A.B.C] [--server-net A.B.C] [-- EAL ARGS...]
//
// Two DPDK ports, each a TAP device (net_tap) whose kernel side gets
// A.B.C.1/24 while the switch answers ARP for A.B.C.2: clients send to the
// client side's .2, the switch forwards to the server side's .1 (the kernel
// UDP forein-kv-server listening there) with its own server-side .2 as the
// source, and maps the replies back. Either side may instead be a memif
// socket the switch serves (--client-port/--server-port memif:PATH) whose
// DPDK peer uses the same addresses without ARP. Requests get the hint
// trailer from the backend image the in-process agent holds; a miss
// forwards unchanged.
//
// Prints `listening HOST:PORT` (the agent) and `ready` once serving;
// SIGINT/SIGTERM stop it and it prints its counters as one JSON line.
//
// Files: options (flags, EAL args), ports (EAL, TAP and memif ports), frames (ARP,
// address translation, checksums), forward (per-frame decision, hints),
// poll (the burst loop), image_feed (agent image -> data plane), counters.
#include <pthread.h>

#include <rte_eal.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <exception>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "agent_service.h"
#include "dpdk/eal.h"
#include "counters.h"
#include "forward.h"
#include "image_feed.h"
#include "options.h"
#include "poll.h"
#include "ports.h"

namespace sw = forein::net::sw;

int main(int argc, char** argv) {
  // Switch-delta's recovery time runs from here (EAL, ports, then the
  // metadata nodes' sync: visibility_plane.h).
  const auto started = std::chrono::steady_clock::now();
  sw::Options o;
  if (const auto exit_code = sw::parse_options(argc, argv, &o)) return *exit_code;
  sw::Side sides[2];
  if (!sw::init_sides(o, sides)) return 2;

  // Signals go to one waiting thread (blocked in every other thread,
  // DPDK's and gRPC's included, which inherit the mask).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  if (!sw::init_eal(o)) return 1;
  int rc = 0;
  {
    if (!sw::start_ports(sides)) {
      forein::net::dpdk::stop_eal();
      return 1;
    }

    forein::offload::Published<sw::Image> image(std::make_shared<const sw::Image>());
    std::unique_ptr<sw::Forwarder> forwarder =
        o.backend.empty()
            ? std::make_unique<sw::Forwarder>(sides, &image,
                                              sw::Routing{o.servers, o.keys, o.service_port, o.hints, o.stage})
            : std::make_unique<sw::Forwarder>(sides, sw::VisibilityRouting{o.data_nodes, o.metadata_nodes, o.keys,
                                                                           o.service_port, o.visibility, o.slots,
                                                                           started});
    sw::Forwarder& forward = *forwarder;
    forein::net::AgentOptions agent_options;
    agent_options.token = o.token;
    agent_options.port_stats = [&sides](forein::net::control::StatsReply* reply) { sw::add_port_stats(sides, reply); };
    const std::uint64_t index = o.index;
    const std::size_t images = std::max<std::size_t>(1, o.servers.size());
    agent_options.hint_lookups = [&forward, index, images](std::uint64_t id) -> std::uint64_t {
      return id >= index && id - index < images ? forward.server_lookups[id - index].load(std::memory_order_relaxed)
                                                : 0;
    };
    try {
      forein::net::AgentServer server(o.agent_listen, agent_options);
      // A chain's later switches fetch the core switch's images over gRPC
      // (every 50 ms); otherwise the in-process agent's, every 5 ms.
      std::unique_ptr<sw::RemoteImages> remote;
      if (!o.image_from.empty()) remote = std::make_unique<sw::RemoteImages>(o.image_from, o.token);
      sw::ImageFeed feed(remote ? sw::ImageSource([&remote](std::uint64_t i) { return remote->fetch(i); })
                                : sw::local_images(server),
                         index, images, std::chrono::milliseconds(remote ? 50 : 5), &image);
      std::atomic<bool> stop{false};
      std::thread waiter([&] {
        int sig = 0;
        sigwait(&signals, &sig);
        stop.store(true);
      });
      const std::string host = o.agent_listen.substr(0, o.agent_listen.rfind(':'));
      if (forward.plane() != nullptr) {
        std::fprintf(stderr, "forein-switch: switch_visibility, %zu data node(s), %zu metadata node(s), table %s\n",
                     o.data_nodes.size(), o.metadata_nodes.size(), o.visibility ? "on" : "off");
      }
      std::fprintf(stderr, "forein-switch: clients send to %s (%s), the server listens on %s (%s)\n",
                   sw::ip_string(sides[0].switch_ip).c_str(), sides[0].iface.c_str(),
                   sw::ip_string(sides[1].kernel_ip).c_str(), sides[1].iface.c_str());
      std::printf("listening %s:%d\nready\n", host.c_str(), server.port());
      std::fflush(stdout);
      sw::poll_ports(sides, forward, stop);
      waiter.join();
      feed.stop();
      server.shutdown();
      sw::SwitchTotals totals;
      totals.lookups = forward.lookups.load();
      for (std::size_t i = 0; i < o.servers.size(); ++i) {
        totals.servers.push_back({o.servers[i], forward.routed[i].load(), forward.server_lookups[i].load()});
      }
      constexpr const char* kStages[] = {"core", "aggregation", "edge"};
      totals.stage = o.stage < 0 ? "all" : kStages[o.stage];
      totals.deeper = forward.deeper.load();
      totals.reads = forward.reads.load();
      totals.reads_rewritten = forward.reads_rewritten.load();
      if (forward.plane() != nullptr) totals.members = forward.plane()->json();
      std::printf("%s\n", sw::counters_json(sides, totals).c_str());
      std::fflush(stdout);
    } catch (const std::exception& e) {
      std::fprintf(stderr, "forein-switch: %s\n", e.what());
      rc = 1;
    }
    sw::stop_ports(sides);
  }
  forein::net::dpdk::stop_eal();
  return rc;
}
