// The table's lifecycle: xCreate/xConnect (shadow tables made or read,
// schema declared, the connection's shared state found or made),
// xDisconnect/xDestroy, xRename and xShadowName.
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "forein/offload/registry.h"
#include "forein_vtab.h"

namespace forein::sqlite {
namespace {

// The shared state of an existing table, or a new one read from its
// <name>_meta (loaded lazily, on first use).
std::shared_ptr<Table> connect_state(sqlite3* db, Registry* reg, const Spec& s, const char* schema,
                                     const char* name) {
  if (auto it = reg->tables.find(registry_key(schema, name)); it != reg->tables.end()) {
    return it->second;
  }
  auto t = std::make_shared<Table>();
  t->db = db;
  t->schema = schema;
  t->name = name;
  t->key_type = s.key_type;
  t->columns = s.names;
  Stmt q(db, "SELECT format, page_size, key_type FROM " + t->meta_table() + " WHERE id = 0");
  if (!q.step()) throw SqlError{SQLITE_CORRUPT, "forein: " + t->name + "_meta has no row"};
  // Format 2 (no <name>_free) is read and written, and converted by the
  // first commit that needs its free list (storage.cc).
  t->format = sqlite3_column_int(q.get(), 0);
  if (t->format != kFormat && t->format != kFormatNoFreeTable) {
    throw SqlError{SQLITE_ERROR, "forein: " + t->name + ": unsupported format " +
                                     std::to_string(t->format) + " (this build reads formats " +
                                     std::to_string(kFormatNoFreeTable) + " and " +
                                     std::to_string(kFormat) + "; recreate the table)"};
  }
  t->page_size = static_cast<std::uint32_t>(sqlite3_column_int(q.get(), 1));
  q.reset();
  t->hints.set_backend(offload::backend_by_name(s.offload));
  t->prepare();
  return t;
}

// A new table: shadow tables, meta row, and the empty tree's pages, written
// now, inside the CREATE statement (the table is in no transaction of ours
// yet, so no xSync follows).
std::shared_ptr<Table> create_state(sqlite3* db, Registry* reg, const Spec& s, const char* schema,
                                    const char* name) {
  reg->tables.erase(registry_key(schema, name));  // a dropped table's leftover
  auto t = std::make_shared<Table>();
  t->db = db;
  t->schema = schema;
  t->name = name;
  t->key_type = s.key_type;
  t->columns = s.names;
  t->page_size = s.page_size;
  t->hints.set_backend(offload::backend_by_name(s.offload));
  exec(db, "CREATE TABLE " + t->pages_table() +
               "(id INTEGER PRIMARY KEY, gen INTEGER NOT NULL, page BLOB NOT NULL)");
  t->ensure_gen_index();
  exec(db, "CREATE TABLE " + t->meta_table() +
               "(id INTEGER PRIMARY KEY CHECK (id = 0), format INTEGER NOT NULL, "
               "page_size INTEGER NOT NULL, key_type TEXT NOT NULL, gen INTEGER NOT NULL)");
  exec(db, "CREATE TABLE " + t->free_table() + "(id INTEGER PRIMARY KEY)");
  exec(db, "INSERT INTO " + t->meta_table() + " VALUES (0, " + std::to_string(kFormat) + ", " +
               std::to_string(s.page_size) + ", '" +
               (s.key_type == KeyType::kInteger ? "integer" : "text") + "', 0)");
  t->prepare();
  TreeOptions opts;
  opts.observer = &t->hints;
  opts.append_fast_path = true;  // ascending INSERTs skip the root descent
  t->tree = std::shared_ptr<Tree>(Tree::create(std::make_unique<ShadowPageStore>(t->page_size, t.get(), 0), opts));
  t->tree->sync();
  t->store().take_dirty([&t](PageId id) { t->write_page(id, 0); });
  t->gen = 0;
  return t;
}

int construct(sqlite3* db, void* aux, int argc, const char* const* argv, sqlite3_vtab** out,
              char** err, bool create) {
  auto* reg = static_cast<Registry*>(aux);
  std::shared_ptr<Table> t;
  try {
    const Spec s = parse_args(argc, argv);
    t = create ? create_state(db, reg, s, argv[1], argv[2]) : connect_state(db, reg, s, argv[1], argv[2]);
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
  reg->tables[registry_key(t->schema, t->name)] = t;
  auto* v = new VTab();
  v->registry = reg;
  v->t = std::move(t);
  *out = &v->base;
  return SQLITE_OK;
}

}  // namespace

int x_create(sqlite3* db, void* aux, int argc, const char* const* argv, sqlite3_vtab** out,
             char** err) {
  return construct(db, aux, argc, argv, out, err, true);
}
int x_connect(sqlite3* db, void* aux, int argc, const char* const* argv, sqlite3_vtab** out,
              char** err) {
  return construct(db, aux, argc, argv, out, err, false);
}

std::string registry_key(const std::string& schema, const std::string& name) {
  return lower(schema) + "." + lower(name);
}

// The state stays registered while another object uses it. (An object
// that replaces this one inside a transaction is connected before this one
// leaves the transaction; and the state's prepared statements must be
// finalized here, or sqlite3_close() would find them.)
int x_disconnect(sqlite3_vtab* vt) {
  auto* v = reinterpret_cast<VTab*>(vt);
  std::shared_ptr<Table> t = std::move(v->t);
  Registry* reg = v->registry;
  delete v;
  auto it = reg->tables.find(registry_key(t->schema, t->name));
  if (it != reg->tables.end() && it->second == t && t.use_count() == 2) reg->tables.erase(it);
  return SQLITE_OK;
}

int x_destroy(sqlite3_vtab* vt) {
  Table* t = table_of(vt);
  // Its unwritten changes would be lost if a ROLLBACK TO brought the table
  // back: SQLite destroys this object and tells it nothing more.
  if (t->has_unwritten()) {
    set_error(vt, "forein: " + t->name +
                      " has uncommitted changes; commit or roll back before dropping it");
    return SQLITE_LOCKED;
  }
  try {
    // <name>_free is ours only in format 3 (a format-2 table may sit
    // beside someone else's table of that name).
    bool has_free_table = false;
    try {
      t->read_meta();
      has_free_table = t->format == kFormat;
    } catch (const SqlError&) {
      // No readable meta row: leave a table of that name alone.
    }
    if (has_free_table) exec(t->db, "DROP TABLE IF EXISTS " + t->free_table());
    exec(t->db, "DROP TABLE IF EXISTS " + t->pages_table());
    exec(t->db, "DROP TABLE IF EXISTS " + t->meta_table());
  } catch (const SqlError& e) {
    set_error(vt, e.msg);
    return e.rc;
  }
  reinterpret_cast<VTab*>(vt)->registry->tables.erase(registry_key(t->schema, t->name));
  return x_disconnect(vt);
}

// The new name's object (SQLite connects one after the rename) shares this
// state: its tree and any unwritten changes carry over.
int x_rename(sqlite3_vtab* vt, const char* new_name) {
  auto* v = reinterpret_cast<VTab*>(vt);
  Table* t = v->t.get();
  try {
    const std::string s = quote_ident(t->schema) + ".";
    t->read_meta();  // <name>_free exists in format 3 only
    if (t->format == kFormat) {
      exec(t->db, "ALTER TABLE " + s + quote_ident(t->name + "_free") + " RENAME TO " +
                      quote_ident(std::string(new_name) + "_free"));
    }
    // The gen index moves with <name>_pages under its old name (SQLite
    // has no index rename, and no DROP INDEX inside xRename).
    exec(t->db, "ALTER TABLE " + s + quote_ident(t->name + "_pages") + " RENAME TO " +
                    quote_ident(std::string(new_name) + "_pages"));
    exec(t->db, "ALTER TABLE " + s + quote_ident(t->name + "_meta") + " RENAME TO " +
                    quote_ident(std::string(new_name) + "_meta"));
    v->registry->tables.erase(registry_key(t->schema, t->name));
    t->name = new_name;
    v->registry->tables[registry_key(t->schema, t->name)] = v->t;
    t->prepare();
  } catch (const SqlError& e) {
    set_error(vt, e.msg);
    return e.rc;
  }
  return SQLITE_OK;
}

int x_shadow_name(const char* suffix) {
  return std::strcmp(suffix, "pages") == 0 || std::strcmp(suffix, "meta") == 0 ||
         std::strcmp(suffix, "free") == 0;
}

}  // namespace forein::sqlite
