// forein-kv-server: the papers' server (docs/network.md, "forein-kv-server").
// Prints `listening HOST:PORT` and then `ready` once it serves; on SIGINT or SIGTERM stops cleanly
// and prints its counters as one JSON line. Bad flags, an unknown backend or
// an address in use: a message on stderr and exit code 2. Metadata mode
// (--mode metadata): a data node that does not answer the start-up replay
// of its log, exit code 1.
#include <signal.h>

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
