// The remote tree's client walk (net/remote/walk.cc) and its byte checks
// (node_layout.cc) on arbitrary bytes. The input's first 17 bytes choose
// the mode, the key and the hint; the rest is either
//   mode 0: a memory node's whole region (READs served by Region::read,
//           which refuses anything outside it), or
//   mode 1: the answers to the walk's READs, in order, whatever address
//           they asked for (a READ fails when the answers run out).
// The walk must terminate within its READ bound, never read outside what
// it was given (ASan), and return a value only from a record whose last
// READ checks (key, checksum at its address). The checks' parsers also
// run on the raw bytes, and mode 0 tries one put through the writer.
//
// Built with -DFOREIN_REMOTE_SEED_MAIN instead, the same file writes a
// seed corpus (built trees, and the READ answers of real walks):
//   fuzz_remote_node_seeds <dir>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>
#include <vector>

#include "forein/error.h"
#include "remote/build.h"
#include "remote/node_layout.h"
#include "remote/region.h"
#include "remote/walk.h"
#include "remote/writer.h"

namespace rr = forein::net::remote;

namespace {

constexpr std::size_t kPrefix = 17;  // mode, key (8, LE), hint (8, LE)

}  // namespace

#ifndef FOREIN_REMOTE_SEED_MAIN

namespace {

struct Answer {
  rr::Address address;
  std::vector<std::byte> bytes;
};

void exercise_parsers(std::span<const std::byte> raw, std::uint64_t key) {
  rr::RegionHeader h;
  (void)rr::check_header(raw, &h);
  rr::RecordView rv;
  (void)rr::check_record(raw, key % 4096, &rv);
  for (const std::uint32_t fanout : {4u, 16u}) {
    const rr::Geometry g = rr::geometry_for_fanout(fanout);
    rr::NodeView v;
    if (rr::check_node(raw, g, key % 4096, &v) == rr::Check::kOk) {
      volatile std::size_t sink = v.count == 0 ? 0 : v.child_of(key) + v.find(key);
      (void)sink;
      (void)v.to_node();
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  if (size < kPrefix) return 0;
  const std::uint8_t mode = data[0];
  std::uint64_t key, hint;
  std::memcpy(&key, data + 1, 8);  // the fuzzer's bytes: host order is fine
  std::memcpy(&hint, data + 9, 8);
  const auto* body = reinterpret_cast<const std::byte*>(data + kPrefix);
  const std::size_t n = size - kPrefix;
  exercise_parsers(std::span(body, n), key);

  std::vector<Answer> log;  // every READ answered, in order
  rr::Region region(n);
  std::size_t stream = 0;
  rr::ReadFn read;
  if ((mode & 1) == 0) {
    region.write(0, std::span(body, n));
    // Hints inside the region most of the time.
    if ((mode & 2) != 0) hint %= region.size() + 16;
    read = [&](rr::Address a, std::size_t len, std::byte* out) {
      if (region.read(a, len, out) != rr::ReadError::kOk) return false;
      log.push_back({a, std::vector<std::byte>(out, out + len)});
      return true;
    };
  } else {
    read = [&](rr::Address a, std::size_t len, std::byte* out) {
      if (len > n - stream) return false;
      std::memcpy(out, body + stream, len);
      stream += len;
      log.push_back({a, std::vector<std::byte>(out, out + len)});
      return true;
    };
  }
  rr::WalkerOptions options;
  options.max_sibling_run = 1 + (mode >> 4);
  rr::Walker walker(read, options);
  const rr::LookupResult r = walker.lookup(key, hint);
  // Bounded: the header's tries and 4 * height + 8 <= 136 READs.
  if (r.counters.reads > options.header_tries + 4 * (rr::kMaxLevel + 1u) + 8) __builtin_trap();
  if (r.status == rr::LookupStatus::kFound) {
    // The value came from the last READ at r.record, and that READ checks.
    const Answer* last = nullptr;
    for (const Answer& a : log) {
      if (a.address == r.record) last = &a;
    }
    if (last == nullptr) __builtin_trap();
    rr::RecordView rv;
    if (rr::check_record(last->bytes, r.record, &rv) != rr::Check::kOk || rv.key != key || rv.value != r.value) {
      __builtin_trap();
    }
  }
  if (r.status != rr::LookupStatus::kGaveUp && r.leaf == 0) __builtin_trap();

  // The owner on the same bytes: a put either works or throws; after it
  // the walk still never returns an unchecked value (checked above).
  if ((mode & 1) == 0 && (mode & 4) != 0) {
    try {
      rr::Writer writer(region);
      (void)writer.put(key, "fuzz");
      rr::Walker again(read);
      (void)again.lookup(key);
    } catch (const forein::Error&) {
    }
  }
  return 0;
}

#else

#include <cstdio>
#include <fstream>

namespace {

void write_seed(const std::string& dir, int& count, std::uint8_t mode, std::uint64_t key, std::uint64_t hint,
                std::span<const std::byte> body) {
  std::string bytes(kPrefix, '\0');
  bytes[0] = static_cast<char>(mode);
  std::memcpy(bytes.data() + 1, &key, 8);
  std::memcpy(bytes.data() + 9, &hint, 8);
  bytes.append(reinterpret_cast<const char*>(body.data()), body.size());
  std::ofstream(dir + "/seed-" + std::to_string(count++), std::ios::binary) << bytes;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s <corpus dir>\n", argv[0]);
    return 2;
  }
  const std::string dir = argv[1];
  int count = 0;
  for (const std::uint32_t keys : {0u, 1u, 5u, 12u, 40u}) {
    rr::BuildOptions o;
    o.geometry = rr::geometry_for_fanout(4);
    o.fill = keys % 2 == 0 ? 1.0 : 0.75;
    std::vector<std::string> values;
    std::vector<rr::Entry> entries;
    for (std::uint32_t i = 0; i < keys; ++i) values.push_back("v" + std::to_string(i));
    for (std::uint32_t i = 0; i < keys; ++i) entries.push_back({std::uint64_t{i} * 3, values[i]});
    rr::Region region(rr::build_bytes(keys, 8 * keys, o) + 512);
    rr::build(region, entries, o);
    {
      rr::Writer w(region);  // a split or two, so some nodes have versions and siblings
      for (std::uint64_t k = 1; k < 3 * std::uint64_t{keys}; k += 9) w.put(k, "put");
    }
    std::vector<std::byte> image(region.used());
    region.read(0, image.size(), image.data());
    for (std::uint64_t key = 0; key < 3 * std::uint64_t{keys} + 2; key += 4) {
      // Region mode: from the root, and from a hint inside the region.
      write_seed(dir, count, 0, key, 0, image);
      write_seed(dir, count, 2 | 4, key, rr::kRegionHeaderBytes + 8 * key, image);
      // Stream mode: the answers a real walk got.
      std::vector<std::byte> answers;
      rr::Walker walker([&](rr::Address a, std::size_t len, std::byte* out) {
        if (region.read(a, len, out) != rr::ReadError::kOk) return false;
        answers.insert(answers.end(), out, out + len);
        return true;
      });
      walker.lookup(key);
      write_seed(dir, count, 1, key, 0, answers);
    }
  }
  std::printf("%d seeds in %s\n", count, dir.c_str());
  return 0;
}

#endif
