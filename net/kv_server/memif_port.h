// forein-kv-server's DPDK port (--memif PATH, docs/network.md,
// "forein-kv-server"): a memif client of the socket forein-switch serves
// (`--server-port memif:PATH`), beside the kernel UDP sockets. On that
// link the server is A.B.C.1 and the switch A.B.C.2. A poll thread
// receives Ethernet/IPv4/UDP frames to A.B.C.1, answers each request with
// the kernel workers' PacketHandler (same stats) and sends the reply
// frames back (IPv4 fragments when larger than one 1500-byte MTU frame);
// it backs off when idle like forein-switch. DPDK stays inside
// memif_port.cc (built only when libdpdk is found; memif_port_none.cc
// otherwise).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <string>

#include "kv_server/handler.h"
#include "kv_server/stats.h"

namespace forein::net::kv {

// Whether this build has DPDK: --memif works.
bool have_memif_port();

struct MemifConfig {
  std::string socket;    // the socket file forein-switch serves
  std::string net;       // A.B.C: the server is A.B.C.1, the switch A.B.C.2
  std::uint32_t ip = 0;  // A.B.C.1, host order
  int core = -1;         // the poll thread's CPU (--memif-core); -1: not pinned
  int nice = std::numeric_limits<int>::min();  // the poll thread's nice (min: unchanged)
};

class MemifPort {
 public:
  // Starts the EAL (--no-huge --no-pci -m 256 --file-prefix
  // forein-kv-PID -l 0, plus the memif vdev) and the port, which joins
  // the socket. The calling thread must already block the signals the
  // process waits for (EAL threads inherit the mask). Throws
  // std::runtime_error (no socket file, EAL or port failure).
  MemifPort(const MemifConfig& config, PacketHandler& handler, ServerStats& stats);
  // stop(), the port closed, rte_eal_cleanup.
  ~MemifPort();
  MemifPort(const MemifPort&) = delete;
  MemifPort& operator=(const MemifPort&) = delete;

  // Starts the poll thread.
  void start();
  // Stops and joins the poll thread; idempotent.
  void stop();
  // The "memif" object of the stats: socket, address, link, rx, tx,
  // replies, rejoins, dropped, fragments_sent, dropped_by_reason.
  Json json() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace forein::net::kv
