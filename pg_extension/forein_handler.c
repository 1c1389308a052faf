/*-------------------------------------------------------------------------
 *
 * forein_handler.c
 *	  The access method's handler, reloptions, operator class validation
 *	  and cost estimation.
 *
 * pg_extension/forein_handler.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/amvalidate.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/nbtree.h"
#include "access/reloptions.h"
#include "access/stratnum.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_amproc.h"
#include "catalog/pg_opclass.h"
#include "commands/vacuum.h"
#include "forein.h"
#include "forein_offload.h"
#include "forein_offload_int.h"
#include "utils/builtins.h"
#include "utils/elog.h"
#include "utils/index_selfuncs.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/syscache.h"

PG_FUNCTION_INFO_V1(forein_handler);

#define FOREIN_SUPPORTED_TYPES \
	"smallint, integer, bigint, real, double precision, numeric, boolean, " \
	"text (and varchar), character, name, bytea, oid, date, timestamp, " \
	"timestamptz, interval, uuid, inet, cidr"

static relopt_kind forein_relopt_kind;
static bool forein_relopts_ready = false;
static emit_log_hook_type prev_emit_log_hook = NULL;
static bool forein_log_hook_ready = false;

/*
 * offload = a registered backend that serves lookups (offload/core/
 * registry.cc: backend_for_lookups): one that gives start hints, or none.
 */
static void
validate_offload(const char *value)
{
	char		errbuf[512];

	if (value == NULL)
		return;
	if (forein_offload_backend_id(value) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for forein option \"offload\": \"%s\"", value),
				 errdetail("Offload backends an index can use: %s.",
						   forein_offload_lookup_backend_names())));
	if (forein_offload_lookup_backend_id(value, errbuf, sizeof(errbuf)) < 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for forein option \"offload\": \"%s\"", value),
				 errdetail("%s.", errbuf)));
}

/* The backend id reloptions name (offload, else the default) */
static int
options_backend(ForeinOptions *opts)
{
	const char *value = forein_offload_default_backend_name();

	if (opts != NULL && opts->offload_offset != 0)
		value = (const char *) opts + opts->offload_offset;
	return forein_offload_backend_id(value);
}

/*
 * The reloptions that depend on the backend, checked together at CREATE
 * INDEX and ALTER INDEX SET: offload_settings by the backend itself, and a
 * capacity no larger than the server reserved per slot (only known with
 * the module preloaded).
 */
static void
check_offload_options(ForeinOptions *opts)
{
	int			id = options_backend(opts);
	const char *option = NULL;
	const char *setting = NULL;
	uint64		asked;
	uint64		server;
	char		errbuf[512];

	if (id < 0)
		return;					/* validate_offload reported it */
	if (opts->offload_settings_offset != 0 &&
		forein_offload_check_settings(id, (const char *) opts + opts->offload_settings_offset,
									  errbuf, sizeof(errbuf)) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("invalid value for forein option \"offload_settings\": \"%s\"",
						(const char *) opts + opts->offload_settings_offset),
				 errdetail("%s.", errbuf)));

	asked = forein_options_capacity(opts, id, &option);
	if (forein_off_shared == NULL || asked == 0)
		return;
	server = forein_server_capacity(id, &setting);
	if (asked <= server)
		return;
	/* the deprecated reloption names the deprecated setting, as it did */
	if (setting == NULL && strcmp(option, "lpm_entries") == 0)
		setting = "forein.lpm_entries";
	if (setting != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s " UINT64_FORMAT " exceeds the server's %s (" UINT64_FORMAT ")",
						option, asked, setting, server),
				 errhint("Raise %s in postgresql.conf and restart, or ask for fewer %s.",
						 setting, strcmp(option, "lpm_entries") == 0 ? "entries" :
						 forein_offload_backend_unit(id))));
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("%s " UINT64_FORMAT " exceeds backend \"%s\"'s capacity (" UINT64_FORMAT " %s, the paper's)",
					option, asked, forein_offload_backend_name(id), server,
					forein_offload_backend_unit(id)),
			 errhint("Set forein.offload_capacity in postgresql.conf and restart, or ask for less.")));
}

