// Reading the nodes on page frames outside the tree's operations, for a
// host that learns the tree from the pages it already holds (the SQLite
// module's hint path, sqlite_vfs/src/hints.cc) instead of listing every
// node (Tree::for_each_node reads every page of an on-demand store).
//
// The frame (PageStore::peek, PageStore::page) must not change while it
// is read: call these between operations of a tree that no other thread
// writes. They read nothing but the frame given.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <vector>

#include "forein/key.h"
#include "forein/node_interval.h"

namespace forein {

// The interval of the live node on page `id` (its frame `page`), as the
// tree's node events report it (index = index_id), or nullopt for a page
// that holds no live node: the meta page, a free page, a node merged away.
std::optional<NodeInterval> page_node_interval(PageId id, const std::byte* page, std::uint32_t page_size,
                                               std::uint64_t index_id = 0);

// An inner node's children in key order: fn gets each child's page, its
// level (one below) and the word interval its downlink gives it (from its
// separator key to the next one, the last child to the node's hi), with
// version 0 (a child's version is on its own page). A child split whose
// downlink is not in the node yet holds less than that. Nothing for a
// leaf or a page that holds no live node.
void for_each_page_child(const std::byte* page, std::uint32_t page_size, std::uint64_t index_id,
                         const std::function<void(const NodeInterval&)>& fn);

// A leaf's distinct key words, ascending, appended to *out (nothing for a
// page that holds no live leaf).
void append_page_words(const std::byte* page, std::uint32_t page_size, std::vector<Word>* out);

}  // namespace forein
