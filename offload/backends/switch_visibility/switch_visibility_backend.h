// switch_visibility: Switch-delta's in-switch visibility table (paper 002,
// sections III-B, III-E, IV-B; docs/offload.md) as a registered backend.
//
// It declares kWriteVisibility only: it gives no start hints. Its slots
// are filled and cleared by packets on the network path (data-write
// replies, CLEARs from the metadata node), not planned from the tree, so
// its planner plans nothing and its device accepts only empty batches. The
// device wraps one VisibilityTable (visibility_table.h) and publishes, when
// its owner asks, an image: a compact snapshot of the valid slots, for
// diagnostics (records(), PostgreSQL-style usage rows).
//
// Image (little-endian, any alignment):
//   header  magic u32 "FSV1", format u16 (1), reserved u16 (0),
//           slots u32 (the table's size), count u32 (valid slots listed);
//   count records, ascending by slot:
//           slot u16, fingerprint u32, cur_ts u32, max_ts u32,
//           metadata length u8 (<= 96), metadata bytes.
// The empty device's image is empty (no bytes).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <vector>

#include "forein/offload/backend.h"
#include "forein/switch_visibility/visibility_table.h"

namespace forein::offload {

extern const BackendInfo kSwitchVisibilityBackend;

namespace switch_visibility {

inline constexpr std::uint32_t kImageMagic = 0x31565346;  // "FSV1" little-endian
inline constexpr std::uint16_t kImageFormat = 1;
inline constexpr std::size_t kImageHeaderBytes = 16;
inline constexpr std::size_t kImageSlotFixedBytes = 2 + 4 + 4 + 4 + 1;

// One valid slot of an image.
struct ImageSlot {
  std::uint16_t slot = 0;
  std::uint32_t fingerprint = 0;
  std::uint32_t cur_ts = 0;
  std::uint32_t max_ts = 0;
  std::vector<std::byte> metadata;
  bool operator==(const ImageSlot&) const = default;
};

// The table's valid slots as image bytes (empty when none is valid). Reads
// the table: call it from the table's writer thread.
std::vector<std::byte> encode_image(const VisibilityTable& table);

// The slots of an image; nullopt for bytes that are not a valid image
// (empty bytes: the empty device, no slots).
std::optional<std::vector<ImageSlot>> decode_image(std::span<const std::byte> image);

// The largest image of a table of `capacity` slots (capped at 65,536).
std::size_t image_max_bytes(std::uint64_t capacity);

// The image's valid slots as records: key = slot index (a 16-bit index,
// key_bits 16, not a key prefix), kind 0, level 0, node kNoPage. Empty for
// bytes that are not a valid image.
std::vector<ImageRecord> image_records(std::span<const std::byte> image);

// Never a hint, on any bytes: the backend gives no start hints.
StartHints image_hint(std::span<const std::byte> image, Word w) noexcept;

class SwitchVisibilityDevice final : public Device {
 public:
  // slots: a power of two <= 65,536 (0: 65,536); throws InvalidArgument.
  explicit SwitchVisibilityDevice(std::uint64_t slots = 0);

  // Only empty batches (kOk, nothing changes): slots are not installed by
  // a control plane. A batch with records or bytes is kInvalidEntry.
  BackendStatus apply(const ChangeBatch& batch) override;
  // The table's: unit "slots", used = valid slots, capacity = slots().
  BackendUsage usage() const override;
  BackendModel model() const override;

  // The table the network path drives (one writer thread).
  VisibilityTable& table() { return table_; }
  const VisibilityTable& table() const { return table_; }

  // Publishes the table's valid slots as the next image (version + 1).
  // Call from the table's writer thread; readers of image() never block.
  void publish_table();

 private:
  VisibilityTable table_;
  std::uint64_t version_ = 0;
};

}  // namespace switch_visibility

}  // namespace forein::offload
