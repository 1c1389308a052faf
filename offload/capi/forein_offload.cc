// The C ABI over the offload layer (forein_offload.h). Every entry point
// catches everything: no exception crosses into C.
#include "forein_offload.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <functional>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "forein/offload/manager.h"
#include "forein/offload/registry.h"

namespace {

using forein::NodeInterval;
using forein::StartHints;
using forein::Word;
namespace off = forein::offload;

void set_error(char* errbuf, std::size_t errlen, const char* what) {
  if (errbuf != nullptr && errlen > 0) std::snprintf(errbuf, errlen, "%s", what);
}

// Runs f, turning any exception into its message in errbuf: no exception
// crosses into C. Whether f ran to the end.
template <class F>
bool run_reporting(char* errbuf, std::size_t errlen, F&& f) {
  try {
    f();
    return true;
  } catch (const std::exception& e) {
    set_error(errbuf, errlen, e.what());
  } catch (...) {
    set_error(errbuf, errlen, "forein offload: unknown error");
  }
  return false;
}

const off::BackendInfo* info_of(int id) {
  const auto all = off::registered_backends();
  if (id < 0 || static_cast<std::size_t>(id) >= all.size()) return nullptr;
  return all[static_cast<std::size_t>(id)];
}

std::span<const std::byte> bytes_of(const void* image, std::size_t len) {
  if (image == nullptr) return {};
  return {static_cast<const std::byte*>(image), len};
}

// Copies src into dst, NUL-terminated, cutting it short if need be
// before a UTF-8 lead byte, so a host never sees half a character.
template <std::size_t N>
void copy_name(char (&dst)[N], const std::string& src) {
  static_assert(N > 0);
  std::size_t n = std::min(src.size(), N - 1);
  if (n < src.size()) {
    while (n > 0 && (static_cast<unsigned char>(src[n]) & 0xC0) == 0x80) --n;
  }
  std::memcpy(dst, src.data(), n);
  std::memset(dst + n, 0, N - n);
}

void to_c(const StartHints& h, forein_offload_hints* out) {
  *out = forein_offload_hints{};
  out->primary.node = h.primary.node;
  out->primary.level = h.primary.level;
  out->primary.version = h.primary.version;
  out->secondary.node = h.secondary.node;
  out->secondary.level = h.secondary.level;
  out->secondary.version = h.secondary.version;
}

// The host's node table and key words, handed over by value.
class ArraySource final : public off::IndexSource {
 public:
  void for_each_node(const std::function<void(const NodeInterval&)>& fn) const override {
    for (const NodeInterval& n : nodes) fn(n);
  }
  void for_each_word(const std::function<bool(Word)>& fn) const override {
    for (std::size_t i = 0; i < words.size(); ++i) {
      if (i > 0 && words[i] == words[i - 1]) continue;
      if (!fn(words[i])) return;
    }
  }
  // Advances whenever a refresh hands over other words than the last one
  // (set_words compares them: one pass over memory the host just wrote, far
  // cheaper than its page reads that produced them), so a refresh with the
  // same words (PostgreSQL's, after samples only) reads none in the planner.
  std::uint64_t key_generation() const override { return generation; }
  void set_words(const std::uint64_t* w, std::size_t n) {
    if (n == words.size() && std::equal(w, w + n, words.begin())) return;
    words.assign(w, w + n);
    ++generation;
  }
  std::vector<NodeInterval> nodes;
  std::vector<Word> words;
  std::uint64_t generation = 0;
};

}  // namespace

struct forein_offload_manager {
  forein_offload_manager(const off::BackendInfo& info, const off::BackendConfig& config)
      : backend(info, config), manager(backend, off::ManagerOptions{}) {
    manager.attach(source);
  }
  ~forein_offload_manager() { manager.detach(); }

  ArraySource source;  // guarded by the caller: one writer at a time
  off::Backend backend;
  off::OffloadManager manager;
};

