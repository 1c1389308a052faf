// The `forein` SQLite virtual table: the engine's B+tree over pages kept in
// a shadow table, so SQLite's pager (rollback journal or WAL) makes every
// commit atomic and durable. Pages are read on demand into a bounded cache
// and written back at commit; see docs/sqlite.md for the design.
//
// Private declarations shared by the module's files (one per role): the
// table with its page store, transaction state and hint source, the SQL
// helpers, and the module's entry points.
//
// Every file is compiled twice: with SQLITE_CORE for the static library
// (direct calls into libsqlite3) and without it for the loadable extension
// (calls go through the sqlite3_api routine table, defined in register.cc).
#ifndef FOREIN_SQLITE_VTAB_H
#define FOREIN_SQLITE_VTAB_H

#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT3

#include <bit>
#include <cstdint>
#include <cstring>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "forein/key.h"
#include "forein/node_interval.h"
#include "forein/offload/registry.h"
#include "forein/page_store.h"
#include "forein/tree.h"

namespace forein::offload {
class Backend;
struct BackendInfo;
class OffloadManager;
}  // namespace forein::offload

namespace forein::sqlite {

// <name>_meta format. 2: <name>_pages(id, gen, page), gen = the committed
// <name>_meta.gen that last wrote the page (format 1 had no gen column);
// a free page is stored as an image with magic 0 (or not at all), so
// finding the free pages reads every page. 3: also <name>_free(id), the
// free pages below max(id) + 1, kept in the same transactions as the page
// writes; a free page's row holds an empty BLOB (its gen still says when
// it was freed). New tables are format 3; a format-2 table is read and
// written as such and converted by the first commit that needed its free
// list (storage.cc, Table::prepare_write_back).
constexpr int kFormat = 3;
constexpr int kFormatNoFreeTable = 2;

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

// Resets a statement at scope exit (also when an exception leaves early).
class StmtReset {
 public:
  explicit StmtReset(const Stmt& s) : s_(s.get()) {}
  ~StmtReset() { sqlite3_reset(s_); }
  StmtReset(const StmtReset&) = delete;
  StmtReset& operator=(const StmtReset&) = delete;

 private:
  sqlite3_stmt* s_;
};

// ------------------------------------------------------------ page store
// (storage.cc)

using PageImage = std::vector<std::byte>;

// The tree's pages, read on demand from <name>_pages (the Table is the
// PageSource) and kept in a bounded cache (Table::trim_cache). Nothing is
// written from here: the table collects the dirty marks (take_dirty) and
// writes the pages back into <name>_pages at transaction boundaries
// (writeback.cc).
class ShadowPageStore final : public PageStore {
 public:
  // `count` pages are stored (max(id) + 1; 0 for a new table).
  ShadowPageStore(std::uint32_t page_size, PageSource* source, PageId count) : PageStore(page_size) {
    tracks_dirty_ = true;
    set_source(source, count);
  }
  void grow(PageId count) { extend_to(count); }
  void sync() override {}
  void take_dirty(const std::function<void(PageId)>& fn) { drain_dirty(fn); }
};

// Pages a connection keeps in memory per table unless set otherwise
// (forein_cache_pages): 64 MiB of 8 KiB pages.
constexpr std::size_t kDefaultCachePages = 8192;

// ------------------------------------------------------------ hint source
// (hints.cc)

// Start hints from the offload path: the project's OffloadManager planning
// from what this connection's page cache holds (ResidentIndex, hints.cc),
// installing the planned records into the table's offload backend
// (offload=NAME; default switch_lpm: FOREIN's layered entries in a
// 73,000-entry LPM table). It learns nodes from the pages descents read
// (note_fetched), the pages the tree's node events name, and the pages a
// commit or rollback replaced (note_replaced), never by reading pages
// itself; a refresh costs what the cache holds, not the table. A whole-tree
// load gets a fresh manager and backend. Hints are advice; the tree
// validates every one.
class ResidentIndex;

class HintSource final : public NodeObserver {
 public:
  HintSource();
  ~HintSource() override;
  HintSource(const HintSource&) = delete;
  HintSource& operator=(const HintSource&) = delete;

  void on_node_event(const NodeEvent& ev) override;
  // Page `id` was read into the cache (Table::read_page).
  void note_fetched(PageId id);
  // Page `id`'s frame was replaced or dropped underneath (another
  // connection's commit, a rollback's restores).
  void note_replaced(PageId id);
  // The backend the next attach() uses (a registered one).
  void set_backend(const offload::BackendInfo& info) { info_ = &info; }
  const char* backend_name() const;
  // Starts hinting for `tree` (created with this observer; the pages read
  // while opening it are already noted).
  void attach(Tree& tree);
  // Forgets the tree and everything learned (its replacement starts over).
  void detach();
  bool attached() const { return tree_ != nullptr; }

