#include "fattree/compare64.h"

namespace forein::offload {

namespace {

constexpr std::uint32_t kAnyWord = 0;
constexpr std::uint32_t kExactWord = 0xFFFFFFFFu;

// sub[63:32] == 0 exactly when the high halves are equal (the subtraction is
// mod 2^32); then the low halves decide, else the high halves. Within a half,
// differing top bits mean the key is larger iff its top bit is set; equal top
// bits mean key > pivot iff pivot - key wraps, i.e. sets the top bit of sub.
// Columns: sub[63:32] value, mask; xor[63] value, mask; xor[31] value, mask.
constexpr CalResultEntry kCalResult[kCalResultEntries] = {
    {0, kExactWord, 0, 0, 0, 1, CompareAction::kSubBit31},
    {0, kExactWord, 0, 0, 1, 1, CompareAction::kKeyBit31},
    {0, kAnyWord, 0, 1, 0, 0, CompareAction::kSubBit63},
    {0, kAnyWord, 1, 1, 0, 0, CompareAction::kKeyBit63},
};

constexpr std::uint32_t high_half(Word w) { return static_cast<std::uint32_t>(w >> 32); }
constexpr std::uint32_t low_half(Word w) { return static_cast<std::uint32_t>(w); }
constexpr std::uint8_t top_bit(std::uint32_t half) { return static_cast<std::uint8_t>(half >> 31); }

bool entry_matches(const CalResultEntry& e, const AluResult& alu) {
  return (alu.sub_hi & e.sub_hi_mask) == (e.sub_hi_value & e.sub_hi_mask) &&
         (top_bit(alu.xor_hi) & e.xor63_mask) == (e.xor63_value & e.xor63_mask) &&
         (top_bit(alu.xor_lo) & e.xor31_mask) == (e.xor31_value & e.xor31_mask);
}

}  // namespace

AluResult alu_phase(Word key, Word pivot) {
  // Unsigned 32-bit arithmetic wraps exactly as the switch ALU does.
  return AluResult{
      static_cast<std::uint32_t>(high_half(pivot) - high_half(key)),
      static_cast<std::uint32_t>(low_half(pivot) - low_half(key)),
      high_half(pivot) ^ high_half(key),
      low_half(pivot) ^ low_half(key),
  };
}

std::span<const CalResultEntry> cal_result_table() { return kCalResult; }

CompareAction match_cal_result(const AluResult& alu) {
  for (const CalResultEntry& e : kCalResult) {
    if (entry_matches(e, alu)) return e.action;
  }
  // Unreachable: entries 3 and 4 together match every xor[63].
  return CompareAction::kKeyBit63;
}

bool key_greater(Word key, Word pivot) {
  const AluResult alu = alu_phase(key, pivot);
  switch (match_cal_result(alu)) {
    case CompareAction::kSubBit31: return top_bit(alu.sub_lo) != 0;
    case CompareAction::kKeyBit31: return top_bit(low_half(key)) != 0;
    case CompareAction::kSubBit63: return top_bit(alu.sub_hi) != 0;
    case CompareAction::kKeyBit63: return top_bit(high_half(key)) != 0;
  }
  return false;  // not a CompareAction
}

}  // namespace forein::offload
