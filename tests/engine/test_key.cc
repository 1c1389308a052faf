// Key encoding (forein/key.h) and CRC32C.
#include <catch2/catch.hpp>

#include <algorithm>
#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "forein/error.h"
#include "forein/key.h"
#include "forein/page_store.h"
#include "support/seed.h"

using namespace forein;

namespace {

using I64 = std::numeric_limits<std::int64_t>;
constexpr Word kMaxWord = std::numeric_limits<Word>::max();

int sign(int c) { return (c > 0) - (c < 0); }

template <class T>
int three_way(T a, T b) {
  return (a > b) - (a < b);
}

// Extremes mixed with uniformly random values.
std::int64_t draw_int64(std::mt19937_64& rng) {
  static const std::int64_t kEdges[] = {
      I64::min(), I64::min() + 1, -65536, -32768, -256, -1, 0, 1, 255, 256, 32767, 65536,
      std::numeric_limits<std::int32_t>::min(), std::numeric_limits<std::int32_t>::max(),
      I64::max() - 1, I64::max()};
  if (rng() % 4 == 0) return kEdges[rng() % std::size(kEdges)];
  return static_cast<std::int64_t>(rng());
}

// Keys built from bytes that sit on word boundaries, so ties, trailing
// zeros and 0xFF carries are common.
std::string draw_key(std::mt19937_64& rng) {
  static const unsigned char kBytes[] = {0x00, 0x00, 0x01, 0x7F, 0x80, 0xFE, 0xFF, 0xFF};
  std::string key(rng() % 11, '\0');
  for (char& c : key) {
    c = static_cast<char>(rng() % 3 == 0 ? rng() : kBytes[rng() % std::size(kBytes)]);
  }
  return key;
}

bool key_less(const std::string& a, const std::string& b) { return compare_keys(a, b) < 0; }

// past_end is larger than every word.
bool ceil_le(WordCeil a, WordCeil b) {
  if (b.past_end) return true;
  return !a.past_end && a.word <= b.word;
}

std::string bytes(std::initializer_list<unsigned char> list) {
  return std::string(list.begin(), list.end());
}

}  // namespace

TEST_CASE("int64 encoding preserves order and round-trips", "[key]") {
  std::mt19937_64 rng(testing::test_seed("int64 encoding"));
  for (int i = 0; i < 100000; ++i) {
    const std::int64_t a = draw_int64(rng);
    const std::int64_t b = draw_int64(rng);
    const std::string ka = encode_int64(a);
    REQUIRE(ka.size() == 8);
    REQUIRE(sign(compare_keys(ka, encode_int64(b))) == three_way(a, b));
    REQUIRE(decode_int64(ka) == a);
    REQUIRE(word_of(ka) == word_of_int64(a));
  }
  CHECK(encode_int64(I64::min()) == std::string(8, '\0'));
  CHECK(encode_int64(-1) == bytes({0x7F, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF}));
  CHECK(encode_int64(0) == bytes({0x80, 0, 0, 0, 0, 0, 0, 0}));
  CHECK(encode_int64(I64::max()) == std::string(8, '\xFF'));
}

TEST_CASE("int16, int32 and int64 keys compare with each other", "[key]") {
  std::mt19937_64 rng(testing::test_seed("mixed int widths"));
  for (int i = 0; i < 50000; ++i) {
    const auto a16 = static_cast<std::int16_t>(rng());
    const auto b32 = static_cast<std::int32_t>(draw_int64(rng));
    const std::int64_t c64 = draw_int64(rng);
    REQUIRE(sign(compare_keys(encode_int16(a16), encode_int32(b32))) ==
            three_way<std::int64_t>(a16, b32));
    REQUIRE(sign(compare_keys(encode_int32(b32), encode_int64(c64))) ==
            three_way<std::int64_t>(b32, c64));
    REQUIRE(sign(compare_keys(encode_int16(a16), encode_timestamp(c64))) ==
            three_way<std::int64_t>(a16, c64));
    REQUIRE(encode_int16(a16) == encode_int64(a16));
    REQUIRE(encode_int32(b32) == encode_int64(b32));
  }
}

