// The images forein-switch's data plane reads (lock-free, through
// Published): one per server, fed by image_feed.h.
#pragma once

#include <memory>
#include <vector>

#include "forein/offload/backend.h"

namespace forein::net::sw {

// One server's image: its backend's pure lookup and the bytes it reads.
struct ShardImage {
  const forein::offload::BackendInfo* info = nullptr;  // null: the agent holds no image
  std::shared_ptr<const forein::offload::BackendImage> image;
};

// What the data plane reads, refreshed from the agent: shards[i] is
// server i's image (agent index first_index + i).
struct Image {
  std::vector<ShardImage> shards;
};

}  // namespace forein::net::sw
