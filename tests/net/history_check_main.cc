// forein-history-check FILE...: checks forein-load --history files
// (docs/network.md, "The history file"): write-only / write-heavy
// histories for linearizability (history_check.h), secondary-index ones
// (SW/SR lines) for "reads see every acknowledged write"
// (sidx_history_check.h). Prints one summary line per file (and, on a
// failure, what failed). Exit 0 if every file passes, 1 if one does not
// (or the linearizability search gave up), 2 on a usage error or an
// unreadable or malformed file.
#include <cstdio>
#include <exception>
#include <string>

#include "history_check.h"
#include "sidx_history_check.h"

int main(int argc, char** argv) {
  if (argc < 2 || std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h") {
    std::fprintf(argc < 2 ? stderr : stdout,
                 "usage: forein-history-check FILE...\n"
                 "  checks forein-load --history files: linearizability (write-only, write-heavy), reads see\n"
                 "  every acknowledged write (secondary-index); exit 0 all pass, 1 one does not, 2 bad usage or file\n");
    return argc < 2 ? 2 : 0;
  }
  int rc = 0;
  for (int i = 1; i < argc; ++i) {
    try {
      const auto h = forein::testing::read_history(argv[i]);
      if (forein::testing::is_sidx_history(h.ops)) {
        const auto run = forein::testing::sidx_run_of(h.header);
        if (!run) {
          std::fprintf(stderr, "forein-history-check: %s: secondary-index lines, but the header names no keys=N "
                               "and secondary_keys=S\n", argv[i]);
          rc = 2;
          continue;
        }
        const auto c = forein::testing::check_sidx_history(h.ops, *run);
        std::printf("%s: %s\n", argv[i], c.summary().c_str());
        if (!c.ok) {
          std::printf("%s", c.explanation.c_str());
          if (rc == 0) rc = 1;
        }
        continue;
      }
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
