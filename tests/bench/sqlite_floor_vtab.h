// The cost floor of any SQLite virtual table, for sqlite_bench: a table
// `floor_vtab(k INTEGER, v)` whose rows live in a sorted array in memory (no
// tree, no pages, no hints). Its xFilter is one binary search and its
// per-row calls (xNext, xEof, xColumn) do nothing but hand out the row, so
// its time is what SQLite's virtual-table protocol itself costs (VM opcodes
// and calls per row and column, result values copied). forein's vtab pays
// the same protocol: the floor tells how much of forein's gap to a native
// table is the protocol's and how much forein's own.
//
// Takes INSERTs of ascending integer keys only (what the benchmark loads);
// answers k = ?, k >= ? and full scans, ascending.
#pragma once

#include <sqlite3.h>

namespace forein::bench {

// Registers the module "floor_vtab" on the connection.
int register_floor_vtab(sqlite3* db);

}  // namespace forein::bench
