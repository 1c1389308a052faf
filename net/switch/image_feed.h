// The control thread that hands the in-process agent's image to the data
// plane (docs/network.md, "forein-switch").
#pragma once

#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <thread>

#include "agent_service.h"
#include "forein/offload/backend.h"
#include "forein/offload/published.h"

namespace forein::net::sw {

// The image the data plane reads (lock-free, Published), refreshed from the agent.
struct Image {
  const forein::offload::BackendInfo* info = nullptr;
  std::shared_ptr<const forein::offload::BackendImage> image;
};

// Every 5 ms, republishes the agent's image for `index` into *out when it
// changed; the data plane never waits on the agent's locks.
class ImageFeed {
 public:
  ImageFeed(forein::net::AgentServer& server, std::uint64_t index, forein::offload::Published<Image>* out);
  ~ImageFeed();
  ImageFeed(const ImageFeed&) = delete;
  ImageFeed& operator=(const ImageFeed&) = delete;

  // Ends the thread (also done by the destructor).
  void stop();

 private:
  void refresh_loop(forein::net::AgentServer& server, std::uint64_t index, forein::offload::Published<Image>* out);

  std::mutex mu_;
  std::condition_variable cv_;
  bool done_ = false;
  std::thread thread_;
};

}  // namespace forein::net::sw
