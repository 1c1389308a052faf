/*-------------------------------------------------------------------------
 *
 * forein_sqlfuncs.c
 *	  SQL functions of the offload side: forein_stats, forein_refresh,
 *	  forein_offload_entries and forein_offload_usage; and the debug
 *	  functions forein_debug_word and
 *	  forein_debug_page_intervals (words and page intervals, compared with
 *	  the engine's by regress/t/010_words.pl).
 *
 * Portions Copyright (c) 2026, forein developers
 *
 * pg_extension/forein_sqlfuncs.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/xlog.h"
#include "catalog/index.h"
#include "catalog/pg_class.h"
#include "catalog/pg_type.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/numeric.h"
#include "utils/rel.h"
#include "storage/bufmgr.h"

#include "forein.h"
#include "forein_offload.h"
#include "forein_offload_int.h"

PG_FUNCTION_INFO_V1(forein_stats);
PG_FUNCTION_INFO_V1(forein_refresh);
PG_FUNCTION_INFO_V1(forein_offload_entries);
PG_FUNCTION_INFO_V1(forein_offload_usage);
PG_FUNCTION_INFO_V1(forein_debug_word);
PG_FUNCTION_INFO_V1(forein_debug_page_intervals);

/*
 * Opens relid, which must be a forein index, with AccessShareLock.  With
 * `need`, the caller's privileges on the index's table are checked first,
 * before any lock is taken.
 */
static Relation
open_forein_index(Oid relid, bool check, ForeinPrivilege need)
{
	Oid			heapoid = InvalidOid;
	Relation	rel;

	if (check)
		heapoid = forein_check_table_privilege(relid, need);
	rel = try_relation_open(relid, AccessShareLock);
	if (rel == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_OBJECT),
				 errmsg("relation with OID %u does not exist", relid)));
	if (rel->rd_rel->relkind == RELKIND_PARTITIONED_INDEX &&
		rel->rd_indam != NULL && rel->rd_indam->ambuild == forein_build)
		forein_refuse_partitioned(rel);
	if (!forein_is_forein_index(rel))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a forein index",
						RelationGetRelationName(rel))));
	if (check)
		forein_recheck_table(relid, heapoid);
	/*
	 * Its on-disk format, where its pages can be read here (not another
	 * session's temporary index, nor an unlogged one on a standby).
	 */
	if (!RELATION_IS_OTHER_TEMP(rel) &&
		(RelationNeedsWAL(rel) || !RecoveryInProgress()))
		forein_check_metapage(rel);
	return rel;
}

/*
 * Why an index gets no hints, or NULL if nothing stands in the way.  Used
 * by forein_stats (status) and forein_refresh (NOTICE).
 */
static const char *
offload_off_reason(Relation index)
{
	if (forein_off_shared == NULL)
		return "inactive: forein is not in shared_preload_libraries";
	if (!forein_offload_enabled)
		return "off: forein.offload is off";
	if (index->rd_rel->relpersistence == RELPERSISTENCE_TEMP)
		return "off: temporary indexes are not offloaded";
	if (!forein_index_offloaded(index))
		return "off: the index's offload backend is none";
	if (!forein_get_state(index)->has_words)
		return psprintf("off: the keys have no order-preserving offload word: %s",
						forein_get_state(index)->no_words_reason);
	return NULL;
}

/*
 * forein_stats(index regclass): backend, lookups, hint_hits, move_rights,
 * fallbacks, installed_entries, capacity_entries, installed_nodes, status.
 *
 * Counters are every backend's counts for the index's slot plus this
 * backend's counts from times it had no slot (without preloading, only
 * those).
 * Entries are the backend's records, in its unit (LPM entries for
 * switch_lpm).  status says whether hints are active and, if not, why.
 */
