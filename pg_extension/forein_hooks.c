/*-------------------------------------------------------------------------
 *
 * forein_hooks.c
 *	  Executor hooks: refuse INSERT ... ON CONFLICT early, with a clear
 *	  message, on a table with a forein unique index.
 *
 * PostgreSQL 15 accepts only btree unique indexes as ON CONFLICT arbiters,
 * and a speculative insertion opens every unique index of the table
 * (ExecOpenIndices -> BuildSpeculativeIndexInfo), which fails with the
 * internal "unexpected non-btree speculative unique index" on a forein one.
 * The hook says why and what to do before the executor gets there.  It
 * exists only once forein.so is loaded: at server start with
 * shared_preload_libraries, else when the session first opens a forein
 * index (docs/postgresql.md).
 *
 * pg_extension/forein_hooks.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/table.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "forein.h"
#include "nodes/plannodes.h"
#include "parser/parsetree.h"
#include "utils/rel.h"

static ExecutorStart_hook_type prev_ExecutorStart = NULL;

/*
 * Refuses a ModifyTable plan with an ON CONFLICT clause whose target table
 * has a forein unique index.
 */
static void
check_on_conflict(PlannedStmt *stmt, Plan *plan)
{
	ModifyTable *mt;
	Oid			forein_am;
	ListCell   *lc;

	if (plan == NULL || !IsA(plan, ModifyTable))
		return;
	mt = (ModifyTable *) plan;
	if (mt->onConflictAction == ONCONFLICT_NONE)
		return;
	forein_am = get_am_oid("forein", true);
	if (!OidIsValid(forein_am))
		return;

	foreach(lc, mt->resultRelations)
	{
		Oid			relid = rt_fetch(lfirst_int(lc), stmt->rtable)->relid;
		Relation	heap = table_open(relid, AccessShareLock);
		List	   *indexes = RelationGetIndexList(heap);
		ListCell   *ilc;

		foreach(ilc, indexes)
		{
			Relation	index = index_open(lfirst_oid(ilc), AccessShareLock);

			if (index->rd_rel->relam == forein_am &&
				index->rd_index->indisunique)
				ereport(ERROR,
						(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
						 errmsg("INSERT ... ON CONFLICT is not supported on table \"%s\" because its unique index \"%s\" uses access method forein",
								RelationGetRelationName(heap),
								RelationGetRelationName(index)),
						 errdetail("PostgreSQL 15 accepts only btree unique indexes as ON CONFLICT arbiters, and checks every unique index of the table during a speculative insertion."),
						 errhint("Make the unique index a btree index; a non-unique forein index on the same columns keeps hinted scans.")));
			index_close(index, AccessShareLock);
		}
		list_free(indexes);
		table_close(heap, AccessShareLock);
	}
}

/*
 * The statement's plan and its subplans (a data-modifying WITH query's
 * ModifyTable is the top of a subplan).
 */
static void
forein_ExecutorStart(QueryDesc *queryDesc, int eflags)
{
	PlannedStmt *stmt = queryDesc->plannedstmt;

	if (stmt != NULL &&
		(stmt->commandType == CMD_INSERT || stmt->hasModifyingCTE))
	{
		ListCell   *lc;

		check_on_conflict(stmt, stmt->planTree);
		foreach(lc, stmt->subplans)
			check_on_conflict(stmt, (Plan *) lfirst(lc));
	}
	if (prev_ExecutorStart)
		prev_ExecutorStart(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
}

/* Installs the hooks; from _PG_init, once per process */
void
forein_hooks_init(void)
{
	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = forein_ExecutorStart;
	forein_explain_init();
}
