// The metadata node's secondary index (forein-kv-server --mode metadata
// --secondary-index; paper 002, section VI-B, with the partial writes of
// III-C; protocol/secondary_index.h). In the engine tree, beside nothing
// else:
//
//   composite  "S" u16 len, secondary, ~ts u32 BE, primary  -> ""
//   reverse    "P" primary                                   -> ts u32 BE, secondary
//
// The composite keys of one secondary key are adjacent and newest first
// (~ts), so a read is one forward scan from the secondary key's prefix;
// the length prefix keeps a secondary key that is a prefix of another
// out of its range. The reverse map holds, per primary key, the secondary
// key and timestamp of its newest write: the apply rule's test, and the
// composite key that write made stale. A --secondary-index data node
// stamps every write from one counter, so a primary key's writes are
// ordered by their timestamps whatever secondary keys they name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "forein/tree.h"
#include "kv_server/metadata_index.h"

namespace forein::net::kv {

class SecondaryIndex {
 public:
  // The primary key's newest write as the index holds it.
  struct Newest {
    std::string secondary;
    std::uint32_t ts = 0;
  };
  // One primary key of a read, with its composite key's timestamp.
  struct Member {
    std::string primary;
    std::uint32_t ts = 0;
  };

  // The tree holds nothing else (metadata mode starts it empty).
  explicit SecondaryIndex(Tree& tree) : tree_(tree) {}

  static std::string composite_key(std::string_view secondary, std::uint32_t ts, std::string_view primary);
  static std::string reverse_key(std::string_view primary);

  // Empty when the tree can hold the keys of (primary, secondary); else
  // why not (the composite key or the reverse entry is too long).
  std::string too_long(std::string_view primary, std::string_view secondary) const;

  std::optional<Newest> lookup(std::string_view primary);

  // The apply rule for the write (primary, secondary, ts): ignored if the
  // reverse map's ts >= ts; else the composite key inserted, the reverse
  // map updated and the old composite key (if any) deleted, or, with
  // stale != nullptr, handed to the caller to delete later (erase_stale:
  // a phase-2 META_PUT answers first). The keys must fit (too_long()).
  ApplyResult apply(std::string_view primary, std::string_view secondary, std::uint32_t ts,
                    std::string* stale = nullptr);
  // Deletes a composite key apply() handed out.
  void erase_stale(std::string_view composite);

  // The first `count` primary keys of the secondary key, newest first;
  // *more when others follow.
  std::vector<Member> read(std::string_view secondary, std::size_t count, bool* more);

  // Tree::prefetch of the reverse entry apply(primary, ...) reads first.
  void prefetch(std::string_view primary) const { tree_.prefetch(reverse_key(primary)); }

  std::uint64_t composites() const { return composites_; }
  std::uint64_t primaries() const { return primaries_; }
  std::uint64_t stale_deleted() const { return stale_deleted_; }

 private:
  Tree& tree_;
  std::uint64_t composites_ = 0;     // composite keys in the tree
  std::uint64_t primaries_ = 0;      // reverse entries
  std::uint64_t stale_deleted_ = 0;  // composite keys deleted because a newer write replaced them
};

}  // namespace forein::net::kv
