#include "kv_server/data.h"

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>

#include "forein/error.h"
#include "protocol/dataset.h"

namespace forein::net::kv {

namespace {

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

Rows generated_rows(std::uint64_t first, std::uint64_t end) {
  Rows rows;
  rows.reserve(end > first ? end - first : 0);
  for (std::uint64_t i = first; i < end; ++i) rows.emplace_back(dataset_key(i), dataset_value(i));
  return rows;
}

Rows load_data_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw IoError("cannot open data file " + path + ": " + std::strerror(errno));
  Rows rows;
  std::string line;
  std::uint64_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.empty() || line[0] == '#') continue;
    const auto where = [&] { return path + ":" + std::to_string(lineno) + ": "; };
    const std::size_t tab = line.find('\t');
    if (tab == std::string::npos) throw InvalidArgument(where() + "expected HEXKEY<TAB>VALUE");
    if (tab % 2 != 0) throw InvalidArgument(where() + "odd number of hex digits in the key");
    std::string key(tab / 2, '\0');
    for (std::size_t i = 0; i < key.size(); ++i) {
      const int hi = hex_digit(line[2 * i]), lo = hex_digit(line[2 * i + 1]);
      if (hi < 0 || lo < 0) throw InvalidArgument(where() + "key is not hex");
      key[i] = static_cast<char>(hi * 16 + lo);
    }
    rows.emplace_back(std::move(key), line.substr(tab + 1));
  }
  if (in.bad()) throw IoError("cannot read data file " + path + ": " + std::strerror(errno));
  std::stable_sort(rows.begin(), rows.end(),
                   [](const auto& a, const auto& b) { return a.first < b.first; });
  const auto dup = std::adjacent_find(rows.begin(), rows.end(),
                                      [](const auto& a, const auto& b) { return a.first == b.first; });
  if (dup != rows.end()) {
    static const char* kHex = "0123456789abcdef";
    std::string hex;
    for (unsigned char c : dup->first) {
      hex += kHex[c >> 4];
      hex += kHex[c & 15];
    }
    throw InvalidArgument(path + ": key " + hex + " given twice");
  }
  return rows;
}

}  // namespace forein::net::kv