  // mode 0: the offload path; 1: random garbage hints; 2: none.
  StartHints hint(std::string_view key);
  int mode = 0;
  std::mt19937_64 rng{1};

  // Runs the first refresh now if it is still due (for forein_stats).
  void ensure_refreshed();
  std::uint64_t installed_entries() const;
  std::uint64_t capacity_entries() const;
  std::uint64_t refreshes() const { return refreshes_; }

 private:
  void refresh();
  bool refresh_due() const;

  const offload::BackendInfo* info_ = nullptr;  // null: offload::default_backend()
  std::unique_ptr<ResidentIndex> index_;
  std::unique_ptr<offload::Backend> backend_;
  std::unique_ptr<offload::OffloadManager> manager_;
  Tree* tree_ = nullptr;
  bool refreshed_ = false;  // since attach
  bool usable_ = false;     // the last refresh knew a level whole
  std::uint64_t ops_since_refresh_ = 0;
  std::uint64_t changes_ = 0;  // pages noted since the last refresh
  // At the last refresh: cached keys and nodes planned from, cached pages,
  // and the tree's fallbacks plus secondary hits (refresh_due).
  std::uint64_t planned_size_ = 0;
  std::size_t planned_resident_ = 0;
  std::uint64_t missed_at_refresh_ = 0;
  std::uint64_t size_at_refresh_ = 0;    // the tree's keys
  std::optional<Word> beyond_;           // the plan's right edge (hint())
  std::uint64_t beyond_ops_ = 0;         // operations right of it since
  std::uint64_t refreshes_ = 0;
};

// ------------------------------------------------------------ the table

enum class KeyType { kInteger, kText };

struct Registry;

// The state at one savepoint: images of the pages that changed between the
// previous capture and xSavepoint(level) (writeback.cc).
struct SavepointImages {
  int level = 0;
  std::map<PageId, PageImage> images;
};

// A write transaction's changes, kept in memory until xSync writes them
// back (writeback.cc). Pages are written only at commit, so inside the
// transaction <name>_pages holds the state at its start.
struct TxnState {
  bool active = false;   // xBegin .. xCommit/xRollback: we hold the write lock
  bool checked = false;  // foreign changes checked since xBegin
  bool poisoned = false; // a change failed midway: only a rollback helps
  bool wrote = false;    // xSync wrote pages (commit may still fail and retry)
  // Format 2 only: the free pages stored in <name>_pages below its
  // max(id) + 1, found by the scan this transaction made before any
  // write-back (storage.cc); its commit turns them into <name>_free.
  std::optional<std::vector<PageId>> scanned_free;
  std::set<PageId> touched;        // changed in this transaction
  std::set<PageId> unflushed;      // changed since the last write-back
  std::set<PageId> since_capture;  // changed since the last savepoint capture
  std::vector<SavepointImages> savepoints;  // ascending level
};

// One table's state in one connection: the tree, its transaction state and
// its hint source. Shared by every sqlite3_vtab SQLite makes for the table
// on this connection (VTab below): a schema change inside a transaction
// (ALTER TABLE of any table, or RENAME of this one) makes SQLite connect a
// new object while the old one, holding the unwritten changes, stays in the
// transaction until it ends. Its storage methods are in storage.cc
// (reading and refreshing) and writeback.cc (transactions).
struct Table final : PageSource {
  sqlite3* db = nullptr;
  std::string schema;
  std::string name;
  KeyType key_type = KeyType::kInteger;
  std::vector<std::string> columns;  // names; [0] is the key
  std::uint32_t page_size = kDefaultPageSize;
  int format = kFormat;  // <name>_meta.format as last read (read_meta)
  // <name>_free lists no id at or above this (max(id) + 1 of <name>_pages
  // before the current write-back), so writing such a page needs no delete.
  PageId free_bound = 0;

  HintSource hints;            // declared before `tree`: the tree's observer
  std::shared_ptr<Tree> tree;  // null until loaded, or after a failure
  std::int64_t gen = -1;       // committed <name>_meta.gen the clean pages reflect
  bool dv_known = false;       // data_version cached
  unsigned data_version = 0;   // SQLITE_FCNTL_DATA_VERSION when gen was last read
  TxnState txn;
  // Pages to restore before the tree is used again (after a rollback):
  // an image, or nullopt for "as in <name>_pages".
  std::map<PageId, std::optional<PageImage>> pending;

