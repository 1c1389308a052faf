// forein-load: the load client for forein-kv-server (docs/network.md,
// "forein-load"). Exit 0 after a run, 2 if it could not start (bad flags,
// unreachable address), 1 if --verify found a wrong answer.
#include <cstdio>
#include <exception>
#include <iostream>
#include <random>

#include "load/engine.h"
#include "load/options.h"
#include "load/report.h"

int main(int argc, char** argv) {
  using namespace forein::net::load;
  LoadOptions options;
  std::string error;
  bool help = false;
  if (!parse_options(argc, argv, &options, &error, &help)) {
    std::cerr << "forein-load: " << error << "\n" << usage_text(argv[0]);
    return 2;
  }
  if (help) {
    std::cout << usage_text(argv[0]);
    return 0;
  }
  if (!options.seed_given) {
    options.seed = (static_cast<std::uint64_t>(std::random_device{}()) << 32) ^ std::random_device{}();
  }
  RunReport report;
  try {
    report = run_load(options);
  } catch (const std::exception& e) {
    std::cerr << "forein-load: " << e.what() << "\n";
    return 2;
  }
  std::cout << format_report(report) << std::flush;
  return options.verify && report.wrong > 0 ? 1 : 0;
}
