// Key encoding (docs/design.md, contract 1): see forein/key.h.
#include "forein/key.h"

#include <algorithm>
#include <cstring>

#include "forein/error.h"

namespace forein {

std::string encode_word(Word w) {
  std::string key(kWordBytes, '\0');
  for (std::size_t i = 0; i < kWordBytes; ++i) {
    key[i] = static_cast<char>(w >> (8 * (kWordBytes - 1 - i)));
  }
  return key;
}

// Flipping the sign bit maps INT64_MIN..INT64_MAX onto 0..UINT64_MAX in
// order, so big-endian bytes of the result sort like the integers.
std::string encode_int64(std::int64_t v) { return encode_word(word_of_int64(v)); }

std::int64_t decode_int64(std::string_view key) {
  if (key.size() != kWordBytes) {
    throw InvalidArgument("decode_int64: key has " + std::to_string(key.size()) +
                          " bytes, expected 8");
  }
  return forein_word_to_int64(word_of(key));
}

int compare_keys(std::string_view a, std::string_view b) {
  const std::size_t common = std::min(a.size(), b.size());
  if (common > 0) {
    // memcmp compares as unsigned char, which is the order we want.
    if (const int c = std::memcmp(a.data(), b.data(), common); c != 0) return c < 0 ? -1 : 1;
  }
  if (a.size() == b.size()) return 0;
  return a.size() < b.size() ? -1 : 1;
}

std::string min_key_of_word(Word w) {
  std::string key = encode_word(w);
  const std::size_t last = key.find_last_not_of('\0');
  key.resize(last == std::string::npos ? 0 : last + 1);
  return key;
}

// min_key_of_word(word_of(k)) is a prefix of k, so it is <= k. If equal
// (k has at most 8 bytes and no trailing zero byte), word_of(k) is the
// answer; otherwise every key with the next word exceeds k, so the next
// word is (forein/word.h's rule, shared with the PostgreSQL AM).
WordCeil word_ceil(std::string_view key) {
  Word w = 0;
  if (!forein_word_ceil(word_of(key), forein_word_bytes_own_word(key.data(), key.size()), &w)) {
    return {0, true};
  }
  return {w, false};
}

}  // namespace forein
