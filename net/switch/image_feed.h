// The control thread that hands the agent's images to the data plane
// (docs/network.md, "forein-switch"): from the in-process agent, or, for a
// switch further down a chain (--image-from), fetched from another
// switch's agent over gRPC.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent_client.h"
#include "agent_service.h"
#include "forein/offload/backend.h"
#include "forein/offload/published.h"
#include "image.h"

namespace forein::net::sw {

// Where images come from: the current image of an agent index (the same
// shared_ptr while it is unchanged, so the feed republishes only changes).
using ImageSource = std::function<ShardImage(std::uint64_t index)>;

// The in-process agent's images.
ImageSource local_images(forein::net::AgentServer& server);

// Another agent's images (FetchImage), for a switch down a chain: a failed
// fetch or an unknown backend gives no image (requests pass unhinted).
class RemoteImages {
 public:
  RemoteImages(const std::string& target, const std::string& token) : client_(target, token) {}
  ShardImage fetch(std::uint64_t index);

 private:
  forein::net::AgentClient client_;
  std::map<std::uint64_t, ShardImage> held_;  // the feed thread's only
};

// Every `period`, republishes the images for indexes first_index ..
// first_index + count - 1 into *out when one changed; the data plane never
// waits on the agent's locks or a fetch.
class ImageFeed {
 public:
  ImageFeed(ImageSource source, std::uint64_t first_index, std::size_t count, std::chrono::milliseconds period,
            forein::offload::Published<Image>* out);
  ~ImageFeed();
  ImageFeed(const ImageFeed&) = delete;
  ImageFeed& operator=(const ImageFeed&) = delete;

  // Ends the thread (also done by the destructor).
  void stop();

 private:
  void refresh_loop(std::uint64_t first_index, std::size_t count, std::chrono::milliseconds period,
                    forein::offload::Published<Image>* out);

  ImageSource source_;
  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace forein::net::sw
