// The rows forein-kv-server bulk-loads: the generated data set
// (protocol/dataset.h: dataset_key(i) -> dataset_value(i), 0 <= i < N) or a
// data file.
//
// Data file: one row per line, `HEXKEY<TAB>VALUE`. HEXKEY is the key's
// bytes in hex (an even number of digits, either case; an empty key is
// allowed); VALUE is the rest of the line up to the newline, taken as raw
// bytes (it may hold tabs; a trailing '\r' is kept). Empty lines and lines
// starting with '#' are skipped. Rows may come in any order; a key given
// twice is an error.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace forein::net::kv {

using Rows = std::vector<std::pair<std::string, std::string>>;

// dataset_key(i) -> dataset_value(i) for first <= i < end.
Rows generated_rows(std::uint64_t first, std::uint64_t end);

// Sorted rows of the file; throws forein::InvalidArgument naming the file
// and line on a malformed line or a duplicate key, forein::IoError if it
// cannot be read.
Rows load_data_file(const std::string& path);

}  // namespace forein::net::kv
