// forein-history-check FILE...: checks forein-load --history files for
// linearizability (history_check.h; docs/network.md, "The history file").
// Prints one summary line per file (and, if not linearizable, the failing
// key's explanation). Exit 0 if every file is linearizable, 1 if one is
// not (or the search gave up), 2 on a usage error or an unreadable or
// malformed file.
#include <cstdio>
#include <exception>
#include <string>

#include "history_check.h"

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fprintf(argc < 2 ? stderr : stdout,
                 "usage: forein-history-check FILE...\n"
                 "  checks forein-load --history files for linearizability; exit 0 all linearizable,\n"
                 "  1 one is not, 2 bad usage or file\n");
    return argc < 2 ? 2 : 0;
  }
  int rc = 0;
  for (int i = 1; i < argc; ++i) {
    try {
      const auto h = forein::testing::read_history(argv[i]);
      const auto c = forein::testing::check_history(h.ops);
      std::printf("%s: %s\n", argv[i], c.summary().c_str());
      if (!c.linearizable) {
        std::printf("%s", c.explanation.c_str());
        if (rc == 0) rc = 1;
      }
    } catch (const std::exception& e) {
      std::fprintf(stderr, "forein-history-check: %s\n", e.what());
      rc = 2;
    }
  }
  return rc;
}
