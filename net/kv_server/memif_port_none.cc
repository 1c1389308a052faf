// forein-kv-server built without DPDK: --memif is refused (main.cc).
#include <stdexcept>

#include "kv_server/memif_port.h"

namespace forein::net::kv {

bool have_memif_port() { return false; }

struct MemifPort::Impl {};

MemifPort::MemifPort(const MemifConfig&, PacketHandler&, ServerStats&) {
  throw std::runtime_error("--memif: this build has no DPDK (libdpdk-dev)");
}
MemifPort::~MemifPort() = default;
void MemifPort::start() {}
void MemifPort::stop() {}
Json MemifPort::json() const { return Json::object(); }

}  // namespace forein::net::kv