TEST_CASE("decode_int64 rejects keys that are not 8 bytes", "[key]") {
  CHECK_THROWS_AS(decode_int64(""), InvalidArgument);
  CHECK_THROWS_AS(decode_int64(std::string(7, 'x')), InvalidArgument);
  CHECK_THROWS_AS(decode_int64(std::string(9, 'x')), InvalidArgument);
}

TEST_CASE("encode_word is the 8-byte key of a word", "[key]") {
  std::mt19937_64 rng(testing::test_seed("encode_word"));
  CHECK(encode_word(0) == std::string(8, '\0'));
  CHECK(encode_word(0x0102030405060708) == bytes({1, 2, 3, 4, 5, 6, 7, 8}));
  for (int i = 0; i < 10000; ++i) {
    const Word a = rng();
    const Word b = rng() >> (rng() % 64);
    REQUIRE(word_of(encode_word(a)) == a);
    REQUIRE(sign(compare_keys(encode_word(a), encode_word(b))) == three_way(a, b));
  }
}

TEST_CASE("compare_keys is unsigned memcmp order, shorter first", "[key]") {
  CHECK(compare_keys("", "") == 0);
  CHECK(compare_keys("", std::string(1, '\0')) < 0);
  CHECK(compare_keys("a", "ab") < 0);
  CHECK(compare_keys("ab", "a") > 0);
  CHECK(compare_keys("abc", "abd") < 0);
  CHECK(compare_keys("\x01", "\xFF") < 0);  // unsigned bytes
  CHECK(compare_keys("\xFF", "\x01\x02") > 0);
  CHECK(compare_keys("same", "same") == 0);
}

TEST_CASE("word_of reads the first 8 bytes zero-padded", "[key]") {
  CHECK(word_of("") == 0);
  CHECK(word_of("\x01") == 0x0100000000000000);
  CHECK(word_of(bytes({0xAB, 0xCD})) == 0xABCD000000000000);
  CHECK(word_of(bytes({1, 2, 3, 4, 5, 6, 7, 8, 9})) == 0x0102030405060708);
  CHECK(word_of(std::string(12, '\xFF')) == kMaxWord);
}

TEST_CASE("min_key_of_word cuts trailing zero bytes", "[key]") {
  CHECK(min_key_of_word(0).empty());
  CHECK(min_key_of_word(0x0100000000000000) == "\x01");
  CHECK(min_key_of_word(0x0100000000000100) == bytes({1, 0, 0, 0, 0, 0, 1}));
  CHECK(min_key_of_word(1) == bytes({0, 0, 0, 0, 0, 0, 0, 1}));
  CHECK(min_key_of_word(kMaxWord) == std::string(8, '\xFF'));
}

TEST_CASE("word_ceil edge cases", "[key]") {
  auto ceil_is = [](const std::string& key, Word word, bool past_end) {
    const WordCeil c = word_ceil(key);
    CHECK(c.past_end == past_end);
    if (!past_end) CHECK(c.word == word);
  };
  ceil_is("", 0, false);
  ceil_is(std::string(1, '\0'), 1, false);  // "" < "\0", so word 0 is below it
  ceil_is("\x01", 0x0100000000000000, false);
  ceil_is(bytes({1, 0}), 0x0100000000000001, false);
  ceil_is(bytes({1, 2, 3, 4, 5, 6, 7, 8}), 0x0102030405060708, false);
  ceil_is(bytes({1, 0, 0, 0, 0, 0, 0, 0}), 0x0100000000000001, false);
  ceil_is(bytes({1, 2, 3, 4, 5, 6, 7, 8, 0}), 0x0102030405060709, false);  // 9 bytes
  ceil_is(bytes({1, 2, 3, 4, 5, 6, 7, 0xFF, 9}), 0x0102030405060800, false);  // carry
  ceil_is(std::string(8, '\xFF'), kMaxWord, false);
  ceil_is(std::string(9, '\xFF'), 0, true);
  ceil_is(std::string(8, '\xFF') + std::string(1, '\0'), 0, true);
}

