// fuzz_history_line: forein-load's --history line parser
// (net/load/history.cc, read by forein-history-check and the end-to-end
// tests' linearizability check) on arbitrary bytes. A line it accepts must
// format back to a line that parses to the same operation; a line it
// refuses must say why.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "load/history.h"

namespace {

void require(bool ok) {
  if (!ok) std::abort();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using forein::net::load::format_history_line;
  using forein::net::load::parse_history_line;
  const std::string_view line(reinterpret_cast<const char*>(data), size);
  std::string why;
  const auto op = parse_history_line(line, &why);
  if (!op) {
    require(!why.empty());
    return 0;
  }
  const std::string again = format_history_line(*op);
  std::string why2;
  const auto op2 = parse_history_line(again, &why2);
  require(op2.has_value());
  require(*op2 == *op);
  require(format_history_line(*op2) == again);
  return 0;
}
