// forein-mem-server: a memory node of the remote-read path (docs/network.md,
// "forein-mem-server"). Prints `listening HOST:PORT` and `ready` once it
// serves; on SIGINT or SIGTERM stops and prints its counters as one JSON
// line. Bad flags: a message naming the flag, exit 2.
#include <signal.h>

#include <cstdio>
#include <exception>
#include <string>

#include "common/cli.h"
#include "mem_server/options.h"
#include "mem_server/server.h"

int main(int argc, char** argv) {
  using namespace forein::net::mem;
  MemOptions options;
  std::string error;
  bool help = false;
  if (!parse_options(argc, argv, &options, &error, &help)) return forein::net::cli::refuse("forein-mem-server", error);
  if (help) {
    std::fputs(usage_text("forein-mem-server").c_str(), stdout);
    return 0;
  }
  if (!options.memif_socket.empty() && !forein::net::kv::have_memif_port()) {
    std::fprintf(stderr, "forein-mem-server: --memif: this build has no DPDK (libdpdk-dev)\n");
    return 2;
  }
  if (!options.agent.empty() && !have_agent_client()) {
    std::fprintf(stderr, "forein-mem-server: --agent: this build has no gRPC agent client (net/agent)\n");
    return 2;
  }
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  signal(SIGPIPE, SIG_IGN);
  try {
    Server server(options);
    const std::uint16_t port = server.bind();
    server.start();
    std::printf("listening %s:%u\nready\n", options.listen_host.c_str(), static_cast<unsigned>(port));
    std::fflush(stdout);
    int sig = 0;
    while (sigwait(&signals, &sig) != 0) {
    }
    server.stop();
    std::printf("%s\n", server.stats_json().c_str());
    std::fflush(stdout);
    return 0;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "forein-mem-server: %s\n", e.what());
    return 2;
  }
}
