// The table's lifecycle: xCreate/xConnect (CREATE arguments parsed, shadow
// tables made or read, schema declared), xDisconnect/xDestroy, xRename and
// xShadowName.
#include <cctype>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <memory>
#include <string>
#include <vector>

#include "forein_vtab.h"

namespace forein::sqlite {
namespace {

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

}  // namespace

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

}  // namespace forein::sqlite
