// The `forein` SQLite virtual table: the engine's B+tree over pages kept in
// a shadow table, so SQLite's pager (rollback journal or WAL) makes every
// change atomic and durable. See docs/sqlite.md for the design.
//
// Compiled twice: with SQLITE_CORE for the static library (direct calls
// into libsqlite3) and without it for the loadable extension (calls go
// through the sqlite3_api routine table).
#include <sqlite3ext.h>
SQLITE_EXTENSION_INIT1

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "forein/error.h"
#include "forein/key.h"
#include "forein/node_interval.h"
#include "forein/page_store.h"
#include "forein/sqlite.h"
#include "forein/tree.h"

namespace forein::sqlite {
namespace {

constexpr std::size_t kHintCapacity = 65536;  // hint entries per table at most
constexpr int kFormat = 1;                      // <name>_meta format

// ---------------------------------------------------------------- helpers

std::string quote_ident(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';
    out += c;
  }
  return out + "\"";
}

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

std::string trim(std::string_view s) {
  std::size_t b = 0, e = s.size();
  while (b < e && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
  while (e > b && std::isspace(static_cast<unsigned char>(s[e - 1]))) --e;
  return std::string(s.substr(b, e - b));
}

void put_le32(std::byte* p, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<std::byte>(v >> (8 * i));
}
std::uint32_t get_le32(const std::byte* p) {
  std::uint32_t v = 0;
  for (int i = 3; i >= 0; --i) v = (v << 8) | std::to_integer<std::uint32_t>(p[i]);
  return v;
}
std::uint32_t page_crc(const std::byte* page, std::uint32_t page_size) {
  constexpr std::byte kZeros[kPageMagicOffset] = {};
  return crc32c(page + kPageMagicOffset, page_size - kPageMagicOffset,
                crc32c(kZeros, sizeof kZeros));
}
bool all_zero(const std::byte* p, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i)
    if (p[i] != std::byte{0}) return false;
  return true;
}

// An error carrying an SQLite result code and message.
struct SqlError {
  int rc;
  std::string msg;
};

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
  void sync() override {
    std::vector<PageId> ids;
    drain_dirty([&ids](PageId id) { ids.push_back(id); });
    std::sort(ids.begin(), ids.end());
    std::vector<std::byte> img(page_size());
    for (PageId id : ids) {
      const std::byte* p = page(id);
      std::memset(img.data(), 0, kPageMagicOffset);
      std::memcpy(img.data() + kPageMagicOffset, p + kPageMagicOffset,
                  page_size() - kPageMagicOffset);
      put_le32(img.data() + kPageChecksumOffset, page_crc(p, page_size()));
      writer_(id, img.data(), img.size());
    }
  }

 private:
  Writer writer_;
};

// ------------------------------------------------------------ hint source

// A per-table range map from a leaf's low word to the leaf, kept current
// by the tree's node-interval events (the in-process stand-in for a
// switch's LPM table). Entries may be stale: the tree validates every hint.
class HintMap final : public NodeObserver {
 public:
  void on_node_event(const NodeEvent& ev) override {
    const NodeInterval& iv = ev.interval;
    if (iv.level != 0) return;
    switch (ev.kind) {
      case NodeEventKind::kDeleted: {
        auto it = map_.find(iv.lo);
        if (it != map_.end() && it->second.node == iv.node) map_.erase(it);
        break;
      }
      case NodeEventKind::kCreated:
      case NodeEventKind::kSplit:
      case NodeEventKind::kRangeChanged:
        install(iv);
        break;
    }
  }
  void install(const NodeInterval& iv) {
    if (iv.empty()) return;
    auto it = map_.find(iv.lo);
    if (it == map_.end() && map_.size() >= kHintCapacity) return;
    map_[iv.lo] = Hint{iv.node, 0, iv.version};
  }
  void clear() { map_.clear(); }
  std::size_t size() const { return map_.size(); }

  // mode 0: the map; 1: random garbage hints; 2: none.
  StartHints lookup(std::string_view key) {
    StartHints h;
    if (mode == 2) return h;
    if (mode == 1) {
      h.primary = Hint{static_cast<PageId>(rng() % 4096), static_cast<std::uint16_t>(rng() % 3),
                       rng() % 8};
      h.secondary = Hint{static_cast<PageId>(rng() % 4096), static_cast<std::uint16_t>(rng() % 3),
                         rng() % 8};
      return h;
    }
    const Word w = word_of(key);
    auto it = map_.upper_bound(w);
    if (it == map_.begin()) return h;
    --it;
    h.primary = it->second;
    return h;
  }
  int mode = 0;
  std::mt19937_64 rng{1};

 private:
  std::map<Word, Hint> map_;
};

// ------------------------------------------------------------ row values

// Non-key columns, each as a tag byte then its payload:
//   0 NULL; 1 integer (8 bytes LE); 2 real (8 bytes); 3 text, 4 blob
//   (4-byte LE length, bytes).
void encode_value(std::string& out, sqlite3_value* v) {
  switch (sqlite3_value_type(v)) {
    case SQLITE_NULL:
      out += '\0';
      break;
    case SQLITE_INTEGER: {
      out += '\1';
      const auto i = static_cast<std::uint64_t>(sqlite3_value_int64(v));
      for (int b = 0; b < 8; ++b) out += static_cast<char>(i >> (8 * b));
      break;
    }
    case SQLITE_FLOAT: {
      out += '\2';
      const double d = sqlite3_value_double(v);
      char buf[8];
      std::memcpy(buf, &d, 8);
      out.append(buf, 8);
      break;
    }
    default: {
      const bool text = sqlite3_value_type(v) == SQLITE_TEXT;
      const void* p = text ? static_cast<const void*>(sqlite3_value_text(v)) : sqlite3_value_blob(v);
      const auto n = static_cast<std::uint32_t>(sqlite3_value_bytes(v));
      out += text ? '\3' : '\4';
      for (int b = 0; b < 4; ++b) out += static_cast<char>(n >> (8 * b));
      if (n > 0) out.append(static_cast<const char*>(p), n);
      break;
    }
  }
}

