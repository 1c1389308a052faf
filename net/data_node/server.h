// forein-data-node's server: the log, the handler and the UDP workers.
// Each worker owns a kernel UDP socket bound to the same address with
// SO_REUSEPORT and blocks in poll() on it and on a stop pipe (no busy
// polling); it drains its socket, answers every request to its sender and
// drops (and counts) everything else.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "data_node/handler.h"
#include "data_node/log.h"
#include "data_node/options.h"
#include "data_node/stats.h"

namespace forein::net::data_node {

class Server {
 public:
  // Preloads --keys (throws std::runtime_error if the log fills up).
  explicit Server(const Options& options);
  ~Server();
  Server(const Server&) = delete;
  Server& operator=(const Server&) = delete;

  // Binds options.threads sockets to the listen address; returns the port
  // (the kernel's pick for port 0). Throws std::runtime_error with the
  // reason (address in use, bad host ...).
  std::uint16_t bind();
  // Starts the workers.
  void start();
  // Stops the workers; idempotent.
  void stop();

  std::string stats_json() const { return handler_->stats_json(); }
  DataLog& log() { return log_; }

 private:
  void worker(int fd);

  Options options_;
  DataLog log_;
  DataNodeStats stats_;
  std::unique_ptr<Handler> handler_;
  std::uint64_t preloaded_ = 0;
  std::vector<int> sockets_;
  int stop_pipe_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> workers_;
  std::atomic<std::uint16_t> port_{0};
  bool started_ = false;
};

}  // namespace forein::net::data_node
