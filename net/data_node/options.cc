#include "data_node/options.h"

#include <string_view>

#include "common/parse.h"

namespace forein::net::data_node {

namespace {

// HOST:PORT; PORT may be 0.
bool parse_host_port(std::string_view text, std::string* host, std::uint16_t* port) {
  const std::size_t colon = text.rfind(':');
  if (colon == std::string_view::npos || colon == 0) return false;
  std::uint32_t p = 0;
  if (!parse_number<std::uint32_t>(text.substr(colon + 1), 0, 65535, &p)) return false;
  *host = std::string(text.substr(0, colon));
  *port = static_cast<std::uint16_t>(p);
  return true;
}

}  // namespace

std::string usage_text(const char* argv0) {
  return std::string("usage: ") + argv0 +
         " [--listen HOST:PORT] [--node I/D] [--keys N] [--record-bytes B] [--threads T]\n"
         "  --listen HOST:PORT: the UDP address to serve (default 127.0.0.1:0; PORT 0 picks a free port)\n"
         "  --node I/D: data node I of D (0 <= I < D <= 65536, default 0/1); it owns the slots s\n"
         "              (slot_key(key).slot) with s % D == I\n"
         "  --keys N: preload every dataset key i < N (N <= 4294967295) whose slot it owns, in key\n"
         "            order, with dataset_record(i, 0, B), each appended like a write\n"
         "  --record-bytes B: the preloaded records' size, 1..4096 (default 128)\n"
         "  --threads T: UDP worker threads, 1..64 (default 1)\n";
}

bool parse_options(int argc, char** argv, Options* out, std::string* error, bool* help) {
  *help = false;
  for (int i = 1; i < argc; ++i) {
    std::string_view arg = argv[i];
    std::string_view value;
    bool has_inline = false;
    if (arg.starts_with("--")) {
      const std::size_t eq = arg.find('=');
      if (eq != std::string_view::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
        has_inline = true;
      }
    }
    if (arg == "--help" || arg == "-h") {
      *help = true;
      return true;
    }
    const bool known = arg == "--listen" || arg == "--node" || arg == "--keys" ||
                       arg == "--record-bytes" || arg == "--threads";
    if (!known) {
      *error = "unknown argument '" + std::string(arg) + "'";
      return false;
    }
    if (!has_inline) {
      if (i + 1 >= argc) {
        *error = std::string(arg) + " needs a value";
        return false;
      }
      value = argv[++i];
    }
    const auto bad = [&](const char* what) {
      *error = "bad value '" + std::string(value) + "' for " + std::string(arg) + ": " + what;
      return false;
    };
    if (arg == "--listen") {
      if (!parse_host_port(value, &out->listen_host, &out->listen_port)) {
        return bad("expected HOST:PORT (PORT 0 picks a free port)");
      }
    } else if (arg == "--node") {
      const std::size_t slash = value.find('/');
      if (slash == std::string_view::npos ||
          !parse_number<std::uint32_t>(value.substr(slash + 1), 1, kMaxDataNodes, &out->nodes) ||
          !parse_number<std::uint32_t>(value.substr(0, slash), 0, out->nodes - 1, &out->node)) {
        return bad("expected I/D with 0 <= I < D <= 65536");
      }
    } else if (arg == "--keys") {
      if (!parse_number<std::uint64_t>(value, 0, 0xFFFFFFFFull, &out->keys)) {
        return bad("expected a number of keys, 0..4294967295");
      }
    } else if (arg == "--record-bytes") {
      if (!parse_number<std::size_t>(value, 1, kMaxRecordBytes, &out->record_bytes)) {
        return bad("expected 1..4096");
      }
    } else if (arg == "--threads") {
      if (!parse_number<unsigned>(value, 1, 64, &out->threads)) return bad("expected 1..64");
    }
  }
  return true;
}

}  // namespace forein::net::data_node