  Stmt st_gen, st_set_gen, st_write, st_changed_ids, st_page, st_max_id;
  // On <name>_free (format 3), prepared on first use: a format-2 table
  // has none until its conversion.
  Stmt st_free_ids, st_free_add, st_free_del;
  std::string row_buf;  // xUpdate's encoded row, reused
  std::vector<void*> spare_cursors;  // closed cursors kept for reuse (cursor.cc)
  // Open cursors scanning the tree in place (cursor.cc): their current
  // row views a leaf frame, so detach_scans() copies it before anything
  // changes or evicts frames (writes, trims, refreshes).
  std::vector<void*> open_scans;
  void detach_scans() {
    if (!open_scans.empty()) detach_scans_now();
  }
  void detach_scans_now();  // cursor.cc

  // Counters (tree counters carried across tree replacements).
  // Tree operations started from a key (reads and writes) and the writes
  // among them; every hinted operation is one of them.
  std::uint64_t lookups = 0, writes = 0;
  std::uint64_t base_hint_hits = 0, base_fallbacks = 0, base_hinted = 0;
  std::uint64_t loads = 0, refreshes = 0, pages_read = 0, pages_written = 0;
  std::size_t cache_pages = kDefaultCachePages;  // resident pages kept between operations
  // Resident pages above which the next trim runs: cache_pages, or more
  // after a trim stopped short (pages changed in the open transaction
  // cannot go), so a large transaction does not sweep the cache per row.
  std::size_t trim_at = kDefaultCachePages;

  ~Table() override;

  std::string pages_table() const { return quote_ident(schema) + "." + quote_ident(name + "_pages"); }
  std::string meta_table() const { return quote_ident(schema) + "." + quote_ident(name + "_meta"); }
  std::string free_table() const { return quote_ident(schema) + "." + quote_ident(name + "_free"); }
  // The index on <name>_pages(gen), named <name>_pages_gen (or with a
  // number after it if that name is taken; a RENAME keeps its old name):
  // the pages another connection's commit changed are found without
  // reading every row. Made with the table, or for a table from before it
  // at its first write-back (storage.cc). Once per connection.
  bool gen_index_checked = false;
  void ensure_gen_index();

  std::size_t max_key() const { return page_size / 16; }
  std::size_t max_value() const { return page_size / 8; }
  ShadowPageStore& store() { return static_cast<ShadowPageStore&>(tree->store()); }

  // storage.cc
  void prepare();
  // Reads <name>_meta's gen, and its format into `format` (another
  // connection's commit or a rollback of ours may have changed it).
  std::int64_t read_meta();
  std::int64_t read_gen() { return read_meta(); }
  void fold_stats();
  void mark_stale();
  // Opens the tree on <name>_pages, reading the meta and root pages only;
  // other pages are read when a descent needs them (checksums verified).
  void load_all();
  // PageSource: one page from <name>_pages; the free pages stored
  // (format 3: <name>_free, no page read; format 2: a scan of every page).
  void read_page(PageId id, std::byte* frame) override;
  std::vector<PageId> stored_free_pages(PageId count) override;
  // The free pages stored below `stored` (= stored_page_count()).
  std::vector<PageId> stored_free_below(PageId stored);
  // Called by xSync before it writes pages: re-reads the format and, for
  // a format-2 table whose free pages this transaction scanned, creates
  // <name>_free from the scan and moves the table to format 3.
  void prepare_write_back();
  // forein_check: every page below page_count() is either reachable from
  // the tree or free (stored free, or in memory during a transaction that
  // changed the table), never both; <name>_free agrees with <name>_pages.
  // Throws CorruptionError naming the first bad page. After tree->check().
  void check_free_list(bool in_memory);
  // Evicts pages beyond cache_pages (between operations only).
  void trim_cache() {
    if (tree && store().resident_pages() > trim_at) trim_cache_now();
  }
  void trim_cache_now();
  // max(id) + 1 in <name>_pages.
  PageId stored_page_count();
  // The current tree's counters (Table's base_* carry earlier trees').
  TreeStats own_stats() const { return tree->stats(); }
  // Makes `tree` reflect the database: foreign commits, pending restores.
  void ensure_fresh();
  // Applies `pending` (and pages committed after `gen` when `foreign`).
  void refresh(bool foreign, std::int64_t new_gen);
  void write_page(PageId id, std::int64_t page_gen);

  // writeback.cc
  void collect();
  // Whether this transaction changed the table (in memory or written back):
  // then the tree, not <name>_pages, is the truth. Never throws.
  bool has_unwritten() noexcept;
  void begin_txn();
  int savepoint(int level);
  void release(int level);
  void rollback_to(int level);
  void rollback();
  int sync();
  void commit();