// Offsets of each column's tag inside an encoded row.
std::vector<std::size_t> column_offsets(std::string_view row) {
  std::vector<std::size_t> offs;
  std::size_t i = 0;
  while (i < row.size()) {
    offs.push_back(i);
    const char tag = row[i++];
    if (tag == 1 || tag == 2) {
      i += 8;
    } else if (tag == 3 || tag == 4) {
      std::uint32_t n = 0;
      for (int b = 3; b >= 0; --b) n = (n << 8) | static_cast<unsigned char>(row[i + b]);
      i += 4 + n;
    }
  }
  return offs;
}

void result_value(sqlite3_context* ctx, std::string_view row, std::size_t off) {
  const char tag = row[off];
  const char* p = row.data() + off + 1;
  switch (tag) {
    case 1: {
      std::uint64_t i = 0;
      for (int b = 7; b >= 0; --b) i = (i << 8) | static_cast<unsigned char>(p[b]);
      sqlite3_result_int64(ctx, static_cast<sqlite3_int64>(i));
      return;
    }
    case 2: {
      double d;
      std::memcpy(&d, p, 8);
      sqlite3_result_double(ctx, d);
      return;
    }
    case 3:
    case 4: {
      std::uint32_t n = 0;
      for (int b = 3; b >= 0; --b) n = (n << 8) | static_cast<unsigned char>(p[b]);
      if (tag == 3) {
        sqlite3_result_text(ctx, p + 4, static_cast<int>(n), SQLITE_TRANSIENT);
      } else {
        sqlite3_result_blob(ctx, p + 4, static_cast<int>(n), SQLITE_TRANSIENT);
      }
      return;
    }
    default:
      sqlite3_result_null(ctx);
  }
}

// ------------------------------------------------------------ the table

enum class KeyType { kInteger, kText };

struct Registry;

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

  void prepare() {
    st_gen = Stmt(db, "SELECT gen FROM " + meta_table() + " WHERE id = 0");
    st_bump = Stmt(db, "UPDATE " + meta_table() + " SET gen = gen + 1 WHERE id = 0");
    st_write = Stmt(db, "INSERT OR REPLACE INTO " + pages_table() + "(id, page) VALUES (?, ?)");
  }

  ShadowPageStore::Writer writer() {
    return [this](PageId id, const std::byte* p, std::size_t n) {
      sqlite3_bind_int64(st_write.get(), 1, id);
      sqlite3_bind_blob(st_write.get(), 2, p, static_cast<int>(n), SQLITE_STATIC);
      st_write.step();
      sqlite3_clear_bindings(st_write.get());
    };
  }

  void fold_stats() {
    if (!tree) return;
    const TreeStats s = tree->stats();
    base_hint_hits += s.hint_hits;
    base_fallbacks += s.fallbacks;
    base_hinted += s.hinted;
  }

  void mark_stale() {
    fold_stats();
    tree.reset();
    gen = -1;
    bumped = false;
  }

  std::int64_t read_gen() {
    if (!st_gen.step()) throw SqlError{SQLITE_CORRUPT, "forein: " + name + "_meta has no row"};
    const std::int64_t g = sqlite3_column_int64(st_gen.get(), 0);
    st_gen.reset();
    return g;
  }

  // Loads every page from the shadow table and opens the tree on them.
  void load(std::int64_t g) {
    fold_stats();
    tree.reset();
    auto store = std::make_unique<ShadowPageStore>(page_size, writer());
    Stmt q(db, "SELECT id, page FROM " + pages_table() + " ORDER BY id");
    while (q.step()) {
      const sqlite3_int64 id = sqlite3_column_int64(q.get(), 0);
      const void* blob = sqlite3_column_blob(q.get(), 1);
      const int n = sqlite3_column_bytes(q.get(), 1);
      if (id < 0 || id >= (std::int64_t{1} << 24)) {
        throw CorruptionError("forein: " + name + "_pages: page id " + std::to_string(id) + " out of range");
      }
      if (n != static_cast<int>(page_size)) {
        throw CorruptionError("forein: " + name + "_pages: page " + std::to_string(id) + " has " +
                              std::to_string(n) + " bytes, expected " + std::to_string(page_size));
      }
      const auto pid = static_cast<PageId>(id);
      if (pid >= store->page_count()) store->grow(pid + 1);
      std::byte* frame = store->page(pid);
      std::memcpy(frame, blob, page_size);
      const std::uint32_t stored = get_le32(frame + kPageChecksumOffset);
      if (stored != page_crc(frame, page_size) && !(stored == 0 && all_zero(frame, page_size))) {
        throw CorruptionError("forein: " + name + "_pages: page " + std::to_string(id) +
                              ": checksum mismatch");
      }
      std::memset(frame, 0, kPageLatchBytes);
    }
    if (store->page_count() == 0) throw CorruptionError("forein: " + name + "_pages is empty");
    store->finish_load();
    hints.clear();
    TreeOptions opts;
    opts.observer = &hints;
    tree = std::shared_ptr<Tree>(Tree::open(std::move(store), opts));
    tree->for_each_node([this](const NodeInterval& iv) {
      if (iv.level == 0) hints.install(iv);
    });
    gen = g;
    ++reloads;
  }

  // Makes `tree` reflect the database's current contents.
  void ensure_fresh() {
    const std::int64_t g = read_gen();
    if (tree && g == gen) return;
    load(g);
  }

  // Before a change: fresh tree, gen bumped on every change. Bumping per
  // change (not per transaction) means any rollback SQLite performs on the
  // shadow tables (statement, savepoint or transaction) leaves a gen that
  // differs from the cached one, so the tree is reloaded even if no
  // xRollback/xRollbackTo reached us.
  void begin_write() {
    ensure_fresh();
    st_bump.step();
    gen += 1;
  }

  StartHints hint_for(std::string_view key) { return hints.lookup(key); }
};

