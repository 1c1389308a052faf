#include "data_node/options.h"

#include "common/cli.h"
#include "protocol/secondary_index.h"

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
  app.add_option_function<std::string>(
         "--backups",
         [o](const std::string& v) {
           o->backups.clear();
           std::string_view rest(v);
           for (;;) {
             const std::size_t comma = rest.find(',');
             const std::string_view one = rest.substr(0, comma);
             std::string host;
             std::uint16_t port = 0;
             if (!cli::parse_host_port(one, 1, &host, &port)) {
               throw cli::bad("--backups", "'" + std::string(one) + "' is not HOST:PORT with PORT from 1 to 65535");
             }
             o->backups.emplace_back(one);
             if (comma == std::string_view::npos) break;
             rest = rest.substr(comma + 1);
           }
           if (o->backups.size() > kMaxBackups) {
             throw cli::bad("--backups", std::to_string(o->backups.size()) + " backups; at most " +
                                             std::to_string(kMaxBackups));
           }
         },
         "replication (paper V-D): this node is a primary and sends every LOG_APPEND's entry (LOG_REPLICATE) to "
         "these backups; the client's reply waits for --acks of them")
      ->type_name("H:P[,H:P...]");
  cli::number<unsigned>(app, "--acks", &o->acks, 1, static_cast<unsigned>(kMaxBackups),
                        "with --backups: backup ACKs awaited before the primary installs the entry and replies "
                        "(at most the number of backups)")
      ->default_str("1");
  app.add_flag("--backup", o->backup,
               "this node is a backup: it installs LOG_REPLICATE from its primary and refuses LOG_APPEND (give it "
               "the primary's --node, --keys and --record-bytes: the preload is the same entries)");
  cli::number<std::uint32_t>(app, "--replicate-timeout-us", &o->replicate_timeout_us, 100, 10000000,
                             "with --backups: resend a LOG_REPLICATE not ACKed after U us, then 2U, 4U ...; after " +
                                 std::to_string(kReplicateSends) + " sends (255 U) the write fails (SERVER_ERROR)")
      ->type_name("U")
      ->default_str("1000");
  app.add_flag("--secondary-index", o->secondary_index,
               "the secondary-index case study (paper VI-B, partial writes III-C): LOG_APPEND takes a secondary-index "
               "record and answers a partial entry (state partial), one timestamp counter orders every write, "
               "LOG_READ with an empty value reads a key's newest record; one data node only (--node 0/1), no "
               "replication");
  cli::number<std::uint64_t>(app, "--secondary-keys", &o->secondary_keys, 1, 0xFFFFFFFFull,
                             "with --secondary-index: the --keys preload gives key i the secondary key "
                             "secondary_key_of(i, 0, S); default --keys / 25, at least 1")
      ->type_name("S")
      ->default_str("");
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
  if (!cli::parse(app, argc, argv, error, help)) return false;
  if (*help) return true;
  if (out->backup && !out->backups.empty()) {
    *error = "--backup and --backups: a node is a primary (--backups) or a backup (--backup), not both";
    return false;
  }
  if (app.count("--acks") > 0 && out->backups.empty()) {
    *error = "--acks: needs --backups (a primary waits for its backups' ACKs)";
    return false;
  }
  if (app.count("--replicate-timeout-us") > 0 && out->backups.empty()) {
    *error = "--replicate-timeout-us: needs --backups";
    return false;
  }
  if (!out->backups.empty() && out->acks > out->backups.size()) {
    *error = "--acks: " + std::to_string(out->acks) + " ACKs from " + std::to_string(out->backups.size()) +
             " backup(s); at most the number of --backups";
    return false;
  }
  if (!out->secondary_index) {
    if (app.count("--secondary-keys") > 0) {
      *error = "--secondary-keys: needs --secondary-index";
      return false;
    }
    return true;
  }
  if (out->backup || !out->backups.empty()) {
    *error = std::string(out->backup ? "--backup" : "--backups") +
             " with --secondary-index: replication is not supported in the secondary-index mode";
    return false;
  }
  if (out->nodes != 1) {
    *error = "--node " + std::to_string(out->node) + "/" + std::to_string(out->nodes) +
             " with --secondary-index: one data node only (--node 0/1; the paper's one data node: one timestamp "
             "counter orders every write of a primary key, and the primary index answers LOG_READ by key)";
    return false;
  }
  if (app.count("--secondary-keys") == 0) out->secondary_keys = default_secondary_keys(out->keys);
  return true;
}

}  // namespace forein::net::data_node