Datum
forein_stats(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	/* public: counters and sizes only, like pg_stat_user_indexes */
	Relation	index = open_forein_index(relid, false, FOREIN_PRIV_SELECT);
	TupleDesc	tupdesc;
	Datum		values[9];
	bool		nulls[9] = {0};
	uint64		counts[4];
	ForeinOffTableInfo info;
	const char *backend;
	const char *reason = offload_off_reason(index);
	char		status[256];
	int			slotno = -1;
	uint64		capacity = 0;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");

	forein_off_local_counts(relid, counts);
	memset(&info, 0, sizeof(info));

	if (forein_off_shared == NULL)
		backend = "inactive";
	else if (reason != NULL)
		backend = "none";
	else
	{
		backend = forein_offload_backend_name(forein_index_backend(index));
		capacity = forein_index_budget(index);
	}

	if (forein_off_shared != NULL)
		slotno = forein_off_find_slot(index, false);
	if (slotno >= 0)
	{
		uint64		shared_counts[4];
		int			i;

		forein_off_slot_counts(slotno, shared_counts);
		for (i = 0; i < 4; i++)
			counts[i] += shared_counts[i];
		forein_off_table_info(slotno, index, &info);
	}

	if (reason != NULL)
		snprintf(status, sizeof(status), "%s", reason);
	else if (slotno < 0)
		snprintf(status, sizeof(status),
				 "no slot: all %d offload slots (forein.max_indexes) are held by other indexes",
				 forein_off_shared->max_indexes);
	else if (!info.valid)
		snprintf(status, sizeof(status), "pending: the first image is being computed");
	else
		snprintf(status, sizeof(status), "active");

	values[0] = CStringGetTextDatum(backend);
	values[1] = Int64GetDatum((int64) counts[0]);
	values[2] = Int64GetDatum((int64) counts[1]);
	values[3] = Int64GetDatum((int64) counts[2]);
	values[4] = Int64GetDatum((int64) counts[3]);
	values[5] = Int64GetDatum(info.valid ? (int64) info.nentries : 0);
	values[6] = Int64GetDatum((int64) capacity);
	values[7] = Int64GetDatum(info.valid ? (int64) info.nnodes : 0);
	values[8] = CStringGetTextDatum(status);

	relation_close(index, AccessShareLock);
	PG_RETURN_DATUM(HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls)));
}

/*
 * forein_refresh(index regclass) returns bigint: recomputes the index's
 * image in this backend (honouring forein.install_delay_ms) and installs
 * it; returns the installed records.  When the index gets no hints (no
 * free slot, offload off) it says why in a NOTICE and returns 0.
 */
Datum
forein_refresh(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	Relation	index = open_forein_index(relid, true, FOREIN_PRIV_OWNER);
	const char *reason;
	int			slotno;
	int64		installed;

	if (forein_off_shared == NULL)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("forein offload is inactive"),
				 errdetail("The forein library was not loaded at server start."),
				 errhint("Add \"forein\" to shared_preload_libraries and restart the server.")));

	/* nothing to install: offload off here, or a temporary index */
	reason = offload_off_reason(index);
	if (reason != NULL && (!forein_offload_enabled ||
						   index->rd_rel->relpersistence == RELPERSISTENCE_TEMP))
	{
		ereport(NOTICE,
				(errmsg("index \"%s\" gets no offload hints", RelationGetRelationName(index)),
				 errdetail("%s", reason)));
		relation_close(index, AccessShareLock);
		PG_RETURN_INT64(0);
	}

	/* an explicit request tries for a slot even if scans recently could not */
	forein_off_forget_slot(index);
	slotno = forein_off_find_slot(index, true);
	if (slotno < 0)
	{
		ereport(NOTICE,
				(errmsg("index \"%s\" gets no offload hints: no free offload slot",
						RelationGetRelationName(index)),
				 errdetail("All %d slots (forein.max_indexes) are held by other indexes; a slot is freed when its index or database is dropped.",
						   forein_off_shared->max_indexes),
				 errhint("Raise forein.max_indexes and restart, or drop an offloaded index.")));
		relation_close(index, AccessShareLock);
		PG_RETURN_INT64(0);
	}

	if (!forein_get_state(index)->has_words)
		ereport(NOTICE,
				(errmsg("index \"%s\" gets no offload hints",
						RelationGetRelationName(index)),
				 errdetail("Its keys have no order-preserving offload word: %s.",
						   forein_get_state(index)->no_words_reason)));

	installed = forein_refresh_index(index, slotno, true);
	relation_close(index, AccessShareLock);
	PG_RETURN_INT64(installed);
}

/* A uint64 as numeric (prefix values use all 64 bits) */
static Datum
uint64_numeric(uint64 v)
{
	char		buf[32];

	snprintf(buf, sizeof(buf), UINT64_FORMAT, v);
	return DirectFunctionCall3(numeric_in, CStringGetDatum(buf),
							   ObjectIdGetDatum(InvalidOid), Int32GetDatum(-1));
}

/*
 * A copy of the index's published image (palloc'd) with its table info, or
 * NULL when the index has no offload slot or no image yet.
 */
static char *
copy_published_image(Relation index, ForeinOffTableInfo *info)
{
	int			slotno = forein_off_find_slot(index, false);

	if (slotno < 0)
		return NULL;
	return forein_off_copy_image(slotno, index, info);
}

/*
 * forein_offload_entries(index regclass) returns setof (prefix numeric,
 * prefix_len integer, node bigint, level integer, prefix_hex text): the
 * records of the published image, as the backend lists them (switch_lpm:
 * its LPM entries).  prefix_hex ('0x3fa0000000000000/12') came in 0.5; a
 * database still at 0.4 has the first four columns only, and gets those.
 */