struct Registry {
  std::map<std::string, Table*> tables;  // lower-case name
};

// -------------------------------------------------------- CREATE parsing

struct Spec {
  KeyType key_type = KeyType::kInteger;
  std::vector<std::string> names;
  std::vector<std::string> types;
  std::uint32_t page_size = kDefaultPageSize;
};

// A declared type name only, like SQLite's: words, optionally "(n)" or
// "(n, m)"; no constraints (they would be silently ignored on a virtual
// table).
bool valid_type(const std::string& t) {
  std::size_t i = 0;
  while (i < t.size() && (std::isalnum(static_cast<unsigned char>(t[i])) || t[i] == '_' || t[i] == ' ')) ++i;
  if (i < t.size()) {
    if (t[i] != '(' || t.back() != ')') return false;
    for (std::size_t j = i + 1; j + 1 < t.size(); ++j) {
      if (!(std::isdigit(static_cast<unsigned char>(t[j])) || t[j] == ' ' || t[j] == ',')) return false;
    }
  }
  std::string word;
  const std::string lt = lower(t.substr(0, i)) + " ";
  for (char c : lt) {
    if (c == ' ') {
      static const char* kBad[] = {"check", "default", "references", "primary", "unique", "not",
                                   "null", "collate", "generated", "as", "constraint", "hidden"};
      for (const char* b : kBad)
        if (word == b) return false;
      word.clear();
    } else {
      word += c;
    }
  }
  return true;
}

// Splits a column argument into (name, declared type).
bool split_column(const std::string& arg, std::string* name, std::string* type) {
  std::string a = trim(arg);
  if (a.empty()) return false;
  std::size_t i = 0;
  if (a[0] == '"' || a[0] == '`' || a[0] == '[') {
    const char close = a[0] == '[' ? ']' : a[0];
    std::string n;
    for (i = 1; i < a.size(); ++i) {
      if (a[i] == close) {
        if (close != ']' && i + 1 < a.size() && a[i + 1] == close) {
          n += close;
          ++i;
          continue;
        }
        break;
      }
      n += a[i];
    }
    if (i >= a.size() || n.empty()) return false;
    ++i;
    *name = n;
  } else {
    while (i < a.size() && (std::isalnum(static_cast<unsigned char>(a[i])) || a[i] == '_')) ++i;
    if (i == 0) return false;
    *name = a.substr(0, i);
  }
  *type = trim(a.substr(i));
  return true;
}

Spec parse_args(int argc, const char* const* argv) {
  Spec s;
  for (int i = 3; i < argc; ++i) {
    const std::string arg = trim(argv[i]);
    if (const auto eq = arg.find('='); eq != std::string::npos) {
      const std::string opt = lower(trim(arg.substr(0, eq)));
      const std::string val = trim(arg.substr(eq + 1));
      if (opt == "page_size") {
        char* end = nullptr;
        const unsigned long ps = std::strtoul(val.c_str(), &end, 10);
        if (val.empty() || *end != '\0' || ps < kMinPageSize || ps > kMaxPageSize ||
            (ps & (ps - 1)) != 0) {
          throw SqlError{SQLITE_ERROR, "forein: page_size must be a power of two in [4096, 32768], got '" +
                                           val + "'"};
        }
        s.page_size = static_cast<std::uint32_t>(ps);
        continue;
      }
      throw SqlError{SQLITE_ERROR, "forein: unknown option '" + opt + "'"};
    }
    std::string name, type;
    if (!split_column(arg, &name, &type)) {
      throw SqlError{SQLITE_ERROR, "forein: malformed column definition '" + arg + "'"};
    }
    if (!valid_type(type)) {
      throw SqlError{SQLITE_ERROR, "forein: unsupported column type or constraint in '" + arg +
                                       "' (only a type name is allowed)"};
    }
    for (const auto& n : s.names) {
      if (lower(n) == lower(name)) {
        throw SqlError{SQLITE_ERROR, "forein: duplicate column name '" + name + "'"};
      }
    }
    s.names.push_back(name);
    s.types.push_back(type);
  }
  if (s.names.empty()) {
    throw SqlError{SQLITE_ERROR,
                   "forein: missing key column: USING forein(key INTEGER|TEXT, other columns...)"};
  }
  const std::string kt = lower(s.types[0]);
  if (kt == "integer" || kt == "int") {
    s.key_type = KeyType::kInteger;
  } else if (kt == "text") {
    s.key_type = KeyType::kText;
  } else {
    throw SqlError{SQLITE_ERROR, "forein: the first column '" + s.names[0] +
                                     "' is the key and must be declared INTEGER or TEXT (got '" +
                                     s.types[0] + "')"};
  }
  return s;
}

std::string declare_sql(const Spec& s) {
  std::string sql = "CREATE TABLE x(";
  for (std::size_t i = 0; i < s.names.size(); ++i) {
    if (i) sql += ", ";
    sql += quote_ident(s.names[i]);
    if (i == 0) {
      sql += s.key_type == KeyType::kInteger ? " INTEGER PRIMARY KEY NOT NULL"
                                             : " TEXT PRIMARY KEY NOT NULL";
    } else if (!s.types[i].empty()) {
      sql += " " + s.types[i];
    }
  }
  return sql + ") WITHOUT ROWID";
}

void set_error(sqlite3_vtab* vt, const std::string& msg) {
  sqlite3_free(vt->zErrMsg);
  vt->zErrMsg = sqlite3_mprintf("%s", msg.c_str());
}

int exec(sqlite3* db, const std::string& sql) {
  char* err = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err);
  if (rc != SQLITE_OK) {
    std::string m = err ? err : sqlite3_errstr(rc);
    sqlite3_free(err);
    throw SqlError{rc, m};
  }
  return rc;
}