/* Registers the reloptions once per backend, on first use */
static void
init_reloptions(void)
{
	if (forein_relopts_ready)
		return;
	forein_relopt_kind = add_reloption_kind();
	add_int_reloption(forein_relopt_kind, "fillfactor",
					  "Packs forein leaf pages only to this percentage",
					  FOREIN_DEFAULT_FILLFACTOR, FOREIN_MIN_FILLFACTOR, 100,
					  ShareUpdateExclusiveLock);
	add_string_reloption(forein_relopt_kind, "offload",
						 MemoryContextStrdup(TopMemoryContext,
											 psprintf("Offload backend that supplies scan hints: a registered one (%s)",
													  forein_offload_lookup_backend_names())),
						 forein_offload_default_backend_name(), validate_offload,
						 ShareUpdateExclusiveLock);
	add_int_reloption(forein_relopt_kind, "offload_capacity",
					  "Device capacity this index may use, in its backend's unit (0: the server's, forein.offload_capacity)",
					  0, 0, INT_MAX, ShareUpdateExclusiveLock);
	add_string_reloption(forein_relopt_kind, "offload_settings",
						 "The offload backend's own settings, name=value,... (checked by the backend)",
						 "", NULL, ShareUpdateExclusiveLock);
	/* offload_capacity's first name, kept for the backends it sized (switch_lpm) */
	add_int_reloption(forein_relopt_kind, "lpm_entries",
					  "Deprecated: offload_capacity for backends counted in LPM entries",
					  0, 0, 4 * 1024 * 1024, ShareUpdateExclusiveLock);
	/* btree's (deprecated since PostgreSQL 14, no effect): accepted as btree accepts it */
	add_real_reloption(forein_relopt_kind, "vacuum_cleanup_index_scale_factor",
					   "Accepted for btree compatibility; has no effect",
					   -1, 0.0, 1e10, ShareUpdateExclusiveLock);
	add_bool_reloption(forein_relopt_kind, "deduplicate_items",
					   "Keeps duplicate keys as posting lists (non-unique indexes without INCLUDE columns)",
					   true, ShareUpdateExclusiveLock);
	add_bool_reloption(forein_relopt_kind, "align_leaves",
					   "Cuts leaves where their bounds take the fewest LPM entries (indexes with offload words)",
					   true, ShareUpdateExclusiveLock);
	forein_relopts_ready = true;
}

bytea *
forein_options(Datum reloptions, bool validate)
{
	static const relopt_parse_elt tab[] = {
		{"fillfactor", RELOPT_TYPE_INT, offsetof(ForeinOptions, fillfactor)},
		{"offload", RELOPT_TYPE_STRING, offsetof(ForeinOptions, offload_offset)},
		{"offload_capacity", RELOPT_TYPE_INT, offsetof(ForeinOptions, offload_capacity)},
		{"offload_settings", RELOPT_TYPE_STRING, offsetof(ForeinOptions, offload_settings_offset)},
		{"lpm_entries", RELOPT_TYPE_INT, offsetof(ForeinOptions, lpm_entries)},
		{"deduplicate_items", RELOPT_TYPE_BOOL, offsetof(ForeinOptions, deduplicate_items)},
		{"align_leaves", RELOPT_TYPE_BOOL, offsetof(ForeinOptions, align_leaves)},
		{"vacuum_cleanup_index_scale_factor", RELOPT_TYPE_REAL,
		offsetof(ForeinOptions, vacuum_cleanup_index_scale_factor)},
	};

	ForeinOptions *opts;

	init_reloptions();
	opts = (ForeinOptions *) build_reloptions(reloptions, validate, forein_relopt_kind,
											  sizeof(ForeinOptions), tab, lengthof(tab));

	if (validate && opts != NULL)
		check_offload_options(opts);
	return (bytea *) opts;
}

int
forein_index_fillfactor(Relation index)
{
	ForeinOptions *opts = (ForeinOptions *) index->rd_options;

	return opts ? opts->fillfactor : FOREIN_DEFAULT_FILLFACTOR;
}

