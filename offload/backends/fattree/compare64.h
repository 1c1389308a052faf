// Fat-B+Tree's 64-bit comparator (section III-A, Figure 3): "key > pivot"
// on a switch whose ALUs are 32 bits wide, modelled step by step as the
// pipeline does it rather than as a plain `>`, so the cal_result_i table a
// regular node installs is the one tested here.
//
// Phase 1, the ALUs, per 32-bit half: sub = pivot - key (mod 2^32) and
// xor = pivot ^ key. Phase 2, the ternary table cal_result: it matches
// sub[63:32], xor[63] and xor[31]; the first matching entry's action picks
// one of key[63], key[31], sub[63], sub[31] as the 1-bit result.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "forein/key.h"

namespace forein::offload {

// The ALU outputs, bit 31 of each half being the paper's bit 63 / bit 31.
struct AluResult {
  std::uint32_t sub_hi = 0;  // pivot[63:32] - key[63:32]
  std::uint32_t sub_lo = 0;  // pivot[31:0] - key[31:0]
  std::uint32_t xor_hi = 0;  // pivot[63:32] ^ key[63:32]
  std::uint32_t xor_lo = 0;  // pivot[31:0] ^ key[31:0]

  friend bool operator==(const AluResult&, const AluResult&) = default;
};

AluResult alu_phase(Word key, Word pivot);

// Which bit becomes the result; numbered as the paper counts the actions
// ("the fourth action" of its example is kKeyBit63).
enum class CompareAction : std::uint8_t {
  kSubBit31 = 1,  // high halves equal, low top bits equal: low subtraction wrapped
  kKeyBit31 = 2,  // high halves equal, low top bits differ: key's low top bit
  kSubBit63 = 3,  // high halves differ, top bits equal: high subtraction wrapped
  kKeyBit63 = 4,  // high halves differ, top bits differ: key's top bit
};

// One ternary entry: a field matches when (field & mask) == (value & mask).
// The xor fields are single bits (0 or 1).
struct CalResultEntry {
  std::uint32_t sub_hi_value = 0;
  std::uint32_t sub_hi_mask = 0;
  std::uint8_t xor63_value = 0;
  std::uint8_t xor63_mask = 0;
  std::uint8_t xor31_value = 0;
  std::uint8_t xor31_mask = 0;
  CompareAction action = CompareAction::kKeyBit63;
};

inline constexpr std::size_t kCalResultEntries = 4;

// The table's entries in priority order (first match wins). The last two
// match any sub[63:32], so every ALU result matches some entry.
std::span<const CalResultEntry> cal_result_table();

// The action of the first entry of cal_result_table() that matches.
CompareAction match_cal_result(const AluResult& alu);

// key > pivot (unsigned, strict): phase 1, the table, then the chosen bit.
bool key_greater(Word key, Word pivot);

}  // namespace forein::offload
