// Small pieces the benchmark programs in tests/bench/ share: timing,
// medians, the seeded key sets and rank permutations, value bytes, list
// flags, CSV files, the timed lookup pass (root start, given hints, a
// manager's hints computed in the loop) and main()'s error handling. Header-only, so every program
// keeps its own translation unit and its output.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <exception>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "forein/tree.h"

namespace forein::bench {

using Clock = std::chrono::steady_clock;

inline double seconds(Clock::duration d) { return std::chrono::duration<double>(d).count(); }
inline double seconds_since(Clock::time_point t0) { return seconds(Clock::now() - t0); }

// Median of v (0 for an empty v).
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}

// n distinct random 64-bit values from rng, sorted.
template <typename Rng>
std::vector<std::uint64_t> distinct_sorted_random(std::uint64_t n, Rng& rng) {
  std::vector<std::uint64_t> w;
  w.reserve(n);
  while (w.size() < n) {
    while (w.size() < n) w.push_back(rng());
    std::sort(w.begin(), w.end());
    w.erase(std::unique(w.begin(), w.end()), w.end());
  }
  return w;
}

// The key words of a data set of n keys: the same for a given (n, seed)
// in every program.
inline std::vector<std::uint64_t> random_words(std::uint64_t n, std::uint64_t seed) {
  std::mt19937_64 rng(seed * 0x9E3779B97F4A7C15ull + n);
  return distinct_sorted_random(n, rng);
}

// 0 .. n-1 shuffled by an mt19937_64 seeded with rng_seed (rank -> key).
inline std::vector<std::uint32_t> shuffled_indices(std::uint64_t n, std::uint64_t rng_seed) {
  std::vector<std::uint32_t> p(n);
  std::iota(p.begin(), p.end(), 0u);
  std::mt19937_64 rng(rng_seed);
  std::shuffle(p.begin(), p.end(), rng);
  return p;
}

// 8 little-endian bytes of v: the value stored under a key.
inline std::string value_bytes(std::uint64_t v) {
  std::string s(8, '\0');
  for (int i = 0; i < 8; ++i) s[static_cast<std::size_t>(i)] = static_cast<char>(v >> (8 * i));
  return s;
}

// The value of flag; fail(message) (which does not return) if s is not one.
template <typename T, typename Fail>
T parse_one(const std::string& s, const std::string& flag, Fail fail) {
  std::istringstream is(s);
  T x{};
  is >> x;
  if (!is || !is.eof()) fail("bad value '" + s + "' for " + flag);
  return x;
}

// "a,b,c" -> {a, b, c}; fail(message) (which does not return) on a bad
// item or an empty list.
template <typename T, typename Fail>
std::vector<T> parse_list(const std::string& s, const std::string& flag, Fail fail) {
  std::vector<T> v;
  std::stringstream ss(s);
  std::string item;
  while (std::getline(ss, item, ',')) {
    if (!item.empty()) v.push_back(parse_one<T>(item, flag, fail));
  }
  if (v.empty()) fail(flag + " needs at least one value");
  return v;
}

// A CSV file for writing, 6 significant digits; throws if it cannot be opened.
inline std::ofstream open_csv(const std::string& path) {
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path);
  f << std::setprecision(6);
  return f;
}

// One timed pass of lookups of every key: from the root (hints and
// manager null), from hints[i], or from the hint `manager` gives for the
// key inside the loop (the walk paid in the loop). Resets the tree's stats
// first; returns the seconds of the loop and sets *found to the keys found.
template <typename Manager>
double timed_pass(forein::Tree& tree, const std::vector<std::string>& keys,
                  const std::vector<forein::StartHints>* hints, Manager* manager,
                  std::string* value, std::uint64_t* found) {
  tree.reset_stats();
  std::uint64_t hits = 0;
  const auto t0 = Clock::now();
  if (manager != nullptr) {
    for (const auto& k : keys) {
      const forein::StartHints h = manager->hint(k);
      hits += tree.get(k, value, &h);
    }
  } else if (hints != nullptr) {
    for (std::size_t i = 0; i < keys.size(); ++i) hits += tree.get(keys[i], value, &(*hints)[i]);
  } else {
    for (const auto& k : keys) hits += tree.get(k, value);
  }
  const double s = seconds_since(t0);
  *found = hits;
  return s;
}

// main() of a benchmark: parse the flags (exits on bad ones), run, and
// turn an exception into "program: what" and exit status 1.
template <typename Parse, typename Run>
int guarded_main(const char* program, int argc, char** argv, Parse parse, Run run) {
  const auto opt = parse(argc, argv);
  try {
    return run(opt);
  } catch (const std::exception& e) {
    std::cerr << program << ": " << e.what() << "\n";
    return 1;
  }
}

}  // namespace forein::bench