/*
 * Are duplicates kept as posting lists?  As in btree: not in unique
 * indexes (their duplicates are short-lived versions) nor with INCLUDE
 * columns (their values differ), and not with deduplicate_items = off.
 */
bool
forein_index_dedup(Relation index)
{
	ForeinOptions *opts = (ForeinOptions *) index->rd_options;

	if (opts != NULL && !opts->deduplicate_items)
		return false;
	return !index->rd_index->indisunique &&
		IndexRelationGetNumberOfKeyAttributes(index) ==
		IndexRelationGetNumberOfAttributes(index);
}

/*
 * Do leaf builds and splits look for aligned cuts (forein_separator.c)?
 * Only where keys have offload words, and not with align_leaves = off.
 */
bool
forein_index_align_leaves(Relation index)
{
	ForeinOptions *opts = (ForeinOptions *) index->rd_options;

	if (opts != NULL && !opts->align_leaves)
		return false;
	return forein_get_state(index)->has_words;
}

/*
 * The index's offload backend, as an id of the offload C ABI: its
 * reloption offload, default the offload layer's default backend
 * (switch_lpm).
 */
int
forein_index_backend(Relation index)
{
	ForeinState *state = forein_get_state(index);

	/* once per relcache entry: the name lookup is too slow for every scan */
	if (!state->backend_known)
	{
		int			id = options_backend((ForeinOptions *) index->rd_options);

		state->backend_id = id >= 0 && forein_offload_backend_serves_lookups(id) ? id
			: forein_offload_backend_id("none");
		state->backend_known = true;
	}
	return state->backend_id;
}

/*
 * The index's reloption offload_settings (the backend's own settings,
 * checked when set), palloc'd; NULL if none.
 */
char *
forein_index_offload_settings(Relation index)
{
	ForeinOptions *opts = (ForeinOptions *) index->rd_options;

	if (opts == NULL || opts->offload_settings_offset == 0)
		return NULL;
	return pstrdup((const char *) opts + opts->offload_settings_offset);
}

/* Does the index's backend give hints at all? (on every scan start) */
bool
forein_index_offloaded(Relation index)
{
	static int	none_id = -2;

	if (none_id == -2)
		none_id = forein_offload_backend_id("none");
	return forein_index_backend(index) != none_id;
}

/*
 * PostgreSQL reports a type without a forein operator class before the AM
 * sees the index; this hook adds which types are supported to that error.
 */
static void
forein_emit_log_hook(ErrorData *edata)
{
	if (edata->elevel >= ERROR && edata->message != NULL &&
		edata->detail == NULL &&
		strstr(edata->message, "for access method \"forein\"") != NULL)
		edata->detail = pstrdup("forein indexes support these types: " FOREIN_SUPPORTED_TYPES ".");
	if (prev_emit_log_hook)
		prev_emit_log_hook(edata);
}

/*
 * The same estimates as btree: the strategies, ordering and page layout
 * match, so the planner picks forein exactly where it would pick btree.
 *
 * btcostestimate charges a CPU cost per level descended, from
 * IndexOptInfo->tree_height, which the planner fills in only for btree
 * (-1 otherwise: no charge).  Fill it in from forein's metapage first: the
 * root's level, 0 for a single leaf, as btree's _bt_getrootheight counts.
 * The planner already holds a lock on the index (get_relation_info), so
 * NoLock, as selfuncs.c opens indexes; the value is kept in the
 * IndexOptInfo for the other paths of this planning.
 */
void
forein_costestimate(PlannerInfo *root, IndexPath *path, double loop_count,
					Cost *indexStartupCost, Cost *indexTotalCost,
					Selectivity *indexSelectivity, double *indexCorrelation,
					double *indexPages)
{
	IndexOptInfo *info = path->indexinfo;

	/*
	 * The height from the root cached with the index's state, as nbtree
	 * takes it from its cached metapage: planning a query (every execution
	 * of a custom plan) then reads no metapage.  A root the cache has not
	 * seen yet is read once.
	 */
	if (info->tree_height < 0 && info->pages > 0)
	{
		Relation	index = index_open(info->indexoid, NoLock);
		ForeinState *state = forein_get_state(index);

		if (state->root == InvalidBlockNumber)
			forein_get_root(index, &state->root, &state->root_level);
		info->tree_height = (int) state->root_level;
		index_close(index, NoLock);
	}
	btcostestimate(root, path, loop_count, indexStartupCost, indexTotalCost,
				   indexSelectivity, indexCorrelation, indexPages);
}

