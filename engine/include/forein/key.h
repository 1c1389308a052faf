// Key encoding (docs/design.md, contract 1).
//
// Inside the tree every key is a byte string ordered by memcmp (shorter key
// first on a common prefix). Typed keys are encoded so that this order is
// their natural order: signed integers and timestamps become 8 bytes
// big-endian with the sign bit flipped. All integer widths share one
// encoding, so int16, int32 and int64 keys compare with each other.
//
// The offload layer only sees the key's *word*: its first 8 bytes read
// big-endian, zero-padded. The word encodings and interval rules are
// defined once, in C, in forein/word.h, shared with the PostgreSQL access
// method; the functions here are their C++ spelling. Word order never contradicts key order
// (a < b implies word(a) <= word(b)); keys sharing a word are told apart by
// the tree's full comparison.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "forein/word.h"

namespace forein {

using Word = std::uint64_t;
inline constexpr std::size_t kWordBytes = FOREIN_WORD_BYTES;

std::string encode_int64(std::int64_t v);
inline std::string encode_int32(std::int32_t v) { return encode_int64(v); }
inline std::string encode_int16(std::int16_t v) { return encode_int64(v); }
// Microseconds since the epoch, as PostgreSQL stores timestamps.
inline std::string encode_timestamp(std::int64_t micros) { return encode_int64(micros); }
// The key whose word is w and whose length is 8 (unsigned 64-bit keys).
std::string encode_word(Word w);

// Inverse of encode_int64; throws InvalidArgument unless key is 8 bytes.
std::int64_t decode_int64(std::string_view key);

// First 8 bytes big-endian, zero-padded.
inline Word word_of(std::string_view key) { return forein_word_bytes(key.data(), key.size()); }

// The offload word of an int64 key without building the key.
inline Word word_of_int64(std::int64_t v) { return forein_word_int64(v); }

// memcmp order; negative, zero or positive.
int compare_keys(std::string_view a, std::string_view b);

// The smallest key whose word is w: w's bytes with trailing zero bytes cut.
std::string min_key_of_word(Word w);

// Word-space image of a key boundary. A node holding keys [lo, hi) owns the
// words w whose smallest key min_key_of_word(w) lies in [lo, hi); that set is
// [word_ceil(lo), word_ceil(hi)). `past_end` means "beyond 2^64 - 1".
struct WordCeil {
  Word word = 0;
  bool past_end = false;
};
WordCeil word_ceil(std::string_view key);

}  // namespace forein
