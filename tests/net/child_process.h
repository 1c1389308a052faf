// The network tests' child processes (forein-agent, forein-kv-server,
// forein-load run as the real programs): spawn with stdout (and optionally
// stderr) on pipes, read lines with deadlines, signal, reap. A child still
// running when its ChildProcess is destroyed (a failed REQUIRE included) is
// killed with SIGKILL and reaped. Plus the small helpers the tests share:
// the last line of an output, a number from a flat JSON object, and
// polling a condition with a deadline.
#pragma once

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <catch2/catch.hpp>
#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <optional>
#include <string>
#include <thread>
#include <vector>

extern char** environ;

namespace forein::testing {

class ChildProcess {
 public:
  using Clock = std::chrono::steady_clock;

  // Runs bin with args. stdout is always piped; stderr is piped when
  // capture_stderr (then read it with read_stderr, or a chatty child may
  // block on a full pipe), else inherited (it shows in the test's output).
  ChildProcess(std::string bin, std::vector<std::string> args, bool capture_stderr = false) {
    int out[2] = {-1, -1}, err[2] = {-1, -1};
    REQUIRE(::pipe2(out, O_CLOEXEC) == 0);
    if (capture_stderr) REQUIRE(::pipe2(err, O_CLOEXEC) == 0);
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, out[1], 1);
    if (capture_stderr) posix_spawn_file_actions_adddup2(&fa, err[1], 2);
    args.insert(args.begin(), bin);
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    const int rc = posix_spawn(&pid_, bin.c_str(), &fa, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(out[1]);
    out_ = out[0];
    if (capture_stderr) {
      ::close(err[1]);
      err_ = err[0];
    }
    if (rc != 0) pid_ = -1;
    REQUIRE(rc == 0);
  }
  ~ChildProcess() {
    kill_now();
    if (out_ >= 0) ::close(out_);
    if (err_ >= 0) ::close(err_);
  }
  ChildProcess(const ChildProcess&) = delete;
  ChildProcess& operator=(const ChildProcess&) = delete;

  pid_t pid() const { return pid_; }

  // The next stdout line without its newline, or nullopt at EOF or after
  // the deadline.
  std::optional<std::string> read_line(std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    const auto deadline = Clock::now() + timeout;
    for (;;) {
      const std::size_t nl = out_buf_.find('\n');
      if (nl != std::string::npos) {
        std::string line = out_buf_.substr(0, nl);
        out_buf_.erase(0, nl + 1);
        return line;
      }
      if (!fill(out_, out_buf_, deadline)) return std::nullopt;
    }
  }
  // The rest of stdout up to EOF (or the deadline).
  std::string read_all(std::chrono::milliseconds timeout = std::chrono::seconds(120)) {
    const auto deadline = Clock::now() + timeout;
    while (fill(out_, out_buf_, deadline)) {
    }
    std::string all;
    all.swap(out_buf_);
    return all;
  }
  // All of stderr up to EOF (or the deadline); needs capture_stderr.
  std::string read_stderr(std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
    REQUIRE(err_ >= 0);
    const auto deadline = Clock::now() + timeout;
    while (fill(err_, err_buf_, deadline)) {
    }
    return err_buf_;
  }