int construct(sqlite3* db, void* aux, int argc, const char* const* argv, sqlite3_vtab** out,
              char** err, bool create) {
  auto* reg = static_cast<Registry*>(aux);
  std::unique_ptr<Table> t;
  try {
    Spec s = parse_args(argc, argv);
    t = std::make_unique<Table>();
    t->db = db;
    t->registry = reg;
    t->schema = argv[1];
    t->name = argv[2];
    t->key_type = s.key_type;
    t->columns = s.names;
    if (create) {
      exec(db, "CREATE TABLE " + t->pages_table() + "(id INTEGER PRIMARY KEY, page BLOB NOT NULL)");
      exec(db, "CREATE TABLE " + t->meta_table() +
                   "(id INTEGER PRIMARY KEY CHECK (id = 0), format INTEGER NOT NULL, "
                   "page_size INTEGER NOT NULL, key_type TEXT NOT NULL, gen INTEGER NOT NULL)");
      exec(db, "INSERT INTO " + t->meta_table() + " VALUES (0, " + std::to_string(kFormat) + ", " +
                   std::to_string(s.page_size) + ", '" +
                   (s.key_type == KeyType::kInteger ? "integer" : "text") + "', 0)");
      t->page_size = s.page_size;
      t->prepare();
      auto store = std::make_unique<ShadowPageStore>(t->page_size, t->writer());
      TreeOptions opts;
      opts.observer = &t->hints;
      t->tree = std::shared_ptr<Tree>(Tree::create(std::move(store), opts));
      t->tree->for_each_node([&t](const NodeInterval& iv) {
        if (iv.level == 0) t->hints.install(iv);
      });
      t->tree->sync();
      t->gen = 0;
    } else {
      Stmt q(db, "SELECT format, page_size, key_type FROM " + t->meta_table() + " WHERE id = 0");
      if (!q.step()) throw SqlError{SQLITE_CORRUPT, "forein: " + t->name + "_meta has no row"};
      if (sqlite3_column_int(q.get(), 0) != kFormat) {
        throw SqlError{SQLITE_ERROR, "forein: " + t->name + ": unsupported format " +
                                         std::to_string(sqlite3_column_int(q.get(), 0))};
      }
      t->page_size = static_cast<std::uint32_t>(sqlite3_column_int(q.get(), 1));
      q.reset();
      t->prepare();
    }
    const std::string decl = declare_sql(s);
    if (sqlite3_declare_vtab(db, decl.c_str()) != SQLITE_OK) {
      throw SqlError{SQLITE_ERROR, std::string("forein: declare_vtab: ") + sqlite3_errmsg(db)};
    }
    sqlite3_vtab_config(db, SQLITE_VTAB_CONSTRAINT_SUPPORT, 1);
  } catch (const SqlError& e) {
    *err = sqlite3_mprintf("%s", e.msg.c_str());
    return e.rc == SQLITE_OK ? SQLITE_ERROR : e.rc;
  } catch (const std::exception& e) {
    *err = sqlite3_mprintf("forein: %s", e.what());
    return SQLITE_ERROR;
  }
  reg->tables[lower(t->name)] = t.get();
  *out = &t.release()->base;
  return SQLITE_OK;
}

int x_create(sqlite3* db, void* aux, int argc, const char* const* argv, sqlite3_vtab** out,
             char** err) {
  return construct(db, aux, argc, argv, out, err, true);
}
int x_connect(sqlite3* db, void* aux, int argc, const char* const* argv, sqlite3_vtab** out,
              char** err) {
  return construct(db, aux, argc, argv, out, err, false);
}

int x_disconnect(sqlite3_vtab* vt) {
  auto* t = reinterpret_cast<Table*>(vt);
  auto it = t->registry->tables.find(lower(t->name));
  if (it != t->registry->tables.end() && it->second == t) t->registry->tables.erase(it);
  delete t;
  return SQLITE_OK;
}

int x_destroy(sqlite3_vtab* vt) {
  auto* t = reinterpret_cast<Table*>(vt);
  try {
    exec(t->db, "DROP TABLE IF EXISTS " + t->pages_table());
    exec(t->db, "DROP TABLE IF EXISTS " + t->meta_table());
  } catch (const SqlError& e) {
    set_error(vt, e.msg);
    return e.rc;
  }
  return x_disconnect(vt);
}

// ------------------------------------------------------------ planning

// idxNum bits.
constexpr int kEq = 1, kIn = 2, kLower = 4, kLowerIncl = 8, kUpper = 16, kUpperIncl = 32,
              kDesc = 64;

int x_best_index(sqlite3_vtab*, sqlite3_index_info* info) {
  int eq = -1, lo = -1, hi = -1;
  bool eq_is_in = false;
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    if (!c.usable || c.iColumn != 0) continue;
    switch (c.op) {
      case SQLITE_INDEX_CONSTRAINT_EQ: {
        const bool is_in = sqlite3_vtab_in(info, i, -1) != 0;
        // Prefer a plain = over an IN.
        if (eq < 0 || (eq_is_in && !is_in)) {
          eq = i;
          eq_is_in = is_in;
        }
        break;
      }
      case SQLITE_INDEX_CONSTRAINT_GT:
      case SQLITE_INDEX_CONSTRAINT_GE:
        if (lo < 0) lo = i;
        break;
      case SQLITE_INDEX_CONSTRAINT_LT:
      case SQLITE_INDEX_CONSTRAINT_LE:
        if (hi < 0) hi = i;
        break;
      default:
        break;
    }
  }
  int idx = 0, argv_i = 0;
  double cost = 1e7;
  sqlite3_int64 rows = 1000000;
  // Every constraint is left for SQLite to re-check (omit = 0): the scan
  // only narrows, so a value of an unexpected type can never drop a row.
  if (eq >= 0) {
    info->aConstraintUsage[eq].argvIndex = ++argv_i;
    if (eq_is_in) {
      sqlite3_vtab_in(info, eq, 1);
      idx |= kIn;
      cost = 100;
      rows = 10;
    } else {
      idx |= kEq;
      cost = 10;
      rows = 1;
      info->idxFlags |= SQLITE_INDEX_SCAN_UNIQUE;
    }
  } else {
    if (lo >= 0) {
      info->aConstraintUsage[lo].argvIndex = ++argv_i;
      idx |= kLower;
      if (info->aConstraint[lo].op == SQLITE_INDEX_CONSTRAINT_GE) idx |= kLowerIncl;
    }
    if (hi >= 0) {
      info->aConstraintUsage[hi].argvIndex = ++argv_i;
      idx |= kUpper;
      if (info->aConstraint[hi].op == SQLITE_INDEX_CONSTRAINT_LE) idx |= kUpperIncl;
    }
    if (lo >= 0 && hi >= 0) {
      cost = 1000;
      rows = 1000;
    } else if (lo >= 0 || hi >= 0) {
      cost = 100000;
      rows = 100000;
    }
  }
  if (info->nOrderBy == 1 && info->aOrderBy[0].iColumn == 0) {
    if (info->aOrderBy[0].desc) idx |= kDesc;
    info->orderByConsumed = 1;
  }
  info->idxNum = idx;
  info->estimatedCost = cost;
  info->estimatedRows = rows;
  return SQLITE_OK;
}