extern "C" {

int forein_offload_backend_count(void) { return static_cast<int>(off::registered_backends().size()); }

const char* forein_offload_backend_name(int id) {
  const off::BackendInfo* info = info_of(id);
  return info != nullptr ? info->name : nullptr;
}

int forein_offload_backend_id(const char* name) {
  if (name == nullptr) return -1;
  const auto all = off::registered_backends();
  for (std::size_t i = 0; i < all.size(); ++i) {
    if (std::strcmp(all[i]->name, name) == 0) return static_cast<int>(i);
  }
  return -1;
}

const char* forein_offload_backend_names(void) {
  try {
    static const std::string names = off::registered_backend_names();
    return names.c_str();
  } catch (...) {
    return "";
  }
}

const char* forein_offload_backend_settings(int id) {
  const off::BackendInfo* info = info_of(id);
  if (info == nullptr) return nullptr;
  try {
    // One text per backend, built once (the registry never changes).
    static const std::vector<std::string> texts = [] {
      std::vector<std::string> out;
      for (const off::BackendInfo* b : off::registered_backends()) {
        std::string text;
        for (const off::SettingSpec& s : b->settings) {
          text += std::string(s.name) + " " + std::to_string(s.default_value) + " " + std::to_string(s.min) + " " +
                  std::to_string(s.max) + " " + s.description + "\n";
        }
        out.push_back(std::move(text));
      }
      return out;
    }();
    return texts[static_cast<std::size_t>(id)].c_str();
  } catch (...) {
    return "";
  }
}

int forein_offload_check_settings(int id, const char* settings, char* errbuf, size_t errlen) {
  const off::BackendInfo* info = info_of(id);
  if (info == nullptr) {
    set_error(errbuf, errlen, "forein offload: bad backend id");
    return -1;
  }
  const bool ok = run_reporting(errbuf, errlen, [&] {
    off::BackendConfig c;
    if (settings != nullptr) off::parse_settings(settings, &c);
    off::check_settings(*info, c);
  });
  return ok ? 0 : -1;
}

const char* forein_offload_backend_capacity_alias(int id) {
  const off::BackendInfo* info = info_of(id);
  return info != nullptr ? info->deprecated_capacity_name : nullptr;
}

const char* forein_offload_default_backend_name(void) { return off::default_backend().name; }

int forein_offload_backend_serves_lookups(int id) {
  const off::BackendInfo* info = info_of(id);
  return info != nullptr && off::serves_lookups(*info) ? 1 : 0;
}

const char* forein_offload_lookup_backend_names(void) {
  try {
    static const std::string names = off::lookup_backend_names();
    return names.c_str();
  } catch (...) {
    return "";
  }
}

int forein_offload_lookup_backend_id(const char* name, char* errbuf, size_t errlen) {
  if (name == nullptr) {
    set_error(errbuf, errlen, "forein offload: null backend name");
    return -1;
  }
  int id = -1;
  run_reporting(errbuf, errlen, [&] { id = forein_offload_backend_id(off::backend_for_lookups(name).name); });
  return id;
}

const char* forein_offload_backend_unit(int id) {
  const off::BackendInfo* info = info_of(id);
  return info != nullptr ? info->unit : nullptr;
}

uint64_t forein_offload_default_capacity(int id) {
  const off::BackendInfo* info = info_of(id);
  return info != nullptr ? info->default_capacity : 0;
}

size_t forein_offload_max_image_bytes(int id, uint64_t capacity) {
  const off::BackendInfo* info = info_of(id);
  if (info == nullptr) return 0;
  try {
    return info->max_image_bytes(capacity != 0 ? capacity : info->default_capacity);
  } catch (...) {
    return 0;
  }
}

void forein_offload_hint_lookup(int id, const void* image, size_t len, uint64_t word,
                                forein_offload_hints* out) {
  const off::BackendInfo* info = info_of(id);
  if (out == nullptr) return;
  if (info == nullptr) {
    *out = forein_offload_hints{};
    return;
  }
  to_c(info->hint(bytes_of(image, len), word), out);  // noexcept
}

size_t forein_offload_image_records(int id, const void* image, size_t len,
                                    forein_offload_record* out, size_t max) {
  const off::BackendInfo* info = info_of(id);
  if (info == nullptr) return 0;
  try {
    const std::vector<off::ImageRecord> records = info->records(bytes_of(image, len));
    const std::size_t n = out == nullptr ? 0 : std::min(max, records.size());
    for (std::size_t i = 0; i < n; ++i) {
      out[i] = forein_offload_record{records[i].key, records[i].node, records[i].level,
                                     records[i].key_bits, records[i].kind};
    }
    return records.size();
  } catch (...) {
    return 0;
  }
}

size_t forein_offload_image_usage(int id, const void* image, size_t len, uint64_t capacity,
                                  forein_offload_usage_row* out, size_t max) {
  const off::BackendInfo* info = info_of(id);
  if (info == nullptr) return 0;
  try {
    const std::vector<off::UsageRow> rows = off::image_usage(*info, bytes_of(image, len), capacity);
    const std::size_t n = out == nullptr ? 0 : std::min(max, rows.size());
    for (std::size_t i = 0; i < n; ++i) {
      forein_offload_usage_row& c = out[i];
      copy_name(c.device, rows[i].device);
      copy_name(c.resource, rows[i].resource);
      copy_name(c.unit, rows[i].unit);
      c.used = rows[i].used;
      c.capacity = rows[i].capacity;
    }
    return rows.size();
  } catch (...) {
    return 0;
  }
}

void forein_offload_config_init(forein_offload_config* config) {
  if (config == nullptr) return;
  const off::BackendConfig d;
  *config = forein_offload_config{};
  config->capacity = d.capacity;
  config->budget = d.budget;
  config->settings = nullptr;
}

forein_offload_manager* forein_offload_manager_create(int id, const forein_offload_config* config,
                                                      char* errbuf, size_t errlen) {
  const off::BackendInfo* info = info_of(id);
  if (info == nullptr) {
    const std::string msg = "unknown offload backend id " + std::to_string(id) +
                            "; registered backends: " + forein_offload_backend_names();
    set_error(errbuf, errlen, msg.c_str());
    return nullptr;
  }
  forein_offload_manager* m = nullptr;
  run_reporting(errbuf, errlen, [&] {
    off::BackendConfig c;
    if (config != nullptr) {
      c.capacity = config->capacity;
      c.budget = config->budget;
      if (config->settings != nullptr) off::parse_settings(config->settings, &c);
    }
    m = new forein_offload_manager(*info, c);
  });
  return m;
}

void forein_offload_manager_destroy(forein_offload_manager* m) { delete m; }

int forein_offload_manager_sync_nodes(forein_offload_manager* m, const forein_offload_node* nodes,
                                      size_t n, char* errbuf, size_t errlen) {
  if (m == nullptr || (nodes == nullptr && n != 0)) {
    set_error(errbuf, errlen, "forein offload: null argument");
    return -1;
  }
  for (std::size_t i = 0; i < n; ++i) {
    if (nodes[i].node == forein::kNoPage) {
      set_error(errbuf, errlen, "forein offload: node 0 in the node table");
      return -1;
    }
  }
  const bool ok = run_reporting(errbuf, errlen, [&] {
    std::vector<NodeInterval> table;
    table.reserve(n);
    for (std::size_t i = 0; i < n; ++i) {
      const forein_offload_node& c = nodes[i];
      NodeInterval iv;
      iv.node = c.node;
      iv.level = c.level;
      iv.lo = c.lo;
      iv.hi = c.hi;
      iv.hi_inf = c.hi_inf != 0;
      iv.version = c.version;
      table.push_back(iv);
    }
    m->manager.sync_nodes(table);
    m->source.nodes = std::move(table);
  });
  return ok ? 0 : -1;
}

void forein_offload_manager_record_access(forein_offload_manager* m, uint64_t word) {
  if (m == nullptr) return;
  try {
    m->manager.record_access(word);
  } catch (...) {
    // a lost sample only changes a weight
  }
}

int forein_offload_manager_refresh(forein_offload_manager* m, const uint64_t* words, size_t nwords,
                                   char* errbuf, size_t errlen) {
  if (m == nullptr || (words == nullptr && nwords != 0)) {
    set_error(errbuf, errlen, "forein offload: null argument");
    return -1;
  }
  if (!std::is_sorted(words, words + nwords)) {
    set_error(errbuf, errlen, "forein offload: key words must be ascending");
    return -1;
  }
  const bool ok = run_reporting(errbuf, errlen, [&] {
    m->source.set_words(words, nwords);
    m->manager.refresh();
    m->manager.flush();
  });
  return ok ? 0 : -1;
}

size_t forein_offload_manager_image(forein_offload_manager* m, void* buf, size_t buflen,
                                    uint64_t* version) {
  if (m == nullptr) return 0;
  const std::shared_ptr<const off::BackendImage> image = m->backend.device().load_image();
  if (version != nullptr) *version = image->version;
  if (buf != nullptr && buflen >= image->bytes.size() && !image->bytes.empty()) {
    std::memcpy(buf, image->bytes.data(), image->bytes.size());
  }
  return image->bytes.size();
}

void forein_offload_manager_hint(const forein_offload_manager* m, uint64_t word,
                                 forein_offload_hints* out) {
  if (out == nullptr) return;
  if (m == nullptr) {
    *out = forein_offload_hints{};
    return;
  }
  to_c(m->manager.hint_for_word(word), out);
}

void forein_offload_manager_stats(const forein_offload_manager* m, forein_offload_stats* out) {
  if (out == nullptr) return;
  *out = forein_offload_stats{};
  if (m == nullptr) return;
  try {
    const off::BackendUsage usage = m->backend.usage();
    const off::ManagerStats s = m->manager.stats();
    const std::shared_ptr<const off::BackendImage> image = m->backend.device().load_image();
    out->used = usage.used;
    out->capacity = usage.capacity;
    out->target_records = s.target_entries;
    out->live_nodes = s.live_nodes;
    out->invalid_nodes = s.invalid_nodes;
    out->refreshes = s.refreshes;
    out->failed_installs = s.failed_installs;
    out->image_bytes = image->bytes.size();
    out->image_version = image->version;
    out->plans = s.plans;
    out->skipped_refreshes = s.skipped_refreshes;
  } catch (...) {
    // leave zeros
  }
}

}  // extern "C"
