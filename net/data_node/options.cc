#include "data_node/options.h"

#include "common/cli.h"

namespace forein::net::data_node {
namespace {

// Every flag, once: what --help prints and what parse_options takes.
void declare(CLI::App& app, Options* o) {
  cli::configure(app);
  app.description("forein-data-node: a Switch-delta data node, an append-only log of records (docs/network.md)");
  cli::host_port(app, "--listen", &o->listen_host, &o->listen_port, 0,
                 "the UDP address to serve (PORT 0 picks a free port)")
      ->default_str("127.0.0.1:0");
  cli::part_of(app, "--node", &o->node, &o->nodes, kMaxDataNodes, "I/D",
               "data node I of D; it owns the slots s (slot_key(key).slot) with s % D == I")
      ->default_str("0/1");
  cli::number<std::uint64_t>(app, "--keys", &o->keys, 0, 0xFFFFFFFFull,
                             "preload every dataset key i < N whose slot it owns, in key order, with "
                             "dataset_record(i, 0, B), each appended like a write");
  cli::number<std::size_t>(app, "--record-bytes", &o->record_bytes, 1, kMaxRecordBytes, "the preloaded records' size B")
      ->type_name("B");
  cli::number<unsigned>(app, "--threads", &o->threads, 1, 64, "UDP worker threads");
}

}  // namespace

std::string usage_text(const char* argv0) {
  Options o;
  CLI::App app{"", argv0};
  declare(app, &o);
  return app.help();
}

bool parse_options(int argc, char** argv, Options* out, std::string* error, bool* help) {
  CLI::App app{"", "forein-data-node"};
  declare(app, out);
  return cli::parse(app, argc, argv, error, help);
}

}  // namespace forein::net::data_node