// ------------------------------------------------------------ keys

// The encoded key for a value written to the table, or an error.
std::string key_for_write(Table* t, sqlite3_value* v) {
  const int type = sqlite3_value_type(v);
  if (type == SQLITE_NULL) {
    throw SqlError{SQLITE_CONSTRAINT_NOTNULL, "NOT NULL constraint failed: " + t->name + "." + t->columns[0]};
  }
  if (t->key_type == KeyType::kInteger) {
    int nt = type;
    if (nt == SQLITE_TEXT) nt = sqlite3_value_numeric_type(v);  // '42' -> 42 (INTEGER affinity)
    if (nt == SQLITE_INTEGER) return encode_int64(sqlite3_value_int64(v));
    if (nt == SQLITE_FLOAT) {
      const double d = sqlite3_value_double(v);
      if (d >= -9.2233720368547758e18 && d < 9.2233720368547758e18 &&
          static_cast<double>(static_cast<std::int64_t>(d)) == d) {
        return encode_int64(static_cast<std::int64_t>(d));
      }
    }
    throw SqlError{SQLITE_MISMATCH, "forein: " + t->name + "." + t->columns[0] +
                                        " is an INTEGER key; value is not an integer"};
  }
  if (type == SQLITE_BLOB) {
    throw SqlError{SQLITE_MISMATCH,
                   "forein: " + t->name + "." + t->columns[0] + " is a TEXT key; value is a BLOB"};
  }
  // TEXT affinity: numbers become their text.
  const auto* p = reinterpret_cast<const char*>(sqlite3_value_text(v));
  std::string k(p ? p : "", static_cast<std::size_t>(sqlite3_value_bytes(v)));
  if (k.size() > t->max_key()) {
    throw SqlError{SQLITE_TOOBIG, "forein: key of " + std::to_string(k.size()) +
                                      " bytes is longer than the limit of " +
                                      std::to_string(t->max_key())};
  }
  return k;
}

// A search bound for a constraint value: the key itself, or, when the value
// does not map exactly, a conservative replacement. Returns nullopt when
// the side must be left open (SQLite re-checks every row anyway).
// `empty` is set when no row can match (NULL comparisons).
std::optional<std::string> key_for_search(Table* t, sqlite3_value* v, bool lower_side,
                                          bool* empty, bool* exact) {
  *exact = false;
  const int type = sqlite3_value_type(v);
  if (type == SQLITE_NULL) {
    *empty = true;
    return std::nullopt;
  }
  if (t->key_type == KeyType::kInteger) {
    if (type == SQLITE_INTEGER) {
      *exact = true;
      return encode_int64(sqlite3_value_int64(v));
    }
    if (type == SQLITE_FLOAT) {
      const double d = sqlite3_value_double(v);
      if (std::isnan(d)) return std::nullopt;
      const double r = lower_side ? std::floor(d) : std::ceil(d);
      if (r < -9.2233720368547758e18 || r >= 9.2233720368547758e18) return std::nullopt;
      *exact = static_cast<double>(static_cast<std::int64_t>(r)) == d;
      return encode_int64(static_cast<std::int64_t>(r));
    }
    return std::nullopt;  // text/blob: leave the side open
  }
  if (type == SQLITE_TEXT) {
    const auto* p = reinterpret_cast<const char*>(sqlite3_value_text(v));
    *exact = true;
    return std::string(p ? p : "", static_cast<std::size_t>(sqlite3_value_bytes(v)));
  }
  return std::nullopt;
}

// ------------------------------------------------------------ cursor

struct Cur {
  sqlite3_vtab_cursor base{};
  std::shared_ptr<Tree> tree;
  // Point mode: keys to look up, in output order.
  bool point = false;
  std::vector<std::string> keys;
  std::size_t ki = 0;
  // Scan mode.
  std::optional<Cursor> scan;
  bool eof = true;
  std::string key, value;
  std::vector<std::size_t> offs;
};

int x_open(sqlite3_vtab*, sqlite3_vtab_cursor** out) {
  auto* c = new Cur();
  *out = &c->base;
  return SQLITE_OK;
}
int x_close(sqlite3_vtab_cursor* cur) {
  delete reinterpret_cast<Cur*>(cur);
  return SQLITE_OK;
}

void advance(Table* t, Cur* c) {
  if (c->point) {
    while (c->ki < c->keys.size()) {
      const std::string& k = c->keys[c->ki++];
      const StartHints h = t->hint_for(k);
      ++t->lookups;
      if (c->tree->get(k, &c->value, &h)) {
        c->key = k;
        c->offs = column_offsets(c->value);
        c->eof = false;
        return;
      }
    }
    c->eof = true;
    return;
  }
  if (c->scan && c->scan->next()) {
    c->key = std::string(c->scan->key());
    c->value = std::string(c->scan->value());
    c->offs = column_offsets(c->value);
    c->eof = false;
    return;
  }
  c->eof = true;
}

