// forein-agent: the switch agent standalone (docs/network.md, "forein-agent").
//
//   forein-agent --listen HOST:PORT [--token T]
//
// Prints `listening HOST:PORT` and then `ready` once serving; SIGINT or SIGTERM shut it down.
#include <pthread.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <string>
#include <string_view>
#include <thread>

#include "agent_service.h"
#include "common/cli.h"

int main(int argc, char** argv) {
  namespace cli = forein::net::cli;
  std::string listen = "127.0.0.1:50051";
  forein::net::AgentOptions options;
  if (const char* env = std::getenv("FOREIN_AGENT_TOKEN"); env != nullptr) options.token = env;
  CLI::App app{"forein-agent: the switch agent's gRPC control plane, standalone (docs/network.md)", "forein-agent"};
  cli::configure(app);
  cli::address(app, "--listen", &listen, 0, "address to serve (port 0: a free one)")->default_str(listen);
  cli::text(app, "--token", &options.token,
            "require `authorization: Bearer TOKEN` on every call (default $FOREIN_AGENT_TOKEN); needed for any "
            "address that is not loopback")
      ->type_name("TOKEN");
  app.footer("Prints `listening HOST:PORT` and `ready` when serving; SIGINT/SIGTERM stop it.\n");
  if (const auto exit_code = cli::run(app, argc, argv)) return *exit_code;
  // Exit 1, as an address that cannot be bound: the flags are well formed.
  if (!forein::net::is_loopback_listen(listen) && options.token.empty()) {
    std::fprintf(stderr,
                 "forein-agent: --listen %s is not a loopback address: give --token TOKEN (or "
                 "FOREIN_AGENT_TOKEN) so that callers must present it\n",
                 listen.c_str());
    return 1;
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
