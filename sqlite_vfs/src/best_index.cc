// xBestIndex: which key constraints and ORDER BY the scan uses, encoded as
// the idxNum bits (kEq, kIn, kLower, ...) that x_filter decodes.
#include "forein_vtab.h"

namespace forein::sqlite {

int x_best_index(sqlite3_vtab* vt, sqlite3_index_info* info) {
  const bool int_key = table_of(vt)->key_type == KeyType::kInteger;
  int eq = -1, lo = -1, hi = -1, limit = -1, offset = -1;
  bool eq_is_in = false;
  for (int i = 0; i < info->nConstraint; ++i) {
    const auto& c = info->aConstraint[i];
    if (!c.usable) continue;
    if (c.op == SQLITE_INDEX_CONSTRAINT_LIMIT) limit = i;
    if (c.op == SQLITE_INDEX_CONSTRAINT_OFFSET) offset = i;
    if (c.iColumn != 0) continue;
    // TEXT keys are in BINARY order: under another collation (k >= 'b'
    // COLLATE NOCASE also matches 'B') the matches are no key range.
    // INTEGER keys hold numbers only, which no collation affects.
    if (!int_key && sqlite3_stricmp(sqlite3_vtab_collation(info, i), "BINARY") != 0) continue;
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
  // An INTEGER key's bounds are exact for every value type
  // (int_key_bound), so SQLite need not re-check them (omit): one column
  // read and comparison less per row. A TEXT key's bounds only narrow
  // (a number compared with a TEXT key may compare as a number, depending
  // on the other side's affinity, which xFilter cannot see), so SQLite
  // re-checks every row and a value of an unexpected type never drops one.
  // IN lists are always re-checked.
  auto use = [&](int i) {
    info->aConstraintUsage[i].argvIndex = ++argv_i;
    info->aConstraintUsage[i].omit = int_key && !(i == eq && eq_is_in);
  };
  if (eq >= 0) {
    use(eq);
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
      use(lo);
      idx |= kLower;
      if (info->aConstraint[lo].op == SQLITE_INDEX_CONSTRAINT_GE) idx |= kLowerIncl;
    }
    if (hi >= 0) {
      use(hi);
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
  // A scan's LIMIT (plus OFFSET) sizes its first batch of rows
  // (ScanSpec::expected_rows), so a short scan decodes no rows it will not
  // return. Only a hint: SQLite still applies LIMIT and OFFSET itself (no
  // omit), and the scan goes on past it if SQLite asks for more rows.
  if (eq < 0 && limit >= 0) {
    info->aConstraintUsage[limit].argvIndex = ++argv_i;
    idx |= kLimit;
    if (offset >= 0) {
      info->aConstraintUsage[offset].argvIndex = ++argv_i;
      idx |= kOffset;
    }
  }
  info->idxNum = idx;
  info->estimatedCost = cost;
  info->estimatedRows = rows;
  return SQLITE_OK;
}

}  // namespace forein::sqlite
