// forein-kv-server: the papers' server (docs/network.md, "forein-kv-server").
// Prints `listening HOST:PORT` and then `ready` once it serves; on SIGINT or SIGTERM stops cleanly
// and prints its counters as one JSON line. Bad flags, an unknown backend or
// an address in use: a message on stderr and exit code 2. Metadata mode
// (--mode metadata): a data node that does not answer the start-up replay
// of its log, exit code 1.
#include <sched.h>
#include <sys/resource.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <exception>
#include <string>

#include "common/cli.h"
#include "forein/offload/registry.h"
#include "protocol/dataset.h"
#include "kv_server/data.h"
#include "kv_server/log_catchup.h"
#include "kv_server/options.h"
#include "kv_server/server.h"

namespace {

int fail(const std::string& message) {
  std::fprintf(stderr, "forein-kv-server: %s\n", message.c_str());
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace forein::net::kv;
  ServerOptions options;
  std::string error;
  bool help = false;
  if (!parse_options(argc, argv, &options, &error, &help)) {
    return forein::net::cli::refuse("forein-kv-server", error);
  }
  if (help) {
    std::fputs(usage_text("forein-kv-server").c_str(), stdout);
    return 0;
  }
  // A backend the server can look keys up with (start hints, or none).
  try {
    forein::offload::backend_for_lookups(options.backend);
  } catch (const std::exception& e) {
    return fail(e.what());
  }
  if (!options.agent.empty() && !have_agent_client()) {
    return fail("--agent: this build has no gRPC agent client (net/agent)");
  }
  if (!options.memif_socket.empty() && !have_memif_port()) {
    return fail("--memif: this build has no DPDK (libdpdk-dev)");
  }

  if (options.memif_core >= 0) {
    // --memif-core N: the threads started from here on (EAL, gRPC, the
    // offload manager's, the UDP workers) inherit a mask without N; the
    // memif poll thread then takes N alone (MemifPort).
    cpu_set_t cpus;
    const auto n = static_cast<unsigned>(options.memif_core);
    if (n >= CPU_SETSIZE || sysconf(_SC_NPROCESSORS_ONLN) <= static_cast<long>(n)) {
      return fail("--memif-core: CPU " + std::to_string(n) + " is not online");
    }
    if (sched_getaffinity(0, sizeof cpus, &cpus) == 0 && CPU_ISSET(n, &cpus) && CPU_COUNT(&cpus) > 1) {
      CPU_CLR(n, &cpus);
      sched_setaffinity(0, sizeof cpus, &cpus);
    }
    // ... and at nice +10 (Linux: per thread, inherited by new threads):
    // the offload manager's refreshes yield to what shares their CPUs (a
    // switch, a load generator); the poll thread takes the old nice back.
    errno = 0;
    const int base = getpriority(PRIO_PROCESS, 0);
    if (errno == 0 && setpriority(PRIO_PROCESS, 0, std::min(base + 10, 19)) == 0) options.memif_nice = base;
  }
  // Every thread started from here on inherits the blocked set; the main
  // thread takes the signals with sigwait().
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);

  try {
    const Rows rows =
        options.mode == ServerMode::kMetadata ? Rows{}  // rebuilt from the data nodes' logs
        : Server::loads_generated(options)      ? Rows{}  // streamed into the tree by Server
        : options.data_file.empty()
            ? generated_rows(forein::net::shard_first(options.shard, options.shards, options.keys),
                             forein::net::shard_first(options.shard + 1, options.shards, options.keys))
            : load_data_file(options.data_file);
    Server server(options, rows);
    const std::uint16_t port = server.bind();
    server.start();
    // Two lines: where (the kernel's port for port 0), then `ready`.
    std::printf("listening %s:%u\nready\n", options.listen_host.c_str(), static_cast<unsigned>(port));
    std::fflush(stdout);
    int sig = 0;
    while (sigwait(&signals, &sig) != 0) {
    }
    server.stop();
    std::printf("%s\n", server.stats_json().c_str());
    std::fflush(stdout);
    return 0;
  } catch (const RecoveryError& e) {
    std::fprintf(stderr, "forein-kv-server: %s\n", e.what());
    return 1;
  } catch (const std::exception& e) {
    return fail(e.what());
  }
}
