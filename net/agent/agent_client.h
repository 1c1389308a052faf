// Client side of the control plane (docs/network.md, "Control plane
// (gRPC)"): AgentClient wraps the SwitchAgent RPCs with a token and a
// per-call deadline; AgentMirror forwards every batch an OffloadManager
// applies to its local device to an agent, in order, from its own thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "forein/control/v1/control.grpc.pb.h"
#include "forein/offload/backend.h"
#include "forein/offload/manager.h"

namespace forein::net {

namespace control = ::forein::control::v1;

struct FetchedImage {
  std::vector<std::byte> bytes;
  std::uint64_t version = 0;
  std::string backend;
};

struct AgentHealth {
  std::uint64_t instance_id = 0;
  std::uint64_t uptime_ms = 0;
};

class AgentClient {
 public:
  // target: HOST:PORT; token: sent as `authorization: Bearer <token>` when
  // not empty; deadline: per call.
  explicit AgentClient(std::string target, std::string token = {},
                       std::chrono::milliseconds deadline = std::chrono::seconds(2));

  // InstallBatch or RemoveBatch, by batch.kind.
  grpc::Status apply_batch(std::uint64_t index_id, std::string_view backend,
                           const offload::ChangeBatch& batch,
                           std::uint64_t* image_version = nullptr) const;
  grpc::Status publish_image(std::uint64_t index_id, std::string_view backend,
                             std::span<const std::byte> image, std::uint64_t version) const;
  grpc::Status fetch_image(std::uint64_t index_id, FetchedImage* out) const;
  grpc::Status clear(std::uint64_t index_id, std::uint64_t* cleared = nullptr) const;
  grpc::Status clear_all(std::uint64_t* cleared = nullptr) const;
  grpc::Status stats(control::StatsReply* out) const;
  grpc::Status health(AgentHealth* out) const;

  const std::string& target() const { return target_; }

 private:
  void prepare(grpc::ClientContext* ctx) const;
  grpc::Status send_clear(const control::ClearRequest& req, std::uint64_t* cleared) const;

  std::string target_;
  std::string token_;
  std::chrono::milliseconds deadline_;
  std::shared_ptr<grpc::Channel> channel_;
  std::unique_ptr<control::SwitchAgent::Stub> stub_;
};

struct AgentMirrorOptions {
  // Health is polled this often while idle, so a restarted agent is healed
  // even when no batch flows.
  std::chrono::milliseconds health_period{200};
  // Retry backoff after a failed or lost RPC: doubles from min to max.
  std::chrono::milliseconds min_backoff{5};
  std::chrono::milliseconds max_backoff{500};
  // Batches waiting beyond this are dropped for one PublishImage of the
  // whole local image (the manager's threads never wait on the agent).
  std::size_t max_pending = 4096;
};

struct AgentMirrorStats {
  std::uint64_t batches_forwarded = 0;  // accepted by the agent
  std::uint64_t publishes = 0;          // whole images published
  std::uint64_t heals = 0;              // restarts or refusals that led to a publish
  std::uint64_t retries = 0;            // failed or lost RPCs retried
  std::size_t pending = 0;              // batches not yet forwarded
  bool published = false;               // an image was published to the current agent
  std::string last_error;
};

// Mirrors one index's local offload device to an agent. Every batch the
// manager's control plane applies to the local device (ApplyListener, so
// after the install delay, installs before removals as queued) is sent to
// the agent in the same order; locally refused batches are not sent. At
// start, after an agent restart (its Health instance id changed) and when
// the agent refuses a batch (it lacks the index, holds a published image,
// or its device disagrees) the mirror publishes the whole local image
// instead and continues with the batches after it. Failed or lost RPCs are
// retried with bounded backoff on the mirror's own thread.
//
// Destroy the mirror before the manager.
class AgentMirror final : public offload::ApplyListener {
 public:
  AgentMirror(offload::OffloadManager& manager, std::uint64_t index_id, std::string backend,
              AgentClient client, AgentMirrorOptions options = {});
  ~AgentMirror() override;
  AgentMirror(const AgentMirror&) = delete;
  AgentMirror& operator=(const AgentMirror&) = delete;

  void on_applied(const offload::ChangeBatch& batch, offload::BackendStatus status) override;

  AgentMirrorStats stats() const;

 private:
  struct Item {
    std::shared_ptr<const offload::ChangeBatch> batch;
  };

  void run();
  // Waits out the backoff (or until stop); returns false on stop.
  bool back_off(std::unique_lock<std::mutex>& lock);

  offload::OffloadManager& manager_;
  const std::uint64_t index_id_;
  const std::string backend_;
  const AgentClient client_;
  const AgentMirrorOptions options_;

  mutable std::mutex mu_;
  std::condition_variable wake_;
  std::deque<Item> queue_;                                // guarded by mu_
  std::shared_ptr<const offload::BackendImage> latest_;  // local image after the last batch
  bool seen_apply_ = false;                               // guarded by mu_
  bool need_publish_ = true;                              // guarded by mu_
  std::uint64_t publish_gen_ = 0;   // bumped whenever a publish becomes needed
  std::uint64_t known_instance_ = 0;
  std::chrono::milliseconds backoff_{0};
  bool stop_ = false;
  AgentMirrorStats stats_;  // guarded by mu_ (pending filled in by stats())
  std::thread thread_;
};

}  // namespace forein::net
