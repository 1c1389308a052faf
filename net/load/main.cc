// forein-load: the load client for forein-kv-server (docs/network.md,
// "forein-load"). Exit 0 after a run, 2 if it could not start (bad flags,
// unreachable address), 1 if --verify found a wrong answer.
#include <cstdio>
#include <exception>
#include <iostream>
#include <memory>
#include <random>

#include "common/cli.h"
#include "load/engine.h"
#include "load/options.h"
#include "load/remote_read.h"
#include "load/report.h"
#ifdef FOREIN_LOAD_WITH_AGENT
#include "load/agent_hints.h"
#endif

int main(int argc, char** argv) {
  using namespace forein::net::load;
  LoadOptions options;
  std::string error;
  bool help = false;
  if (!parse_options(argc, argv, &options, &error, &help)) {
    return forein::net::cli::refuse("forein-load", error);
  }
  if (help) {
    std::cout << usage_text("forein-load");
    return 0;
  }
  if (!options.seed_given) {
    options.seed = (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  }
  RunReport report;
  try {
    // --agent: the client plays the switch's part, hinting from the image
    // the agent holds (an unreachable agent only means no hints).
    std::unique_ptr<HintSource> hints;
    if (!options.agent.empty()) {
#ifdef FOREIN_LOAD_WITH_AGENT
      hints = std::make_unique<AgentHints>(options.agent, options.agent_token, options.index_id);
#else
      std::cerr << "forein-load: --agent: built without the gRPC control plane (net/agent)\n";
      return 2;
#endif
    }
    report = options.remote_read ? run_remote_read(options) : run_load(options, hints.get());
  } catch (const std::exception& e) {
    std::cerr << "forein-load: " << e.what() << "\n";
    return 2;
  }
  std::cout << format_report(report) << std::flush;
  return options.verify && report.wrong > 0 ? 1 : 0;
}
