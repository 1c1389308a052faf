// forein-switch-gen --mode client: the server's STATS over its kernel UDP
// port (--server-stats HOST:PORT), for the counters' deltas over a run and
// for --wait-hints (the server's `hinted` growing).
#pragma once

#include <optional>
#include <string>

namespace forein::net::swgen {

class ServerStats {
 public:
  // An unusable address leaves ok() false (after a message).
  explicit ServerStats(const std::string& host_port);
  ~ServerStats();
  ServerStats(const ServerStats&) = delete;
  ServerStats& operator=(const ServerStats&) = delete;

  bool ok() const { return fd_ >= 0; }
  // The STATS reply's JSON (up to 5 tries of 200 ms); nullopt if none came.
  std::optional<std::string> query();

 private:
  int fd_ = -1;
  std::uint64_t seq_ = 0;
};

// The number that is member `name` of the JSON object json (a STATS
// reply); -1 if json is no object or the member is absent or no number.
double json_field(const std::string& json, const char* name);
// The same for member `name` of the object member `object` ("memif").
double json_field(const std::string& json, const char* object, const char* name);

}  // namespace forein::net::swgen
