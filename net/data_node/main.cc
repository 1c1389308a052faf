// forein-data-node: a data node of Switch-delta's ordered writes
// (docs/network.md, "forein-data-node"; paper 002, sections II and III):
// an append-only log served over UDP (LOG_APPEND, LOG_READ, LOG_FETCH,
// STATS). Prints `listening HOST:PORT` and then `ready` once it serves; on
// SIGINT or SIGTERM stops cleanly and prints its counters as one JSON
// line. Bad flags or an address in use: a message on stderr and exit 2.
#include <signal.h>

#include <cstdio>
#include <exception>
#include <string>

#include "common/cli.h"
#include "data_node/options.h"
#include "data_node/server.h"

int main(int argc, char** argv) {
  using namespace forein::net::data_node;
  Options options;
  std::string error;
  bool help = false;
  if (!parse_options(argc, argv, &options, &error, &help)) {
    return forein::net::cli::refuse("forein-data-node", error);
  }
  if (help) {
    std::fputs(usage_text("forein-data-node").c_str(), stdout);
    return 0;
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
    std::fprintf(stderr, "forein-data-node: %s\n", e.what());
    return 2;
  }
}
