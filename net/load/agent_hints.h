// forein-load --agent: the client playing the switch's part (docs/network.md,
// "forein-load"). AgentHints fetches one index's image from forein-agent
// (FetchImage), once when constructed and then every `period` on its own
// thread, and answers hint(key) from the image it holds with the backend's
// hint function (the backend named in the agent's reply, looked up in the
// offload registry) on word_of(key). The image is swapped atomically
// (Published<T>: the engine's lookups never block on a fetch). A failed
// fetch (agent down, index unknown, unknown backend) drops the image, so
// requests go without hints until a fetch succeeds again; the agent never
// makes a request fail.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "agent_client.h"
#include "forein/offload/backend.h"
#include "forein/offload/published.h"
#include "load/hints.h"

namespace forein::net::load {

class AgentHints final : public HintSource {
 public:
  // target: HOST:PORT of forein-agent; token: its bearer token (may be
  // empty); index_id: the index whose image is fetched.
  AgentHints(std::string target, std::string token, std::uint64_t index_id,
             std::chrono::milliseconds period = std::chrono::milliseconds(200));
  ~AgentHints() override;
  AgentHints(const AgentHints&) = delete;
  AgentHints& operator=(const AgentHints&) = delete;

  std::optional<StartHints> hint(std::string_view key) const override;
  std::uint64_t fetches() const override { return fetches_.load(std::memory_order_relaxed); }
  std::uint64_t errors() const override { return errors_.load(std::memory_order_relaxed); }

 private:
  struct Image {
    const offload::BackendInfo* backend = nullptr;  // null: no image
    std::vector<std::byte> bytes;
    std::uint64_t version = 0;
  };

  void fetch_once();
  void run();

  const AgentClient client_;
  const std::uint64_t index_id_;
  const std::chrono::milliseconds period_;
  offload::Published<Image> image_;
  std::shared_ptr<const Image> held_;  // the fetch thread's copy of the current image
  std::atomic<std::uint64_t> fetches_{0};
  std::atomic<std::uint64_t> errors_{0};
  std::mutex mu_;
  std::condition_variable wake_;
  bool stop_ = false;  // guarded by mu_
  std::thread thread_;
};

}  // namespace forein::net::load