/*
 * Checks an operator class: the five comparison strategies and the
 * comparison function for its input type.
 */
bool
forein_validate(Oid opclassoid)
{
	HeapTuple	tup;
	Form_pg_opclass form;
	Oid			opfamily;
	Oid			opcintype;
	bool		ok = true;
	int			strategy;

	tup = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclassoid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator class %u", opclassoid);
	form = (Form_pg_opclass) GETSTRUCT(tup);
	opfamily = form->opcfamily;
	opcintype = form->opcintype;
	ReleaseSysCache(tup);

	for (strategy = 1; strategy <= FOREIN_NSTRATEGIES; strategy++)
		if (!OidIsValid(get_opfamily_member(opfamily, opcintype, opcintype, strategy)))
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("forein operator class %u is missing the operator for strategy %d",
							opclassoid, strategy)));
			ok = false;
		}
	if (!OidIsValid(get_opfamily_proc(opfamily, opcintype, opcintype, FOREIN_CMP_PROC)))
	{
		ereport(INFO,
				(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
				 errmsg("forein operator class %u is missing support function 1",
						opclassoid)));
		ok = false;
	}
	return ok;
}

Datum
forein_handler(PG_FUNCTION_ARGS)
{
	IndexAmRoutine *amroutine = makeNode(IndexAmRoutine);

	if (!forein_log_hook_ready)
	{
		prev_emit_log_hook = emit_log_hook;
		emit_log_hook = forein_emit_log_hook;
		forein_log_hook_ready = true;
	}

	amroutine->amstrategies = FOREIN_NSTRATEGIES;
	amroutine->amsupport = FOREIN_NPROC;
	amroutine->amoptsprocnum = 0;
	amroutine->amcanorder = true;
	amroutine->amcanorderbyop = false;
	amroutine->amcanbackward = true;
	amroutine->amcanunique = true;
	amroutine->amcanmulticol = true;
	amroutine->amoptionalkey = true;
	amroutine->amsearcharray = true;
	amroutine->amsearchnulls = true;
	amroutine->amstorage = false;
	amroutine->amclusterable = false;
	amroutine->ampredlocks = false;
	amroutine->amcanparallel = false;
	amroutine->amcaninclude = true;
	amroutine->amusemaintenanceworkmem = false;
	amroutine->amparallelvacuumoptions =
		VACUUM_OPTION_PARALLEL_BULKDEL | VACUUM_OPTION_PARALLEL_COND_CLEANUP;
	amroutine->amkeytype = InvalidOid;

	amroutine->ambuild = forein_build;
	amroutine->ambuildempty = forein_buildempty;
	amroutine->aminsert = forein_insert;
	amroutine->ambulkdelete = forein_bulkdelete;
	amroutine->amvacuumcleanup = forein_vacuumcleanup;
	amroutine->amcanreturn = forein_canreturn;
	amroutine->amcostestimate = forein_costestimate;
	amroutine->amoptions = forein_options;
	amroutine->amproperty = NULL;
	amroutine->ambuildphasename = btbuildphasename;	/* forein_build.c */
	amroutine->amvalidate = forein_validate;
	amroutine->amadjustmembers = NULL;
	amroutine->ambeginscan = forein_beginscan;
	amroutine->amrescan = forein_rescan;
	amroutine->amgettuple = forein_gettuple;
	amroutine->amgetbitmap = forein_getbitmap;
	amroutine->amendscan = forein_endscan;
	amroutine->ammarkpos = forein_markpos;
	amroutine->amrestrpos = forein_restrpos;
	amroutine->amestimateparallelscan = NULL;
	amroutine->aminitparallelscan = NULL;
	amroutine->amparallelrescan = NULL;

	PG_RETURN_POINTER(amroutine);
}
