// forein_word: the engine's offload words and word intervals for values in
// PostgreSQL's text forms, for comparison with the PostgreSQL access
// method's (forein_debug_word, forein_debug_page_intervals) by
// regress/t/010_words.pl.
//
// Reads tab-separated lines from stdin, writes one answer line per line:
//   W <type> <value>                         -> <word>
//   I <type> <lo> <lo_owns> <hi> <hi_owns>   -> <lo> <hi>|inf
// type: int2 int4 int8 date timestamp timestamptz uuid text. Values are in
// PostgreSQL's output forms with DateStyle ISO and TimeZone UTC (dates
// 'YYYY-MM-DD[ BC]', timestamps 'YYYY-MM-DD HH:MM:SS[.ffffff][+00][ BC]',
// 'infinity', '-infinity'); text is hex-encoded bytes. In an I line a bound
// is "-" when the node has none (leftmost/rightmost) and "\N" for a NULL
// key (word 2^64-1); owns is t or f.
//
// The words come from the engine's key encoding (forein/key.h: encode_*,
// word_of), the intervals from forein/word.h's rule, so this checks that
// the engine and the AM agree on both.
#include <charconv>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <limits>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "forein/key.h"
#include "forein/word.h"

namespace {

using forein::Word;

std::vector<std::string> split_tabs(const std::string& line) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const std::size_t tab = line.find('\t', start);
    out.push_back(line.substr(start, tab == std::string::npos ? std::string::npos : tab - start));
    if (tab == std::string::npos) return out;
    start = tab + 1;
  }
}

std::int64_t parse_int(std::string_view s) {
  std::int64_t v = 0;
  const auto [p, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (ec != std::errc() || p != s.data() + s.size()) throw std::invalid_argument("bad integer: " + std::string(s));
  return v;
}

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's
// days_from_civil); y is astronomical (1 BC = 0).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
  y -= m <= 2;
  const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
  const unsigned yoe = static_cast<unsigned>(y - era * 400);
  const unsigned doy = (153 * (m > 2 ? m - 3 : m + 9) + 2) / 5 + d - 1;
  const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
  return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

const std::int64_t kPgEpochDays = days_from_civil(2000, 1, 1);

// A strictly shaped ISO date/timestamp: returns days since 2000-01-01 and
// microseconds into the day.
std::pair<std::int64_t, std::int64_t> parse_datetime(std::string s, bool with_time) {
  bool bc = false;
  if (s.size() > 3 && s.compare(s.size() - 3, 3, " BC") == 0) {
    bc = true;
    s.resize(s.size() - 3);
  }
  if (s.size() > 3 && s.compare(s.size() - 3, 3, "+00") == 0) s.resize(s.size() - 3);
  const std::size_t dash1 = s.find('-', 1);
  if (dash1 == std::string::npos || s.size() < dash1 + 6) throw std::invalid_argument("bad date: " + s);
  std::int64_t y = parse_int(std::string_view(s).substr(0, dash1));
  const auto m = static_cast<unsigned>(parse_int(std::string_view(s).substr(dash1 + 1, 2)));
  const auto d = static_cast<unsigned>(parse_int(std::string_view(s).substr(dash1 + 4, 2)));
  if (bc) y = 1 - y;
  const std::int64_t days = days_from_civil(y, m, d) - kPgEpochDays;
  std::int64_t micros = 0;
  if (with_time) {
    const std::string_view t = std::string_view(s).substr(dash1 + 7);
    if (t.size() < 8 || t[2] != ':' || t[5] != ':') throw std::invalid_argument("bad time: " + s);
    micros = ((parse_int(t.substr(0, 2)) * 60 + parse_int(t.substr(3, 2))) * 60 + parse_int(t.substr(6, 2))) *
             1000000;
    if (t.size() > 8) {
      if (t[8] != '.' || t.size() > 15) throw std::invalid_argument("bad fraction: " + s);
      std::string frac(t.substr(9));
      frac.resize(6, '0');
      micros += parse_int(frac);
    }
  }
  return {days, micros};
}

std::string unhex(std::string_view h) {
  if (h.size() % 2 != 0) throw std::invalid_argument("odd hex length");
  std::string out;
  for (std::size_t i = 0; i < h.size(); i += 2) {
    unsigned v = 0;
    const auto [p, ec] = std::from_chars(h.data() + i, h.data() + i + 2, v, 16);
    if (ec != std::errc() || p != h.data() + i + 2) throw std::invalid_argument("bad hex");
    out.push_back(static_cast<char>(v));
  }
  return out;
}

// The engine key of a value: the encoding whose word_of is the value's word.
std::string engine_key(const std::string& type, const std::string& v) {
  if (type == "int2") return forein::encode_int16(static_cast<std::int16_t>(parse_int(v)));
  if (type == "int4") return forein::encode_int32(static_cast<std::int32_t>(parse_int(v)));
  if (type == "int8") return forein::encode_int64(parse_int(v));
  if (type == "date") {
    if (v == "infinity") return forein::encode_int32(std::numeric_limits<std::int32_t>::max());
    if (v == "-infinity") return forein::encode_int32(std::numeric_limits<std::int32_t>::min());
    return forein::encode_int32(static_cast<std::int32_t>(parse_datetime(v, false).first));
  }
  if (type == "timestamp" || type == "timestamptz") {
    if (v == "infinity") return forein::encode_timestamp(std::numeric_limits<std::int64_t>::max());
    if (v == "-infinity") return forein::encode_timestamp(std::numeric_limits<std::int64_t>::min());
    const auto [days, micros] = parse_datetime(v, true);
    return forein::encode_timestamp(days * 86400 * 1000000 + micros);
  }
  if (type == "uuid") {
    std::string h;
    for (const char c : v) {
      if (c != '-') h.push_back(c);
    }
    if (h.size() != 32) throw std::invalid_argument("bad uuid: " + v);
    return unhex(h);
  }
  if (type == "text") return unhex(v);
  throw std::invalid_argument("unknown type: " + type);
}

Word word(const std::string& type, const std::string& v) {
  if (v == "\\N") return FOREIN_WORD_MAX;  // NULL keys sort last: the last word
  return forein::word_of(engine_key(type, v));
}

}  // namespace

int main() {
  std::string line;
  int lineno = 0;
  while (std::getline(std::cin, line)) {
    ++lineno;
    try {
      const std::vector<std::string> f = split_tabs(line);
      if (f.size() == 3 && f[0] == "W") {
        std::cout << word(f[1], f[2]) << '\n';
      } else if (f.size() == 6 && f[0] == "I") {
        const bool has_lo = f[2] != "-";
        const bool has_hi = f[4] != "-";
        const ForeinWordInterval iv =
            forein_word_interval(has_lo, has_lo ? word(f[1], f[2]) : 0, f[3] == "t", has_hi,
                                 has_hi ? word(f[1], f[4]) : 0, f[5] == "t");
        std::cout << iv.lo << ' ';
        if (iv.hi_inf) {
          std::cout << "inf\n";
        } else {
          std::cout << iv.hi << '\n';
        }
      } else {
        throw std::invalid_argument("expected a W or I line");
      }
    } catch (const std::exception& e) {
      std::cerr << "forein_word: line " << lineno << ": " << e.what() << '\n';
      return 2;
    }
  }
  return 0;
}