TEST_CASE("word order never contradicts key order (randomized)", "[key]") {
  std::mt19937_64 rng(testing::test_seed("word order property"));
  for (int i = 0; i < 100000; ++i) {
    std::string a = draw_key(rng);
    std::string b = draw_key(rng);
    if (key_less(b, a)) std::swap(a, b);
    REQUIRE(word_of(a) <= word_of(b));
    REQUIRE(compare_keys(min_key_of_word(word_of(a)), a) <= 0);
    REQUIRE(word_of(min_key_of_word(word_of(a))) == word_of(a));
    REQUIRE(ceil_le(word_ceil(a), word_ceil(b)));
  }
}

TEST_CASE("word_ceil is the first word whose smallest key is >= k (randomized)", "[key]") {
  std::mt19937_64 rng(testing::test_seed("word_ceil property"));
  for (int i = 0; i < 100000; ++i) {
    const std::string k = draw_key(rng);
    const WordCeil c = word_ceil(k);
    if (c.past_end) {
      REQUIRE(key_less(min_key_of_word(kMaxWord), k));
      continue;
    }
    REQUIRE(!key_less(min_key_of_word(c.word), k));
    if (c.word > 0) REQUIRE(key_less(min_key_of_word(c.word - 1), k));
  }
}

TEST_CASE("a node [lo, hi) owns exactly the words [ceil(lo), ceil(hi))", "[key]") {
  std::mt19937_64 rng(testing::test_seed("word ownership"));
  auto in_ceil_range = [](Word w, WordCeil lo, WordCeil hi) {
    const bool above_lo = !lo.past_end && w >= lo.word;
    const bool below_hi = hi.past_end || w < hi.word;
    return above_lo && below_hi;
  };
  for (int i = 0; i < 20000; ++i) {
    std::string lo = draw_key(rng);
    std::string hi = draw_key(rng);
    if (key_less(hi, lo)) std::swap(lo, hi);
    const WordCeil clo = word_ceil(lo);
    const WordCeil chi = word_ceil(hi);
    // Probe words around both boundaries plus a random one.
    std::vector<Word> probes = {rng()};
    for (Word base : {word_of(lo), word_of(hi)}) {
      for (Word d : {Word{0}, Word{1}, Word{2}}) {
        probes.push_back(base + d);
        probes.push_back(base - d);
      }
    }
    for (Word w : probes) {
      const std::string m = min_key_of_word(w);
      const bool owned = !key_less(m, lo) && key_less(m, hi);
      REQUIRE(owned == in_ceil_range(w, clo, chi));
    }
  }
}

TEST_CASE("crc32c matches known vectors", "[crc]") {
  CHECK(crc32c("123456789", 9) == 0xE3069283);
  CHECK(crc32c("", 0) == 0);
  // RFC 3720 (iSCSI) appendix B.4.
  std::vector<unsigned char> buf(32, 0x00);
  CHECK(crc32c(buf.data(), buf.size()) == 0x8A9136AA);
  std::fill(buf.begin(), buf.end(), 0xFF);
  CHECK(crc32c(buf.data(), buf.size()) == 0x62A8AB43);
  for (unsigned i = 0; i < 32; ++i) buf[i] = static_cast<unsigned char>(i);
  CHECK(crc32c(buf.data(), buf.size()) == 0x46DD794E);
}

TEST_CASE("crc32c agrees with a bitwise reference and continues across calls", "[crc]") {
  auto reference = [](const unsigned char* p, std::size_t n) {
    std::uint32_t crc = ~0u;
    for (std::size_t i = 0; i < n; ++i) {
      crc ^= p[i];
      for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1) ? 0x82F63B78u : 0u);
    }
    return ~crc;
  };
  std::mt19937_64 rng(testing::test_seed("crc32c reference"));
  std::vector<unsigned char> buf(300);
  for (int i = 0; i < 2000; ++i) {
    for (auto& b : buf) b = static_cast<unsigned char>(rng());
    const std::size_t start = rng() % 16;  // unaligned starts
    const std::size_t len = rng() % (buf.size() - start);
    const std::size_t cut = len == 0 ? 0 : rng() % len;
    const unsigned char* p = buf.data() + start;
    const std::uint32_t whole = crc32c(p, len);
    REQUIRE(whole == reference(p, len));
    REQUIRE(crc32c(p + cut, len - cut, crc32c(p, cut)) == whole);
  }
}
