// DPDK start-up the network programs share (forein-switch,
// forein-switch-gen, forein-kv-server --memif): the EAL on shared cores
// without hugepages, and one port with one queue pair.
#pragma once

#include <pthread.h>
#include <sched.h>
#include <unistd.h>

#include <rte_eal.h>
#include <rte_errno.h>
#include <rte_ethdev.h>
#include <rte_log.h>
#include <rte_mbuf.h>

#include <cstdint>
#include <filesystem>
#include <system_error>
#include <string>
#include <vector>

namespace forein::net::dpdk {

// Removes the runtime directories (/var/run/dpdk/PREFIX-PID) of earlier
// runs whose process is gone: stop_eal removes a run's own on exit, this
// those of runs killed with SIGKILL.
inline void sweep_stale_runtime_dirs(const std::string& prefix) {
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/var/run/dpdk", ec)) {
    const std::string name = entry.path().filename().string();
    if (name.size() <= prefix.size() + 1 || name.compare(0, prefix.size() + 1, prefix + "-") != 0) continue;
    const std::string pid = name.substr(prefix.size() + 1);
    if (pid.find_first_not_of("0123456789") != std::string::npos) continue;
    std::error_code ignored;
    if (!std::filesystem::exists("/proc/" + pid, ignored)) std::filesystem::remove_all(entry.path(), ignored);
  }
}

// argv[0] and the default EAL options: no hugepages, no PCI, 256 MiB, a
// file prefix of this process's own (prefix-PID), lcore 0. Sweeps the
// runtime directories that dead runs with the same prefix left.
inline std::vector<std::string> default_eal_args(const std::string& program, const std::string& prefix) {
  sweep_stale_runtime_dirs(prefix);
  return {program, "--no-huge", "--no-pci", "-m", "256", "--file-prefix",
          prefix + "-" + std::to_string(::getpid()), "-l", "0"};
}

// rte_eal_init with args, DPDK's messages on stderr (stdout carries the
// programs' `listening`/`ready` and JSON lines). The EAL pins the calling
// thread to its lcore; on shared cores it gets its old affinity back, and
// threads started later inherit that. False with rte_errno set on failure.
inline bool start_eal(std::vector<std::string> args) {
  cpu_set_t cpus;
  const bool have_cpus = sched_getaffinity(0, sizeof cpus, &cpus) == 0;
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  rte_openlog_stream(stderr);
  if (rte_eal_init(static_cast<int>(argv.size()), argv.data()) < 0) return false;
  if (have_cpus) pthread_setaffinity_np(pthread_self(), sizeof cpus, &cpus);
  return true;
}

// rte_eal_cleanup, then the EAL's runtime directory (/var/run/dpdk/PREFIX:
// its config, the multi-process socket, about 3 MB of tmpfs), which DPDK
// 22.11 leaves behind: one a run with the default per-process prefix.
// Only a primary process removes it (secondaries share the primary's).
inline void stop_eal() {
  const bool primary = rte_eal_process_type() == RTE_PROC_PRIMARY;
  const std::string dir = rte_eal_get_runtime_dir();
  rte_eal_cleanup();
  std::error_code ignored;
  if (primary && !dir.empty() && dir != "/") std::filesystem::remove_all(dir, ignored);
}

// Configures port with one rx and one tx queue of about `descriptors`
// entries each (rx buffers from pool); not started.
inline bool configure_port(std::uint16_t port, rte_mempool* pool, std::uint16_t descriptors) {
  rte_eth_conf conf{};
  if (rte_eth_dev_configure(port, 1, 1, &conf) != 0) return false;
  std::uint16_t rxd = descriptors, txd = descriptors;
  if (rte_eth_dev_adjust_nb_rx_tx_desc(port, &rxd, &txd) != 0) return false;
  const int socket = rte_eth_dev_socket_id(port);
  const unsigned sock = socket < 0 ? 0u : static_cast<unsigned>(socket);
  return rte_eth_rx_queue_setup(port, 0, rxd, sock, nullptr, pool) == 0 &&
         rte_eth_tx_queue_setup(port, 0, txd, sock, nullptr) == 0;
}

}  // namespace forein::net::dpdk
