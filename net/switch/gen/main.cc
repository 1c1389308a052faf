// forein-switch-gen: a DPDK traffic generator on forein-switch's memif
// ports (docs/network.md, "memif ports and forein-switch-gen").
//
//   forein-switch-gen --client-socket PATH --server-socket PATH [--keys N]
//                     [--dist uniform|zipf] [--seconds S | --count N]
//                     [--wait-hints] [--garbage N] [--switch-pid PID] ...
//
// Joins both memif sockets as their client; sends protocol GETs from the
// client side's A.B.C.1 to the switch's A.B.C.2 in bursts, at most --window
// in flight; receives what the switch forwards out of its server side,
// checks each frame and counts the hinted ones; prints one JSON line.
//
// --mode client joins only the client socket and checks the REPLYs a
// forein-kv-server --memif behind the switch sends back (client.h); with
// --scan N it sends SCANs of N entries instead of GETs.
//
// Files: options (flags, EAL args), ports (EAL, memif client ports),
// frames (GET template, garbage, the check of forwarded frames), traffic
// (garbage, probes, the measured run), client (--mode client: probes, run,
// reply check, report), server_stats (the server's STATS over UDP),
// cpu_time (CPU seconds of a process).
#include <unistd.h>

#include <rte_eal.h>

#include <cstdio>
#include <string>

#include "client.h"
#include "dpdk/eal.h"
#include "common/json.h"
#include "cpu_time.h"
#include "frames.h"
#include "options.h"
#include "ports.h"
#include "traffic.h"

namespace swgen = forein::net::swgen;

namespace {

using forein::net::Json;
using forein::net::json_fixed;
using forein::net::json_line;

std::string report(const swgen::GenOptions& o, const swgen::RunResult& r, const swgen::GarbageSent& g,
                   unsigned probe_rounds, double switch_cpu, double gen_cpu) {
  const swgen::Tally& t = r.total;
  const double pps = r.seconds > 0 ? static_cast<double>(r.window.received) / r.seconds : 0;
  Json s = Json::object();
  s["sent"] = t.sent;
  s["received"] = t.received;
  s["valid"] = t.valid;
  s["invalid"] = t.received - t.valid;
  s["hinted"] = t.hinted;
  s["lost"] = t.sent - t.received;
  s["seconds"] = json_fixed(r.seconds, 3);
  s["window_received"] = r.window.received;
  s["pps"] = json_fixed(pps, 3);
  s["keys"] = o.keys;
  s["dist"] = o.dist == forein::net::load::Distribution::kZipf ? "zipf" : "uniform";
  s["burst"] = o.burst;
  s["window"] = o.window;
  s["probe_rounds"] = probe_rounds;
  s["stalled"] = r.stalled;
  Json garbage = Json::object();
  garbage["random"] = g.random;
  garbage["truncated"] = g.truncated;
  garbage["wrong_version"] = g.wrong_version;
  s["garbage"] = std::move(garbage);
  if (switch_cpu >= 0) {
    // Frames the switch forwarded per second of its CPU time: its rate on one core.
    s["switch_cpu_s"] = json_fixed(switch_cpu, 3);
    s["switch_pps_per_core"] =
        json_fixed(switch_cpu > 0 ? static_cast<double>(r.window.received) / switch_cpu : 0, 3);
  }
  s["gen_cpu_s"] = json_fixed(gen_cpu, 3);
  return json_line(s);
}

}  // namespace

int main(int argc, char** argv) {
  swgen::GenOptions o;
  if (const auto exit_code = swgen::parse_options(argc, argv, &o)) return *exit_code;
  if (!swgen::init_eal(o)) return 1;
  int rc = 1;
  {
    swgen::Ports ports;
    swgen::Addresses addresses;
    if (!swgen::start_ports(o, &ports) || !swgen::make_addresses(o, ports.port, &addresses)) {
      // (a message was printed)
    } else if (o.mode == swgen::Mode::kClient) {
      rc = swgen::run_client(o, ports, addresses);
    } else {
      swgen::Traffic traffic(o, ports, addresses);
      const swgen::GarbageSent garbage = traffic.send_garbage(o.garbage);
      // The probes also prove the garbage before them was handled: the
      // switch takes each port's frames in order.
      if (!traffic.probe(o.wait_hints, o.probe_timeout_ms)) {
        std::fprintf(stderr, "forein-switch-gen: no %s after %u ms of probes\n",
                     o.wait_hints ? "hinted GETs back from the switch" : "GETs back from the switch",
                     o.probe_timeout_ms);
      } else {
        const double switch_before = o.switch_pid > 0 ? swgen::process_cpu_seconds(o.switch_pid) : -1;
        const double gen_before = swgen::process_cpu_seconds(static_cast<int>(::getpid()));
        const swgen::RunResult r = traffic.run();
        // CPU over the window and the drain (the drain is idle back-off).
        const double switch_cpu =
            switch_before >= 0 ? swgen::process_cpu_seconds(o.switch_pid) - switch_before : -1;
        const double gen_cpu = swgen::process_cpu_seconds(static_cast<int>(::getpid())) - gen_before;
        std::printf("%s\n", report(o, r, garbage, traffic.probe_rounds(), switch_cpu, gen_cpu).c_str());
        std::fflush(stdout);
        rc = 0;
      }
    }
    swgen::stop_ports(ports);
  }
  forein::net::dpdk::stop_eal();
  return rc;
}
