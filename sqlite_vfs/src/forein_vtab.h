// The `forein` SQLite virtual table: the engine's B+tree over pages kept in
// a shadow table, so SQLite's pager (rollback journal or WAL) makes every
// change atomic and durable. See docs/sqlite.md for the design.
//
// Private declarations shared by the module's files (one per role): the
// table with its page store and hint map, the SQL helpers, and the module's
// entry points.
//
// Every file is compiled twice: with SQLITE_CORE for the static library
// (direct calls into libsqlite3) and without it for the loadable extension
// (calls go through the sqlite3_api routine table, defined in register.cc).
#ifndef FOREIN_SQLITE_VTAB_H
#define FOREIN_SQLITE_VTAB_H

#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT3

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "forein/key.h"
#include "forein/node_interval.h"
#include "forein/page_store.h"
#include "forein/tree.h"

namespace forein::sqlite {

constexpr std::size_t kHintCapacity = 65536;  // hint entries per table at most
constexpr int kFormat = 1;                      // <name>_meta format

// ---------------------------------------------------------------- helpers

std::string quote_ident(std::string_view s);
std::string lower(std::string s);
std::string trim(std::string_view s);

// An error carrying an SQLite result code and message.
struct SqlError {
  int rc;
  std::string msg;
};

// Sets the table's error message.
void set_error(sqlite3_vtab* vt, const std::string& msg);
// Runs `sql`; throws SqlError on failure.
int exec(sqlite3* db, const std::string& sql);

// RAII prepared statement.
class Stmt {
 public:
  Stmt() = default;
  Stmt(sqlite3* db, const std::string& sql) {
    if (sqlite3_prepare_v2(db, sql.c_str(), -1, &s_, nullptr) != SQLITE_OK) {
      std::string msg = sqlite3_errmsg(db);
      throw SqlError{sqlite3_errcode(db), msg};
    }
  }
  ~Stmt() { sqlite3_finalize(s_); }
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;
  Stmt(Stmt&& o) noexcept : s_(o.s_) { o.s_ = nullptr; }
  Stmt& operator=(Stmt&& o) noexcept {
    std::swap(s_, o.s_);
    return *this;
  }
  sqlite3_stmt* get() const { return s_; }
  // Steps once; true on a row, false when done; throws on error.
  bool step() {
    const int rc = sqlite3_step(s_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) {
      sqlite3_reset(s_);
      return false;
    }
    sqlite3* db = sqlite3_db_handle(s_);
    SqlError e{rc, sqlite3_errmsg(db)};
    sqlite3_reset(s_);
    throw e;
  }
  void reset() { sqlite3_reset(s_); }

 private:
  sqlite3_stmt* s_ = nullptr;
};

// ------------------------------------------------------------ page store
// (storage.cc)

// Pages in memory, loaded from <name>_pages; sync() hands the dirty ones to
// a writer (an INSERT OR REPLACE into the shadow table).
class ShadowPageStore final : public PageStore {
 public:
  using Writer = std::function<void(PageId, const std::byte*, std::size_t)>;
  ShadowPageStore(std::uint32_t page_size, Writer writer)
      : PageStore(page_size), writer_(std::move(writer)) {
    tracks_dirty_ = true;
  }
  void grow(PageId count) { grow_to(count); }
  void finish_load() { rebuild_free_list(); }
  void sync() override;

 private:
  Writer writer_;
};

// ------------------------------------------------------------ hint source
// (hints.cc)

// A per-table range map from a leaf's low word to the leaf, kept current
// by the tree's node-interval events (the in-process stand-in for a
// switch's LPM table). Entries may be stale: the tree validates every hint.
class HintMap final : public NodeObserver {
 public:
  void on_node_event(const NodeEvent& ev) override;
  void install(const NodeInterval& iv);
  void clear() { map_.clear(); }
  std::size_t size() const { return map_.size(); }

  // mode 0: the map; 1: random garbage hints; 2: none.
  StartHints lookup(std::string_view key);
  int mode = 0;
  std::mt19937_64 rng{1};

 private:
  std::map<Word, Hint> map_;
};

// ------------------------------------------------------------ the table

enum class KeyType { kInteger, kText };

struct Registry;

// The table's storage methods (prepare .. begin_write) are in storage.cc.
struct Table {
  sqlite3_vtab base{};  // must be first
  sqlite3* db = nullptr;
  Registry* registry = nullptr;
  std::string schema;
  std::string name;
  KeyType key_type = KeyType::kInteger;
  std::vector<std::string> columns;  // names; [0] is the key
  std::uint32_t page_size = kDefaultPageSize;