int x_filter(sqlite3_vtab_cursor* cur, int idx, const char*, int argc, sqlite3_value** argv) {
  auto* c = reinterpret_cast<Cur*>(cur);
  auto* t = reinterpret_cast<Table*>(cur->pVtab);
  try {
    t->ensure_fresh();
    c->tree = t->tree;
    c->point = false;
    c->keys.clear();
    c->ki = 0;
    c->scan.reset();
    c->eof = true;
    const bool desc = (idx & kDesc) != 0;
    int ai = 0;
    if (idx & (kEq | kIn)) {
      if (argc < 1) return SQLITE_ERROR;
      // Values from sqlite3_vtab_in_next may reuse one object: convert
      // each to a key before fetching the next.
      bool all_exact = true;
      auto take = [&](sqlite3_value* v) {
        bool empty = false, exact = false;
        auto k = key_for_search(t, v, true, &empty, &exact);
        if (empty) return;
        // A value of another type (e.g. 4.5 against an INTEGER key): let
        // SQLite decide on a full scan (rare).
        if (!k || !exact) {
          all_exact = false;
          return;
        }
        c->keys.push_back(*k);
      };
      if (idx & kIn) {
        sqlite3_value* v = nullptr;
        for (int rc = sqlite3_vtab_in_first(argv[0], &v); rc == SQLITE_OK && v;
             rc = sqlite3_vtab_in_next(argv[0], &v)) {
          take(v);
        }
      } else {
        take(argv[0]);
      }
      if (all_exact) {
        std::sort(c->keys.begin(), c->keys.end());
        c->keys.erase(std::unique(c->keys.begin(), c->keys.end()), c->keys.end());
        if (desc) std::reverse(c->keys.begin(), c->keys.end());
        c->point = true;
        advance(t, c);
        return SQLITE_OK;
      }
      c->keys.clear();
      ScanSpec spec;
      spec.direction = desc ? Direction::kBackward : Direction::kForward;
      ++t->lookups;
      c->scan.emplace(c->tree->scan(spec));
      advance(t, c);
      return SQLITE_OK;
    }
    ScanSpec spec;
    spec.direction = desc ? Direction::kBackward : Direction::kForward;
    bool empty = false;
    if (idx & kLower) {
      bool exact = false;
      auto k = key_for_search(t, argv[ai++], true, &empty, &exact);
      if (k) spec.lower = KeyBound{*k, exact ? (idx & kLowerIncl) != 0 : true};
    }
    if (idx & kUpper) {
      bool exact = false;
      auto k = key_for_search(t, argv[ai++], false, &empty, &exact);
      if (k) spec.upper = KeyBound{*k, exact ? (idx & kUpperIncl) != 0 : true};
    }
    if (empty) return SQLITE_OK;
    if (spec.lower && spec.upper) {
      const int cmp = compare_keys(spec.lower->key, spec.upper->key);
      if (cmp > 0 || (cmp == 0 && !(spec.lower->inclusive && spec.upper->inclusive))) {
        return SQLITE_OK;
      }
    }
    const std::optional<KeyBound>& start = desc ? spec.upper : spec.lower;
    StartHints h;
    if (start) h = t->hint_for(start->key);
    ++t->lookups;
    c->scan.emplace(c->tree->scan(spec, start ? &h : nullptr));
    advance(t, c);
    return SQLITE_OK;
  } catch (const SqlError& e) {
    set_error(cur->pVtab, e.msg);
    return e.rc;
  } catch (const std::exception& e) {
    t->mark_stale();
    set_error(cur->pVtab, std::string("forein: ") + e.what());
    return SQLITE_ERROR;
  }
}

int x_next(sqlite3_vtab_cursor* cur) {
  try {
    advance(reinterpret_cast<Table*>(cur->pVtab), reinterpret_cast<Cur*>(cur));
  } catch (const std::exception& e) {
    set_error(cur->pVtab, std::string("forein: ") + e.what());
    return SQLITE_ERROR;
  }
  return SQLITE_OK;
}

int x_eof(sqlite3_vtab_cursor* cur) { return reinterpret_cast<Cur*>(cur)->eof ? 1 : 0; }

int x_column(sqlite3_vtab_cursor* cur, sqlite3_context* ctx, int col) {
  auto* c = reinterpret_cast<Cur*>(cur);
  auto* t = reinterpret_cast<Table*>(cur->pVtab);
  if (col == 0) {
    if (t->key_type == KeyType::kInteger) {
      sqlite3_result_int64(ctx, decode_int64(c->key));
    } else {
      sqlite3_result_text(ctx, c->key.data(), static_cast<int>(c->key.size()), SQLITE_TRANSIENT);
    }
    return SQLITE_OK;
  }
  const auto i = static_cast<std::size_t>(col - 1);
  if (i < c->offs.size()) {
    result_value(ctx, c->value, c->offs[i]);
  } else {
    sqlite3_result_null(ctx);
  }
  return SQLITE_OK;
}

int x_rowid(sqlite3_vtab_cursor* cur, sqlite3_int64* rowid) {
  // WITHOUT ROWID: SQLite does not call this; answer something sane.
  auto* c = reinterpret_cast<Cur*>(cur);
  *rowid = c->key.size() == 8 ? decode_int64(c->key) : 0;
  return SQLITE_OK;
}

// ------------------------------------------------------------ writes