  // The hint path attaches on first use; it reads no pages of its own.
  void attach_hints() {
    if (!hints.attached() && hints.mode != 2) hints.attach(*tree);
  }
  StartHints hint_for(std::string_view key) {
    attach_hints();
    return hints.hint(key);
  }
};

// The sqlite3_vtab SQLite holds; several may share one Table.
struct VTab {
  sqlite3_vtab base{};  // must be first
  Registry* registry = nullptr;
  std::shared_ptr<Table> t;
};
inline Table* table_of(sqlite3_vtab* vt) { return reinterpret_cast<VTab*>(vt)->t.get(); }

// Per connection (the module's client data): the tables' states, by
// registry_key(schema, name).
struct Registry {
  std::map<std::string, std::shared_ptr<Table>> tables;
};
std::string registry_key(const std::string& schema, const std::string& name);

// ------------------------------------------------------------ CREATE args
// (create_args.cc)

struct Spec {
  KeyType key_type = KeyType::kInteger;
  std::vector<std::string> names;
  std::vector<std::string> types;
  std::uint32_t page_size = kDefaultPageSize;
  std::string offload = forein::offload::default_backend().name;  // a registered offload backend
};
// Parses CREATE VIRTUAL TABLE's arguments (argv[3..]); throws SqlError.
Spec parse_args(int argc, const char* const* argv);
// The CREATE TABLE statement declared to SQLite.
std::string declare_sql(const Spec& s);

// ------------------------------------------------------------ row values
// (row_codec.cc)

void encode_value(std::string& out, sqlite3_value* v);
// Offsets of each column's tag inside an encoded row (reuses *offs).
void column_offsets(std::string_view row, std::vector<std::size_t>* offs);
void result_value(sqlite3_context* ctx, std::string_view row, std::size_t off);
// result_value(ctx, row, 0) when the first column is text (the common
// case, inline for xColumn); false for any other first column.
inline bool result_leading_text(sqlite3_context* ctx, std::string_view row) {
  constexpr std::size_t kHeader = 5;  // tag 3, then the length (4 bytes LE)
  if (row.size() < kHeader || row[0] != '\3') return false;
  std::uint32_t n;
  std::memcpy(&n, row.data() + 1, sizeof n);
  if constexpr (std::endian::native == std::endian::big) n = __builtin_bswap32(n);
  if (n > row.size() - kHeader) return false;
  sqlite3_result_text(ctx, row.data() + kHeader, static_cast<int>(n), SQLITE_TRANSIENT);
  return true;
}

// The encoded key for a value written to the table, or an error.
std::string key_for_write(Table* t, sqlite3_value* v);
// An INTEGER key's exact bound for a constraint value, op one of
// SQLITE_INDEX_CONSTRAINT_EQ/GT/GE/LT/LE: a key (inclusive or not), no
// bound (every key passes) or empty (none does).
struct IntBound {
  enum Kind { kKey, kNone, kEmpty } kind;
  std::int64_t key = 0;
  bool inclusive = true;
};
IntBound int_key_bound(sqlite3_value* v, int op);
// A TEXT key's search bound for a constraint value (see row_codec.cc).
std::optional<std::string> key_for_search(Table* t, sqlite3_value* v, bool lower_side,
                                          bool* empty, bool* exact);

// ------------------------------------------------------------ planning
// (best_index.cc)

// idxNum bits.
constexpr int kEq = 1, kIn = 2, kLower = 4, kLowerIncl = 8, kUpper = 16, kUpperIncl = 32,
              kDesc = 64, kLimit = 128, kOffset = 256;

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
void free_spare_cursors(Table* t);
int x_filter(sqlite3_vtab_cursor* cur, int idx, const char* idx_str, int argc,
             sqlite3_value** argv);
int x_next(sqlite3_vtab_cursor* cur);
int x_eof(sqlite3_vtab_cursor* cur);
int x_column(sqlite3_vtab_cursor* cur, sqlite3_context* ctx, int col);
int x_rowid(sqlite3_vtab_cursor* cur, sqlite3_int64* rowid);

// update.cc
int x_update(sqlite3_vtab* vt, int argc, sqlite3_value** argv, sqlite3_int64* rowid);

// writeback.cc
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
// The Table that (name) or (schema, table) names, connecting it if needed.
Table* find_table(sqlite3_context* ctx, int argc, sqlite3_value** argv);

// cache_function.cc: forein_cache_pages(table[, pages]).
void fn_cache_pages(sqlite3_context* ctx, int argc, sqlite3_value** argv);

}  // namespace forein::sqlite

#endif  // FOREIN_SQLITE_VTAB_H
