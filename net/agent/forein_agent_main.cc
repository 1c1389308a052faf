// forein-agent: the switch agent standalone (docs/network.md, "forein-agent").
//
//   forein-agent --listen HOST:PORT [--token T]
//
// Prints `listening HOST:PORT` and then `ready` once serving; SIGINT or SIGTERM shut it down.
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <pthread.h>
#include <string>
#include <string_view>
#include <thread>

#include "agent_service.h"

namespace {

void usage(std::FILE* out) {
  std::fprintf(out,
               "usage: forein-agent [--listen HOST:PORT] [--token TOKEN]\n"
               "  --listen HOST:PORT  address to serve (default 127.0.0.1:50051; port 0: a free one)\n"
               "  --token TOKEN       require `authorization: Bearer TOKEN` on every call\n"
               "                      (default: $FOREIN_AGENT_TOKEN); needed for any\n"
               "                      address that is not loopback\n"
               "Prints `listening HOST:PORT` and `ready` when serving; SIGINT/SIGTERM stop it.\n");
}

}  // namespace

int main(int argc, char** argv) {
  std::string listen = "127.0.0.1:50051";
  forein::net::AgentOptions options;
  if (const char* env = std::getenv("FOREIN_AGENT_TOKEN"); env != nullptr) options.token = env;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      usage(stdout);
      return 0;
    }
    if ((arg == "--listen" || arg == "--token") && i + 1 < argc) {
      (arg == "--listen" ? listen : options.token) = argv[++i];
      continue;
    }
    std::fprintf(stderr, "forein-agent: unknown or incomplete argument '%s'\n", argv[i]);
    usage(stderr);
    return 2;
  }

  // Signals go to one waiting thread (blocked everywhere else, including
  // gRPC's threads, which inherit the mask).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);

  try {
    forein::net::AgentServer server(listen, options);
    const std::string host = listen.substr(0, listen.rfind(':'));
    std::printf("listening %s:%d\nready\n", host.c_str(), server.port());
    std::fflush(stdout);
    std::thread waiter([&] {
      int sig = 0;
      sigwait(&signals, &sig);
      server.shutdown();
    });
    server.wait();
    waiter.join();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
