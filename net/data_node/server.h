// forein-data-node's server: the log, the handler and the UDP workers.
// Each worker owns a kernel UDP socket bound to the same address with
// SO_REUSEPORT and blocks in poll() on it and on a stop pipe (no busy
// polling); it drains its socket, answers every request to its sender and
// drops (and counts) everything else.
//
// A primary (--backups, paper section V-D) does not answer LOG_APPEND at
// once: the worker reserves the entry, sends LOG_REPLICATE to every backup
// from its own backup socket (an ACK sent to the SO_REUSEPORT address
// could land on another worker), keeps the client's request in a pending
// map and goes on serving; when --acks ACKs are in it commits the entry
// and sends the client's reply. Not ACKed in time: resent (--replicate-
// timeout-us, doubling), and after kReplicateSends sends the client gets
// SERVER_ERROR. Many writes are in flight per worker (the paper's
// coroutines).
#pragma once

#include <sys/socket.h>

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
  // Preloads --keys (throws std::runtime_error if the log fills up);
  // --secondary-index: a LogMode::kSecondaryIndex log and its preload.
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
  void primary_worker(int fd, int backup_fd);

  Options options_;
  DataLog log_;
  DataNodeStats stats_;
  std::unique_ptr<Handler> handler_;
  std::uint64_t preloaded_ = 0;
  std::vector<int> sockets_;
  std::vector<int> backup_sockets_;  // a primary's: one per worker
  struct Peer {
    sockaddr_storage addr{};
    socklen_t len = 0;
    std::string name;  // HOST:PORT as given
  };
  std::vector<Peer> backups_;
  int stop_pipe_[2] = {-1, -1};
  std::atomic<bool> stopping_{false};
  std::vector<std::thread> workers_;
  std::atomic<std::uint16_t> port_{0};
  bool started_ = false;
};

}  // namespace forein::net::data_node