int x_update(sqlite3_vtab* vt, int argc, sqlite3_value** argv, sqlite3_int64*) {
  auto* t = reinterpret_cast<Table*>(vt);
  try {
    // Validate everything before touching the tree: bad input changes nothing.
    std::optional<std::string> old_key;
    if (sqlite3_value_type(argv[0]) != SQLITE_NULL) old_key = key_for_write(t, argv[0]);
    std::optional<std::string> new_key;
    std::string row;
    if (argc > 1) {
      const int ncols = argc - 2;
      if (ncols != static_cast<int>(t->columns.size())) {
        throw SqlError{SQLITE_ERROR, "forein: wrong number of columns"};
      }
      new_key = key_for_write(t, argv[2]);
      for (int i = 1; i < ncols; ++i) encode_value(row, argv[2 + i]);
      if (row.size() > t->max_value()) {
        throw SqlError{SQLITE_TOOBIG, "forein: row of " + std::to_string(row.size()) +
                                          " bytes (non-key columns, encoded) exceeds the limit of " +
                                          std::to_string(t->max_value()) + " bytes for page_size " +
                                          std::to_string(t->page_size)};
      }
    }
    t->ensure_fresh();
    Tree& tree = *t->tree;
    const int on_conflict = sqlite3_vtab_on_conflict(t->db);
    // Conflict check: the new key is taken by another row.
    bool replace_other = false;
    if (new_key && (!old_key || *old_key != *new_key)) {
      const StartHints h = t->hint_for(*new_key);
      ++t->lookups;
      if (tree.get(*new_key, nullptr, &h)) {
        if (on_conflict == SQLITE_IGNORE) return SQLITE_OK;
        if (on_conflict != SQLITE_REPLACE) {
          set_error(vt, "UNIQUE constraint failed: " + t->name + "." + t->columns[0]);
          return SQLITE_CONSTRAINT_PRIMARYKEY;
        }
        replace_other = true;
      }
    }
    (void)replace_other;  // put() replaces the other row's value in place
    t->begin_write();
    try {
      if (old_key && (!new_key || *old_key != *new_key)) {
        const StartHints h = t->hint_for(*old_key);
        tree.erase(*old_key, &h);
      }
      if (new_key) {
        const StartHints h = t->hint_for(*new_key);
        tree.put(*new_key, row, &h);
      }
      tree.sync();
    } catch (...) {
      t->mark_stale();  // the shadow table is the truth; reload next time
      throw;
    }
    return SQLITE_OK;
  } catch (const SqlError& e) {
    set_error(vt, e.msg);
    return e.rc;
  } catch (const std::exception& e) {
    set_error(vt, std::string("forein: ") + e.what());
    return SQLITE_ERROR;
  }
}

// Transactions: pages are written to the shadow table inside every xUpdate,
// so SQLite's own journal covers them. After any rollback the in-memory tree
// is dropped and reloaded from the (rolled back) shadow table on next use.
int x_begin(sqlite3_vtab* vt) {
  reinterpret_cast<Table*>(vt)->bumped = false;
  return SQLITE_OK;
}
int x_sync(sqlite3_vtab*) { return SQLITE_OK; }
int x_commit(sqlite3_vtab* vt) {
  reinterpret_cast<Table*>(vt)->bumped = false;
  return SQLITE_OK;
}
int x_rollback(sqlite3_vtab* vt) {
  reinterpret_cast<Table*>(vt)->mark_stale();
  return SQLITE_OK;
}
int x_savepoint(sqlite3_vtab*, int) { return SQLITE_OK; }
int x_release(sqlite3_vtab*, int) { return SQLITE_OK; }
int x_rollback_to(sqlite3_vtab* vt, int) {
  reinterpret_cast<Table*>(vt)->mark_stale();
  return SQLITE_OK;
}

int x_rename(sqlite3_vtab* vt, const char* new_name) {
  auto* t = reinterpret_cast<Table*>(vt);
  try {
    const std::string s = quote_ident(t->schema) + ".";
    exec(t->db, "ALTER TABLE " + s + quote_ident(t->name + "_pages") + " RENAME TO " +
                    quote_ident(std::string(new_name) + "_pages"));
    exec(t->db, "ALTER TABLE " + s + quote_ident(t->name + "_meta") + " RENAME TO " +
                    quote_ident(std::string(new_name) + "_meta"));
    t->registry->tables.erase(lower(t->name));
    t->name = new_name;
    t->registry->tables[lower(t->name)] = t;
    t->prepare();
    t->mark_stale();
  } catch (const SqlError& e) {
    set_error(vt, e.msg);
    return e.rc;
  }
  return SQLITE_OK;
}

int x_shadow_name(const char* suffix) {
  return std::strcmp(suffix, "pages") == 0 || std::strcmp(suffix, "meta") == 0;
}

sqlite3_module make_module() {
  sqlite3_module m{};
  m.iVersion = 3;
  m.xCreate = x_create;
  m.xConnect = x_connect;
  m.xBestIndex = x_best_index;
  m.xDisconnect = x_disconnect;
  m.xDestroy = x_destroy;
  m.xOpen = x_open;
  m.xClose = x_close;
  m.xFilter = x_filter;
  m.xNext = x_next;
  m.xEof = x_eof;
  m.xColumn = x_column;
  m.xRowid = x_rowid;
  m.xUpdate = x_update;
  m.xBegin = x_begin;
  m.xSync = x_sync;
  m.xCommit = x_commit;
  m.xRollback = x_rollback;
  m.xRename = x_rename;
  m.xSavepoint = x_savepoint;
  m.xRelease = x_release;
  m.xRollbackTo = x_rollback_to;
  m.xShadowName = x_shadow_name;
  return m;
}

const sqlite3_module kModule = make_module();

// ------------------------------------------------------------ functions