  std::shared_ptr<Tree> tree;  // null while stale
  std::int64_t gen = -1;       // <name>_meta.gen the tree reflects
  bool bumped = false;         // gen bumped in the current write transaction
  HintMap hints;

  Stmt st_gen, st_bump, st_write;

  // Counters carried across reloads.
  std::uint64_t lookups = 0;
  std::uint64_t base_hint_hits = 0, base_fallbacks = 0, base_hinted = 0;
  std::uint64_t reloads = 0;

  std::string pages_table() const { return quote_ident(schema) + "." + quote_ident(name + "_pages"); }
  std::string meta_table() const { return quote_ident(schema) + "." + quote_ident(name + "_meta"); }

  std::size_t max_key() const { return page_size / 16; }
  std::size_t max_value() const { return page_size / 8; }

  void prepare();
  ShadowPageStore::Writer writer();
  void fold_stats();
  void mark_stale();
  std::int64_t read_gen();
  // Loads every page from the shadow table and opens the tree on them.
  void load(std::int64_t g);
  // Makes `tree` reflect the database's current contents.
  void ensure_fresh();
  // Before a change: fresh tree, gen bumped on every change.
  void begin_write();

  StartHints hint_for(std::string_view key) { return hints.lookup(key); }
};

struct Registry {
  std::map<std::string, Table*> tables;  // lower-case name
};

// ------------------------------------------------------------ row values
// (row_codec.cc)

void encode_value(std::string& out, sqlite3_value* v);
// Offsets of each column's tag inside an encoded row.
std::vector<std::size_t> column_offsets(std::string_view row);
void result_value(sqlite3_context* ctx, std::string_view row, std::size_t off);

// The encoded key for a value written to the table, or an error.
std::string key_for_write(Table* t, sqlite3_value* v);
// A search bound for a constraint value (see row_codec.cc).
std::optional<std::string> key_for_search(Table* t, sqlite3_value* v, bool lower_side,
                                          bool* empty, bool* exact);

// ------------------------------------------------------------ planning
// (best_index.cc)

// idxNum bits.
constexpr int kEq = 1, kIn = 2, kLower = 4, kLowerIncl = 8, kUpper = 16, kUpperIncl = 32,
              kDesc = 64;

// ------------------------------------------------------------ module methods

// module.cc
int x_create(sqlite3* db, void* aux, int argc, const char* const* argv, sqlite3_vtab** out,
             char** err);
int x_connect(sqlite3* db, void* aux, int argc, const char* const* argv, sqlite3_vtab** out,
              char** err);
int x_disconnect(sqlite3_vtab* vt);
int x_destroy(sqlite3_vtab* vt);
int x_rename(sqlite3_vtab* vt, const char* new_name);
int x_shadow_name(const char* suffix);

// best_index.cc
int x_best_index(sqlite3_vtab* vt, sqlite3_index_info* info);

// cursor.cc
int x_open(sqlite3_vtab* vt, sqlite3_vtab_cursor** out);
int x_close(sqlite3_vtab_cursor* cur);
int x_filter(sqlite3_vtab_cursor* cur, int idx, const char* idx_str, int argc,
             sqlite3_value** argv);
int x_next(sqlite3_vtab_cursor* cur);
int x_eof(sqlite3_vtab_cursor* cur);
int x_column(sqlite3_vtab_cursor* cur, sqlite3_context* ctx, int col);
int x_rowid(sqlite3_vtab_cursor* cur, sqlite3_int64* rowid);

// update.cc
int x_update(sqlite3_vtab* vt, int argc, sqlite3_value** argv, sqlite3_int64* rowid);
int x_begin(sqlite3_vtab* vt);
int x_sync(sqlite3_vtab* vt);
int x_commit(sqlite3_vtab* vt);
int x_rollback(sqlite3_vtab* vt);
int x_savepoint(sqlite3_vtab* vt, int n);
int x_release(sqlite3_vtab* vt, int n);
int x_rollback_to(sqlite3_vtab* vt, int n);

// ------------------------------------------------------------ functions
// (functions.cc)

void fn_stats(sqlite3_context* ctx, int argc, sqlite3_value** argv);
void fn_check(sqlite3_context* ctx, int argc, sqlite3_value** argv);
void fn_debug_hints(sqlite3_context* ctx, int argc, sqlite3_value** argv);

}  // namespace forein::sqlite

#endif  // FOREIN_SQLITE_VTAB_H