  static char state_of(const std::string& stat_file) {
    std::ifstream in(stat_file);
    std::string stat((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::size_t paren = stat.rfind(')');
    return paren == std::string::npos || paren + 2 >= stat.size() ? '?' : stat[paren + 2];
  }

  void signal(int sig) {
    REQUIRE(pid_ > 0);
    REQUIRE(::kill(pid_, sig) == 0);
  }
  // The state letter of /proc/PID/stat (R, S, T for stopped ...), or '?'.
  char state() const { return state_of("/proc/" + std::to_string(pid_) + "/stat"); }

  // SIGSTOP, and back once every thread is stopped: kill() only queues the
  // signal, and a thread still running could handle a datagram first.
  void stop_all_threads() {
    signal(SIGSTOP);
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    for (;;) {
      bool all = true;
      for (const auto& task : std::filesystem::directory_iterator("/proc/" + std::to_string(pid_) + "/task")) {
        all = all && state_of(task.path().string() + "/stat") == 'T';
      }
      if (all) return;
      REQUIRE(std::chrono::steady_clock::now() < deadline);
      std::this_thread::yield();
    }
  }
  // SIGKILL and reap, if still running.
  void kill_now() {
    if (pid_ <= 0) return;
    ::kill(pid_, SIGKILL);
    int status = 0;
    ::waitpid(pid_, &status, 0);
    pid_ = -1;
  }
  // Blocks until it exits: its exit status, -1 if a signal ended it.
  int wait_exit() {
    REQUIRE(pid_ > 0);
    int status = 0;
    REQUIRE(::waitpid(pid_, &status, 0) == pid_);
    pid_ = -1;
    return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  }

 private:
  static bool fill(int fd, std::string& buf, Clock::time_point deadline) {
    for (;;) {
      const auto left = std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now());
      if (left.count() <= 0) return false;
      pollfd p{fd, POLLIN, 0};
      const int rc = ::poll(&p, 1, static_cast<int>(left.count()));
      if (rc < 0 && errno == EINTR) continue;
      if (rc <= 0) return false;
      char tmp[4096];
      const ssize_t n = ::read(fd, tmp, sizeof tmp);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return false;
      buf.append(tmp, static_cast<std::size_t>(n));
      return true;
    }
  }

  pid_t pid_ = -1;
  int out_ = -1, err_ = -1;
  std::string out_buf_, err_buf_;
};

// forein-agent and forein-kv-server print `listening HOST:PORT`, then
// `ready` once they serve: the port, or 0 if the child does not get there.
inline int ready_port(ChildProcess& child,
                      std::chrono::milliseconds timeout = std::chrono::seconds(60)) {
  const std::optional<std::string> listening = child.read_line(timeout);
  if (!listening || !listening->starts_with("listening ")) return 0;
  const std::optional<std::string> ready = child.read_line(timeout);
  if (!ready || *ready != "ready") return 0;
  const auto colon = listening->rfind(':');
  return colon == std::string::npos ? 0 : std::stoi(listening->substr(colon + 1));
}

// The last non-empty line of s.
inline std::string last_line(const std::string& s) {
  std::string t = s;
  while (!t.empty() && t.back() == '\n') t.pop_back();
  const auto nl = t.rfind('\n');
  return nl == std::string::npos ? t : t.substr(nl + 1);
}

// The number after "name": in a flat-enough JSON object (the first
// occurrence); -1 if absent.
inline long long json_number(const std::string& json, const std::string& name) {
  const std::string needle = "\"" + name + "\":";
  const std::size_t at = json.find(needle);
  if (at == std::string::npos) return -1;
  return std::stoll(json.substr(at + needle.size()));
}

// Polls pred until it holds or the deadline passes; the last answer.
inline bool eventually(const std::function<bool()>& pred,
                       std::chrono::milliseconds limit = std::chrono::seconds(30)) {
  const auto deadline = std::chrono::steady_clock::now() + limit;
  while (std::chrono::steady_clock::now() < deadline) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // poll interval, not a sync
  }
  return pred();
}

// The last line of a program's output once it exited with `rc`: the JSON
// line forein-load, forein-kv-server and forein-switch end with.
inline std::string exit_json(ChildProcess& child, int rc = 0) {
  const std::string out = child.read_all();
  INFO(out);
  CHECK(child.wait_exit() == rc);
  const std::string json = last_line(out);
  REQUIRE(json.starts_with("{"));
  return json;
}

// SIGTERM, then the exit JSON line of a program that stops cleanly (exit 0).
inline std::string stop_json(ChildProcess& child) {
  child.signal(SIGTERM);
  return exit_json(child);
}

// A fresh directory (memif socket files and the like), removed afterwards.
struct TempDir {
  std::string path;
  TempDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "forein-test-XXXXXX").string();
    REQUIRE(::mkdtemp(tmpl.data()) != nullptr);
    path = tmpl;
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace forein::testing