// The Table for the name in argv[0], connecting it if needed.
Table* find_table(sqlite3_context* ctx, sqlite3_value* name_v) {
  auto* reg = static_cast<Registry*>(sqlite3_user_data(ctx));
  const auto* p = reinterpret_cast<const char*>(sqlite3_value_text(name_v));
  if (!p) throw SqlError{SQLITE_ERROR, "forein: table name expected"};
  const std::string name = p;
  auto it = reg->tables.find(lower(name));
  if (it == reg->tables.end()) {
    // Preparing a statement on the table makes SQLite connect it.
    sqlite3* db = sqlite3_context_db_handle(ctx);
    sqlite3_stmt* s = nullptr;
    const std::string sql = "SELECT 1 FROM " + quote_ident(name) + " LIMIT 0";
    const int rc = sqlite3_prepare_v2(db, sql.c_str(), -1, &s, nullptr);
    sqlite3_finalize(s);
    it = reg->tables.find(lower(name));
    if (rc != SQLITE_OK || it == reg->tables.end()) {
      throw SqlError{SQLITE_ERROR, "forein: no forein table named '" + name + "'"};
    }
  }
  return it->second;
}

void fn_stats(sqlite3_context* ctx, int, sqlite3_value** argv) {
  try {
    Table* t = find_table(ctx, argv[0]);
    t->ensure_fresh();
    const TreeStats s = t->tree->stats();
    std::string j = "{";
    auto add = [&j](const char* k, std::uint64_t v) {
      if (j.size() > 1) j += ",";
      j += "\"";
      j += k;
      j += "\":" + std::to_string(v);
    };
    add("lookups", t->lookups);
    add("hinted", t->base_hinted + s.hinted);
    add("hint_hits", t->base_hint_hits + s.hint_hits);
    add("fallbacks", t->base_fallbacks + s.fallbacks);
    add("installed_entries", t->hints.size());
    add("capacity_entries", kHintCapacity);
    add("keys", t->tree->size());
    add("height", t->tree->height());
    add("pages", t->tree->store().page_count());
    add("page_size", t->page_size);
    add("reloads", t->reloads);
    j += "}";
    sqlite3_result_text(ctx, j.c_str(), -1, SQLITE_TRANSIENT);
  } catch (const SqlError& e) {
    sqlite3_result_error(ctx, e.msg.c_str(), -1);
  } catch (const std::exception& e) {
    sqlite3_result_error(ctx, (std::string("forein: ") + e.what()).c_str(), -1);
  }
}

void fn_check(sqlite3_context* ctx, int, sqlite3_value** argv) {
  Table* t = nullptr;
  try {
    t = find_table(ctx, argv[0]);
    // Reload from the shadow table (verifying every page checksum), then
    // check the tree's invariants and its key count against a full scan.
    t->load(t->read_gen());
    t->tree->check();
    std::uint64_t n = 0;
    std::string prev;
    bool first = true;
    t->tree->scan(ScanSpec{}, [&](std::string_view k, std::string_view v) {
      if (!first && compare_keys(prev, k) >= 0) throw CorruptionError("keys out of order in scan");
      if (t->key_type == KeyType::kInteger && k.size() != 8) {
        throw CorruptionError("integer key of " + std::to_string(k.size()) + " bytes");
      }
      std::size_t end = 0;
      const auto offs = column_offsets(v);
      if (!offs.empty()) end = offs.size();
      if (end > t->columns.size() - 1) throw CorruptionError("row with too many columns");
      prev = std::string(k);
      first = false;
      ++n;
      return true;
    });
    if (n != t->tree->size()) {
      throw CorruptionError("scan found " + std::to_string(n) + " keys, meta page says " +
                            std::to_string(t->tree->size()));
    }
    sqlite3_result_text(ctx, "ok", -1, SQLITE_STATIC);
  } catch (const SqlError& e) {
    sqlite3_result_error(ctx, e.msg.c_str(), -1);
  } catch (const std::exception& e) {
    if (t) t->mark_stale();
    sqlite3_result_error(ctx, (std::string("forein_check: ") + e.what()).c_str(), -1);
  }
}

// forein_debug_hints(table, mode[, seed]): 0 = hints from the map,
// 1 = random hints (hint-safety tests), 2 = no hints.
void fn_debug_hints(sqlite3_context* ctx, int argc, sqlite3_value** argv) {
  try {
    Table* t = find_table(ctx, argv[0]);
    const int mode = sqlite3_value_int(argv[1]);
    if (mode < 0 || mode > 2) throw SqlError{SQLITE_ERROR, "forein_debug_hints: mode is 0, 1 or 2"};
    t->hints.mode = mode;
    if (argc > 2) t->hints.rng.seed(static_cast<std::uint64_t>(sqlite3_value_int64(argv[2])));
    sqlite3_result_int(ctx, mode);
  } catch (const SqlError& e) {
    sqlite3_result_error(ctx, e.msg.c_str(), -1);
  }
}

void free_registry(void* p) { delete static_cast<Registry*>(p); }

}  // namespace

int register_all(sqlite3* db) {
  auto* reg = new Registry();
  int rc = sqlite3_create_module_v2(db, "forein", &kModule, reg, free_registry);
  if (rc != SQLITE_OK) return rc;  // the destructor already ran
  const int flags = SQLITE_UTF8 | SQLITE_DIRECTONLY;
  rc = sqlite3_create_function(db, "forein_stats", 1, flags, reg, fn_stats, nullptr, nullptr);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function(db, "forein_check", 1, flags, reg, fn_check, nullptr, nullptr);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function(db, "forein_debug_hints", 2, flags, reg, fn_debug_hints, nullptr,
                                 nullptr);
  if (rc == SQLITE_OK)
    rc = sqlite3_create_function(db, "forein_debug_hints", 3, flags, reg, fn_debug_hints, nullptr,
                                 nullptr);
  return rc;
}

}  // namespace forein::sqlite

extern "C" int forein_sqlite_register(sqlite3* db) { return forein::sqlite::register_all(db); }

#ifndef SQLITE_CORE
extern "C" __attribute__((visibility("default"))) int sqlite3_forein_init(
    sqlite3* db, char** err, const sqlite3_api_routines* api) {
  SQLITE_EXTENSION_INIT2(api);
  const int rc = forein::sqlite::register_all(db);
  if (rc != SQLITE_OK && err) *err = sqlite3_mprintf("forein: registration failed (%d)", rc);
  return rc;
}
#endif