Datum
forein_offload_entries(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			relid = PG_GETARG_OID(0);
	/* the entries reveal key prefixes: SELECT on the table */
	Relation	index = open_forein_index(relid, true, FOREIN_PRIV_SELECT);
	forein_offload_record *recs = NULL;
	size_t		n = 0;
	size_t		i;
	ForeinOffTableInfo info;
	char	   *image;
	int			ncols;

	InitMaterializedSRF(fcinfo, 0);

	image = copy_published_image(index, &info);
	if (image != NULL)
	{
		n = forein_offload_image_records(info.backend_id, image, info.image_len, NULL, 0);
		recs = palloc_extended(Max(n, 1) * sizeof(forein_offload_record), MCXT_ALLOC_HUGE);
		n = forein_offload_image_records(info.backend_id, image, info.image_len, recs, n);
		pfree(image);
	}

	/* 0.4's four columns, or 0.5's five */
	ncols = rsinfo->setDesc->natts;
	if (ncols != 4 && ncols != 5)
		elog(ERROR, "forein_offload_entries: unexpected result of %d columns", ncols);

	for (i = 0; i < n; i++)
	{
		Datum		values[5];
		bool		nulls[5] = {0};

		values[0] = uint64_numeric(recs[i].key);
		values[1] = Int32GetDatum((int32) recs[i].key_bits);
		values[2] = Int64GetDatum((int64) recs[i].node);
		values[3] = Int32GetDatum((int32) recs[i].level);
		if (ncols == 5)
		{
			char		hex[40];

			snprintf(hex, sizeof(hex), "0x%016" INT64_MODIFIER "x/%u",
					 (uint64) recs[i].key, (unsigned) recs[i].key_bits);
			values[4] = CStringGetTextDatum(hex);
		}
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	relation_close(index, AccessShareLock);
	return (Datum) 0;
}

/*
 * forein_offload_usage(index regclass) returns setof (device text, resource
 * text, unit text, used bigint, capacity bigint): the published image's
 * usage by part as its backend reads it off the bytes (switch_lpm: one row,
 * its LPM entries), against the capacity the image was computed for.
 *
 * The same image forein_offload_entries lists, found the same way, so the
 * same privileges and errors; no rows where that image is not of a device:
 * no slot or no image yet, or a refresh that offloaded nothing (backend
 * none, keys without words; it records capacity 0).
 */
Datum
forein_offload_usage(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			relid = PG_GETARG_OID(0);
	/* reads the same image as forein_offload_entries: SELECT on the table */
	Relation	index = open_forein_index(relid, true, FOREIN_PRIV_SELECT);
	forein_offload_usage_row *rows = NULL;
	size_t		n = 0;
	size_t		i;
	ForeinOffTableInfo info;
	char	   *image;

	InitMaterializedSRF(fcinfo, 0);

	image = copy_published_image(index, &info);
	if (image != NULL && info.capacity > 0)
	{
		size_t		got;

		n = forein_offload_image_usage(info.backend_id, image, info.image_len,
									   info.capacity, NULL, 0);
		rows = palloc(Max(n, 1) * sizeof(forein_offload_usage_row));
		got = forein_offload_image_usage(info.backend_id, image, info.image_len,
										 info.capacity, rows, n);
		n = Min(n, got);
	}
	if (image != NULL)
		pfree(image);

	for (i = 0; i < n; i++)
	{
		Datum		values[5];
		bool		nulls[5] = {0};

		/* the C ABI NUL-terminates within the arrays */
		values[0] = CStringGetTextDatum(rows[i].device);
		values[1] = CStringGetTextDatum(rows[i].resource);
		values[2] = CStringGetTextDatum(rows[i].unit);
		values[3] = Int64GetDatum((int64) Min(rows[i].used, (uint64) PG_INT64_MAX));
		values[4] = Int64GetDatum((int64) Min(rows[i].capacity, (uint64) PG_INT64_MAX));
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	relation_close(index, AccessShareLock);
	return (Datum) 0;
}

/*
 * forein_debug_word(value anyelement) returns numeric: the offload word of a
 * value of a key type forein has an operator class for, under the value's
 * collation (text, varchar, char(n), name); NULL when that collation gives
 * no order-preserving word (nondeterministic).  The same function the index
 * applies to scan keys and index tuples, for the type's default operator
 * class (the *_pattern_ops words are those of the "C" collation).
 */
Datum
forein_debug_word(PG_FUNCTION_ARGS)
{
	Oid			typid = get_fn_expr_argtype(fcinfo->flinfo, 0);
	ForeinState *state;

	switch (typid)
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case UUIDOID:
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
		case NAMEOID:
		case FLOAT4OID:
		case FLOAT8OID:
		case NUMERICOID:
		case BOOLOID:
		case OIDOID:
		case INTERVALOID:
		case INETOID:
		case CIDROID:
		case BYTEAOID:
			break;
		default:
			ereport(ERROR,
					(errcode(ERRCODE_DATATYPE_MISMATCH),
					 errmsg("forein has no operator class for type %s",
							format_type_be(typid))));
	}
	state = palloc0(ForeinStateSize(1));
	forein_init_key_state(state, typid, PG_GET_COLLATION(), InvalidOid);
	if (!state->has_words)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(uint64_numeric(forein_datum_word(state, PG_GETARG_DATUM(0))));
}

/* A bound's key in its type's text form; *isnull for a NULL key */
static Datum
bound_key_text(ForeinState *state, IndexTuple bound, bool *isnull)
{
	Datum		value = index_getattr(bound, 1, state->tupdesc, isnull);
	Oid			outfunc;
	bool		varlena;

	if (*isnull)
		return (Datum) 0;
	getTypeOutputInfo(state->cols[0].typid, &outfunc, &varlena);
	return CStringGetTextDatum(OidOutputFunctionCall(outfunc, value));
}

/*
 * forein_debug_page_intervals(index regclass) returns setof (blkno bigint,
 * level integer, has_lo boolean, lo_key text, lo_owns boolean, has_hi
 * boolean, hi_key text, hi_owns boolean, lo numeric, hi numeric, hi_inf
 * boolean): every live node's bounds (key text, NULL for a NULL key; owns:
 * its heap TID is minimal) and the word interval [lo, hi) the refresh
 * computes from them.
 */
Datum
forein_debug_page_intervals(PG_FUNCTION_ARGS)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Oid			relid = PG_GETARG_OID(0);
	Relation	index = open_forein_index(relid, true, FOREIN_PRIV_SELECT);
	ForeinState *state = forein_get_state(index);
	BlockNumber nblocks;
	BlockNumber blkno;

	InitMaterializedSRF(fcinfo, 0);

	nblocks = RelationGetNumberOfBlocks(index);
	for (blkno = FOREIN_METAPAGE_BLKNO + 1; blkno < nblocks; blkno++)
	{
		Buffer		buf = ReadBuffer(index, blkno);
		Page		page;
		ForeinPageOpaque opaque;
		Datum		values[11];
		bool		nulls[11] = {0};
		uint64		lo,
					hi;
		bool		hi_inf;

		CHECK_FOR_INTERRUPTS();
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (PageIsNew(page) ||
			PageGetSpecialSize(page) != MAXALIGN(sizeof(ForeinPageOpaqueData)))
		{
			UnlockReleaseBuffer(buf);
			continue;
		}
		opaque = ForeinPageGetOpaque(page);
		if (opaque->page_id != FOREIN_PAGE_ID ||
			(opaque->flags & (FOREIN_META | FOREIN_DELETED)) != 0)
		{
			UnlockReleaseBuffer(buf);
			continue;
		}
		forein_page_interval(state, page, &lo, &hi, &hi_inf);
		values[0] = Int64GetDatum((int64) blkno);
		values[1] = Int32GetDatum((int32) opaque->level);
		values[2] = BoolGetDatum(!ForeinPageIsLeftmost(page));
		values[5] = BoolGetDatum(!ForeinPageIsRightmost(page));
		nulls[3] = nulls[4] = nulls[6] = nulls[7] = true;
		if (!ForeinPageIsLeftmost(page))
		{
			IndexTuple	b = (IndexTuple) PageGetItem(page, PageGetItemId(page, FOREIN_LOKEY));

			values[3] = bound_key_text(state, b, &nulls[3]);
			values[4] = BoolGetDatum(ForeinTidIsMinimal(&b->t_tid));
			nulls[4] = false;
		}
		if (!ForeinPageIsRightmost(page))
		{
			IndexTuple	b = (IndexTuple) PageGetItem(page, PageGetItemId(page, FOREIN_HIKEY));

			values[6] = bound_key_text(state, b, &nulls[6]);
			values[7] = BoolGetDatum(ForeinTidIsMinimal(&b->t_tid));
			nulls[7] = false;
		}
		UnlockReleaseBuffer(buf);
		values[8] = uint64_numeric(lo);
		values[9] = uint64_numeric(hi);
		values[10] = BoolGetDatum(hi_inf);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, values, nulls);
	}

	relation_close(index, AccessShareLock);
	return (Datum) 0;
}
