/*-------------------------------------------------------------------------
 *
 * forein_build.c
 *	  CREATE INDEX: sort the heap's keys, then load the tree bottom-up.
 *
 * Like nbtsort.c, the pages are written straight to storage (smgrextend)
 * and WAL-logged as full page images, bypassing shared buffers: the
 * relation is new, so nobody else can see its pages yet.  Each level gets
 * consecutive blocks, so sibling links are simply the neighbouring block
 * numbers.  Leaves are filled to the fillfactor, inner pages to 70%.
 *
 * pg_extension/forein_build.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/stratnum.h"
#include "access/tableam.h"
#include "access/xloginsert.h"
#include "catalog/index.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "executor/tuptable.h"
#include "forein.h"
#include "miscadmin.h"
#include "storage/smgr.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/date.h"
#include "utils/tuplesort.h"

/*
 * Integer-like keys (integers, dates, timestamps) are sorted as compact
 * 16-byte entries in memory while they fit in maintenance_work_mem: a
 * third of a heap tuplesort's footprint, so a 2M-row build sorts in memory
 * where the general path spills to tape.  Beyond the budget the entries
 * move to the tuplesort.
 */
typedef struct IntEntry
{
	int64		key;
	ItemPointerData tid;
	uint8		isnull;
	uint8		alive;
} IntEntry;

static inline int
compare_int_entries(const IntEntry *a, const IntEntry *b)
{
	BlockNumber ab,
				bb;

	if (a->isnull != b->isnull)
		return a->isnull ? 1 : -1;
	if (!a->isnull && a->key != b->key)
		return a->key < b->key ? -1 : 1;
	ab = ItemPointerGetBlockNumberNoCheck(&a->tid);
	bb = ItemPointerGetBlockNumberNoCheck(&b->tid);
	if (ab != bb)
		return ab < bb ? -1 : 1;
	return (int) ItemPointerGetOffsetNumberNoCheck(&a->tid) -
		(int) ItemPointerGetOffsetNumberNoCheck(&b->tid);
}

#define ST_SORT sort_int_entries
#define ST_ELEMENT_TYPE IntEntry
#define ST_COMPARE(a, b) compare_int_entries(a, b)
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/* Pages of one level, written as they fill */
typedef struct LevelWriter
{
	uint16		level;
	Size		target;			/* bytes of items + bounds before a new page */
	IndexTuple *items;			/* the open page's items (copies) */
	int			nitems;
	Size		bytes;
	IndexTuple	lokey;			/* the open page's low key; NULL: leftmost */
	BlockNumber first_blkno;
	int			npages;
	/* per page written: low key (NULL for the first) for the level above */
	IndexTuple *page_lokeys;
	int			page_lokeys_size;
	MemoryContext pagecxt;
} LevelWriter;

typedef struct BuildState
{
	Relation	index;
	ForeinState *state;
	bool		use_wal;
	BlockNumber next_blkno;
	IndexTuple	placeholder;
	Tuplesortstate *sort;		/* NULL while sorting in memory */
	TupleTableSlot *slot;
	double		indtuples;
	IntEntry   *entries;		/* the in-memory sort (integer-like keys) */
	Size		nentries;
	Size		capacity;
	Size		next;			/* reading position after the sort */
	TupleDesc	sortdesc;		/* the index's columns, then TID and liveness */
	int			natts;			/* the index's columns */
	int			nsortkeys;		/* key columns and the TID */
	Oid			sortops[INDEX_MAX_KEYS + 1];
	Oid			collations[INDEX_MAX_KEYS + 1];
	bool		nullsfirst[INDEX_MAX_KEYS + 1];
} BuildState;

static Size
usable_space(void)
{
	return BLCKSZ - SizeOfPageHeaderData - MAXALIGN(sizeof(ForeinPageOpaqueData));
}

static inline Size
item_cost(IndexTuple itup)
{
	return MAXALIGN(IndexTupleSize(itup)) + sizeof(ItemIdData);
}

static void
write_page(BuildState *bs, Page page, BlockNumber blkno)
{
	PageSetChecksumInplace(page, blkno);
	if (blkno == FOREIN_METAPAGE_BLKNO && bs->next_blkno > 1)
		smgrwrite(RelationGetSmgr(bs->index), MAIN_FORKNUM, blkno, (char *) page, true);
	else
		smgrextend(RelationGetSmgr(bs->index), MAIN_FORKNUM, blkno, (char *) page, true);
	if (bs->use_wal)
		log_newpage(&bs->index->rd_node, MAIN_FORKNUM, blkno, page, true);
}

static void
level_init(LevelWriter *w, uint16 level, Size target)
{
	memset(w, 0, sizeof(*w));
	w->level = level;
	w->target = target;
	w->items = palloc(sizeof(IndexTuple) * MaxIndexTuplesPerPage);
	w->page_lokeys_size = 64;
	w->page_lokeys = palloc(sizeof(IndexTuple) * w->page_lokeys_size);
	w->first_blkno = InvalidBlockNumber;
	w->pagecxt = AllocSetContextCreate(CurrentMemoryContext, "forein build page",
									   ALLOCSET_DEFAULT_SIZES);
}

/* Writes the open page with high key hikey (NULL: rightmost) */
static void
level_flush(BuildState *bs, LevelWriter *w, IndexTuple hikey, bool last)
{
	PGAlignedBlock buf;
	Page		page = buf.data;
	BlockNumber blkno = bs->next_blkno++;
	ForeinPageOpaque opaque;
	uint16		flags = (last && w->npages == 0) ? FOREIN_ROOT : 0;
	int			i;

	if (w->first_blkno == InvalidBlockNumber)
		w->first_blkno = blkno;
	forein_init_page(page, flags, w->level);
	opaque = ForeinPageGetOpaque(page);
	opaque->version = 1;
	opaque->left = w->npages == 0 ? InvalidBlockNumber : blkno - 1;
	opaque->right = last ? InvalidBlockNumber : blkno + 1;
	if (PageAddItem(page, (Item) (hikey ? hikey : bs->placeholder),
					IndexTupleSize(hikey ? hikey : bs->placeholder),
					FOREIN_HIKEY, false, false) == InvalidOffsetNumber ||
		PageAddItem(page, (Item) (w->lokey ? w->lokey : bs->placeholder),
					IndexTupleSize(w->lokey ? w->lokey : bs->placeholder),
					FOREIN_LOKEY, false, false) == InvalidOffsetNumber)
		elog(ERROR, "forein: failed to add bounds to a new page");
	for (i = 0; i < w->nitems; i++)
		if (PageAddItem(page, (Item) w->items[i], IndexTupleSize(w->items[i]),
						InvalidOffsetNumber, false, false) == InvalidOffsetNumber)
			elog(ERROR, "forein: failed to add an item to a new page");
	write_page(bs, page, blkno);

	if (w->npages == w->page_lokeys_size)
	{
		w->page_lokeys_size *= 2;
		w->page_lokeys = repalloc(w->page_lokeys, sizeof(IndexTuple) * w->page_lokeys_size);
	}
	/* the next level's separator for this page lives outside pagecxt */
	w->page_lokeys[w->npages++] = w->lokey ? forein_make_bound(w->lokey) : NULL;
	MemoryContextReset(w->pagecxt);
	w->nitems = 0;
	w->bytes = 0;
	w->lokey = NULL;
	if (hikey)
	{
		MemoryContext old = MemoryContextSwitchTo(w->pagecxt);

		w->lokey = forein_make_bound(hikey);
		MemoryContextSwitchTo(old);
	}
}

static void
level_append(LevelWriter *w, IndexTuple itup)
{
	MemoryContext old = MemoryContextSwitchTo(w->pagecxt);
	Size		size = IndexTupleSize(itup);
	IndexTuple	copy = palloc(size);

	memcpy(copy, itup, size);
	w->items[w->nitems++] = copy;
	w->bytes += item_cost(itup);
	MemoryContextSwitchTo(old);
}

/* The cost of a bound made from itup: a posting list's bound is its key */
static inline Size
bound_cost(LevelWriter *w, IndexTuple itup)
{
	if (w->level == 0)
		return MAXALIGN(forein_tuple_key_size(itup)) + sizeof(ItemIdData);
	return item_cost(itup);
}

/*
 * Adds an item; closes the open page first when the item would take it past
 * its target.  The high key is the bound of the next page's first item,
 * which may be larger than the items the page was planned with: when it
 * does not fit, the page's last items move on to the next page.  The
 * separator between two leaves is the right one's first key alone when it
 * differs from the left's last key.
 */
static void
level_add(BuildState *bs, LevelWriter *w, IndexTuple itup)
{
	Size		cost = item_cost(itup);
	Size		lo_cost = w->lokey ? item_cost(w->lokey) : item_cost(bs->placeholder);
	Size		hi_cost = bound_cost(w, itup);

	if (w->nitems > 0 &&
		(w->bytes + cost + lo_cost + hi_cost > w->target ||
		 w->nitems >= MaxIndexTuplesPerPage - 2))
	{
		IndexTuple *carry = palloc(sizeof(IndexTuple) * w->nitems);
		int			ncarry = 0;
		IndexTuple	next = itup;
		IndexTuple	sep;
		int			i;

		while (w->nitems > 1 && w->bytes + lo_cost + bound_cost(w, next) > usable_space())
		{
			next = w->items[--w->nitems];
			w->bytes -= item_cost(next);
			carry[ncarry++] = CopyIndexTuple(next);
		}
		next = ncarry > 0 ? carry[ncarry - 1] : itup;
		sep = w->level == 0 ? forein_posting_key(next) : forein_make_bound(next);
		if (w->level == 0 &&
			!forein_keys_equal(bs->state, w->items[w->nitems - 1], next))
			ItemPointerSet(&sep->t_tid, 0, 0);
		level_flush(bs, w, sep, false);
		pfree(sep);
		for (i = ncarry - 1; i >= 0; i--)
		{
			level_append(w, carry[i]);
			pfree(carry[i]);
		}
		pfree(carry);
	}
	level_append(w, itup);
}

/* The Datum of an integer-like key of the index's type */
static Datum
int_datum(Oid typid, int64 v)
{
	switch (typid)
	{
		case INT2OID:
			return Int16GetDatum((int16) v);
		case INT4OID:
			return Int32GetDatum((int32) v);
		case DATEOID:
			return DateADTGetDatum((DateADT) v);
		default:
			return Int64GetDatum(v);
	}
}

static void
put_slot(BuildState *bs, Datum *values, bool *isnull, ItemPointer tid, bool alive)
{
	TupleTableSlot *slot = bs->slot;
	int			i;

	ExecClearTuple(slot);
	for (i = 0; i < bs->natts; i++)
	{
		slot->tts_values[i] = values[i];
		slot->tts_isnull[i] = isnull[i];
	}
	slot->tts_values[bs->natts] = PointerGetDatum(tid);
	slot->tts_isnull[bs->natts] = false;
	slot->tts_values[bs->natts + 1] = BoolGetDatum(alive);
	slot->tts_isnull[bs->natts + 1] = false;
	ExecStoreVirtualTuple(slot);
	tuplesort_puttupleslot(bs->sort, slot);
}

/* Sorts by the key columns in index order, then by heap TID */
static void
begin_tuplesort(BuildState *bs)
{
	AttrNumber	attnums[INDEX_MAX_KEYS + 1];
	int			i;

	for (i = 0; i < bs->nsortkeys - 1; i++)
		attnums[i] = i + 1;
	attnums[bs->nsortkeys - 1] = bs->natts + 1;
	bs->sort = tuplesort_begin_heap(bs->sortdesc, bs->nsortkeys, attnums,
									bs->sortops, bs->collations, bs->nullsfirst,
									maintenance_work_mem, NULL, TUPLESORT_NONE);
}

/* The in-memory entries outgrew maintenance_work_mem: hand them over */
static void
spill_entries(BuildState *bs)
{
	Size		i;

	begin_tuplesort(bs);
	for (i = 0; i < bs->nentries; i++)
	{
		IntEntry   *e = &bs->entries[i];
		Datum		value = e->isnull ? (Datum) 0 : int_datum(bs->state->cols[0].typid, e->key);
		bool		isnull = e->isnull;

		put_slot(bs, &value, &isnull, &e->tid, e->alive);
	}
	pfree(bs->entries);
	bs->entries = NULL;
}

static void
build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			   bool tupleIsAlive, void *arg)
{
	BuildState *bs = (BuildState *) arg;

	bs->indtuples += 1;
	if (bs->entries != NULL)
	{
		IntEntry   *e;

		if (bs->nentries == bs->capacity)
		{
			if (2 * bs->capacity * sizeof(IntEntry) > (Size) maintenance_work_mem * 1024)
			{
				spill_entries(bs);
				put_slot(bs, values, isnull, tid, tupleIsAlive);
				return;
			}
			bs->capacity *= 2;
			bs->entries = repalloc_huge(bs->entries, bs->capacity * sizeof(IntEntry));
		}
		e = &bs->entries[bs->nentries++];
		e->isnull = isnull[0];
		e->key = 0;
		if (!isnull[0])
		{
			ForeinSearchKey key;

			forein_key_from_datum(bs->state, values[0], false, &key);
			e->key = key.vals[0].ival;
		}
		e->tid = *tid;
		e->alive = tupleIsAlive;
		return;
	}
	put_slot(bs, values, isnull, tid, tupleIsAlive);
}

/* The next entry in sorted order; false at the end */
static bool
next_sorted(BuildState *bs, Datum *values, bool *isnull, ItemPointerData *tid,
			bool *alive)
{
	bool		tnull;
	int			i;

	if (bs->sort == NULL)
	{
		IntEntry   *e;

		if (bs->next >= bs->nentries)
			return false;
		e = &bs->entries[bs->next++];
		isnull[0] = e->isnull;
		values[0] = e->isnull ? (Datum) 0 : int_datum(bs->state->cols[0].typid, e->key);
		*tid = e->tid;
		*alive = e->alive;
		return true;
	}
	if (!tuplesort_gettupleslot(bs->sort, true, false, bs->slot, NULL))
		return false;
	for (i = 0; i < bs->natts; i++)
		values[i] = slot_getattr(bs->slot, i + 1, &isnull[i]);
	*tid = *(ItemPointer) DatumGetPointer(slot_getattr(bs->slot, bs->natts + 1, &tnull));
	*alive = DatumGetBool(slot_getattr(bs->slot, bs->natts + 2, &tnull));
	return true;
}

static void
report_duplicate(Relation heap, Relation index, IndexTuple itup)
{
	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	char	   *desc;

	index_deform_tuple(itup, RelationGetDescr(index), values, isnull);
	desc = BuildIndexValueDescription(index, values, isnull);
	ereport(ERROR,
			(errcode(ERRCODE_UNIQUE_VIOLATION),
			 errmsg("could not create unique index \"%s\"",
					RelationGetRelationName(index)),
			 desc ? errdetail("Key %s is duplicated.", desc) :
			 errdetail("Duplicate keys exist."),
			 errtableconstraint(heap, RelationGetRelationName(index))));
}

/* Adds a run of identical keys as one leaf tuple; frees run */
static void
add_run(BuildState *bs, LevelWriter *w, IndexTuple run, ItemPointerData *tids,
		int n)
{
	IndexTuple	itup = n > 1 ? forein_form_posting(run, tids, n) : run;

	level_add(bs, w, itup);
	if (itup != run)
		pfree(itup);
	pfree(run);
}

/* Loads the sorted entries into leaves; returns the leaf level writer */
static void
load_leaves(BuildState *bs, Relation heap, IndexInfo *indexInfo, LevelWriter *w)
{
	ForeinState *state = bs->state;
	IndexTuple	prev = NULL;
	int			alive_in_run = 0;
	bool		dedup = forein_index_dedup(bs->index);
	IndexTuple	run = NULL;		/* dedup: the open run's first tuple */
	ItemPointerData *run_tids = palloc(sizeof(ItemPointerData) * FOREIN_MAX_TIDS_PER_PAGE);
	int			run_n = 0;
	int			run_max = 0;
	MemoryContext tupcxt = AllocSetContextCreate(CurrentMemoryContext,
												 "forein build tuple",
												 ALLOCSET_DEFAULT_SIZES);

	Datum		values[INDEX_MAX_KEYS];
	bool		isnull[INDEX_MAX_KEYS];
	ItemPointerData tid;
	bool		alive;

	while (next_sorted(bs, values, isnull, &tid, &alive))
	{
		MemoryContext old = MemoryContextSwitchTo(tupcxt);
		IndexTuple	itup = index_form_tuple(state->tupdesc, values, isnull);
		bool		anynull = false;
		int			i;

		itup->t_tid = tid;
		MemoryContextSwitchTo(old);
		forein_check_item_size(bs->index, heap, itup);

		for (i = 0; i < state->nkeys; i++)
			anynull |= isnull[i];
		if (indexInfo->ii_Unique &&
			(!anynull || indexInfo->ii_NullsNotDistinct))
		{
			if (prev != NULL && forein_keys_equal(state, prev, itup))
			{
				alive_in_run += alive ? 1 : 0;
				if (alive_in_run > 1)
					report_duplicate(heap, bs->index, itup);
			}
			else
				alive_in_run = alive ? 1 : 0;
		}
		if (dedup)
		{
			/* identical keys in a row become one posting tuple */
			if (run != NULL && run_n < run_max && forein_same_key_image(run, itup))
			{
				run_tids[run_n++] = tid;
				pfree(itup);
				CHECK_FOR_INTERRUPTS();
				continue;
			}
			if (run != NULL)
				add_run(bs, w, run, run_tids, run_n);
			run = itup;
			run_tids[0] = tid;
			run_n = 1;
			run_max = forein_posting_max_tids(IndexTupleSize(itup));
			CHECK_FOR_INTERRUPTS();
			continue;
		}
		level_add(bs, w, itup);
		/* keep the previous tuple for the duplicate check, free older ones */
		if (prev != NULL)
			pfree(prev);
		prev = itup;
		CHECK_FOR_INTERRUPTS();
	}
	if (run != NULL)
		add_run(bs, w, run, run_tids, run_n);
	pfree(run_tids);
	level_flush(bs, w, NULL, true);
	MemoryContextDelete(tupcxt);
}

/* Builds the inner levels above `below`; returns the root's block and level */
static void
load_inner(BuildState *bs, LevelWriter *below, BlockNumber *root, uint32 *level)
{
	LevelWriter *w = below;

	while (w->npages > 1)
	{
		LevelWriter *up = palloc(sizeof(LevelWriter));
		int			i;

		level_init(up, w->level + 1, usable_space() * FOREIN_INNER_FILLFACTOR / 100);
		for (i = 0; i < w->npages; i++)
		{
			IndexTuple	sep = w->page_lokeys[i] ? w->page_lokeys[i] : bs->placeholder;
			IndexTuple	dl = forein_make_downlink(sep, w->first_blkno + i);

			level_add(bs, up, dl);
			pfree(dl);
		}
		level_flush(bs, up, NULL, true);
		w = up;
	}
	*root = w->first_blkno;
	*level = w->level;
}

/*
 * The sort's tuple descriptor and keys: every index column (INCLUDE ones
 * ride along), sorted by the key columns with their opfamily's "<" (">"
 * for DESC) and NULLS placement, then the heap TID and a liveness flag.
 */
static void
init_sort(BuildState *bs, ForeinState *state)
{
	int			i;

	bs->natts = state->natts;
	bs->nsortkeys = state->nkeys + 1;
	bs->sortdesc = CreateTemplateTupleDesc(state->natts + 2);
	for (i = 0; i < state->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(state->tupdesc, i);

		TupleDescInitEntry(bs->sortdesc, i + 1, NameStr(att->attname),
						   att->atttypid, att->atttypmod, 0);
		TupleDescInitEntryCollation(bs->sortdesc, i + 1, att->attcollation);
	}
	for (i = 0; i < state->nkeys; i++)
	{
		ForeinColumn *col = &state->cols[i];

		bs->sortops[i] = get_opfamily_member(col->opfamily, col->typid, col->typid,
											 col->desc ? BTGreaterStrategyNumber :
											 BTLessStrategyNumber);
		if (!OidIsValid(bs->sortops[i]))
			elog(ERROR, "forein: no ordering operator for type %u in the operator family",
				 col->typid);
		bs->collations[i] = col->collation;
		bs->nullsfirst[i] = col->nulls_first;
	}
	bs->sortops[state->nkeys] = TIDLessOperator;
	bs->collations[state->nkeys] = InvalidOid;
	bs->nullsfirst[state->nkeys] = false;
	TupleDescInitEntry(bs->sortdesc, state->natts + 1, "tid", TIDOID, -1, 0);
	TupleDescInitEntry(bs->sortdesc, state->natts + 2, "alive", BOOLOID, -1, 0);
	bs->slot = MakeSingleTupleTableSlot(bs->sortdesc, &TTSOpsMinimalTuple);
}

IndexBuildResult *
forein_build(Relation heap, Relation index, IndexInfo *indexInfo)
{
	ForeinState *state;
	BuildState	bs;
	IndexBuildResult *result;
	LevelWriter leaves;
	BlockNumber root;
	uint32		root_level;
	double		reltuples;
	PGAlignedBlock metabuf;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data",
			 RelationGetRelationName(index));
	(void) forein_index_backend(index);	/* validates the reloptions early */

	state = forein_get_state(index);
	memset(&bs, 0, sizeof(bs));
	bs.index = index;
	bs.state = state;
	bs.use_wal = RelationNeedsWAL(index);
	bs.placeholder = forein_make_placeholder(state);

	init_sort(&bs, state);
	if (state->natts == 1 && !state->cols[0].desc && !state->cols[0].nulls_first &&
		(state->cols[0].kind == FOREIN_KEY_INT || state->cols[0].kind == FOREIN_KEY_DATE ||
		 state->cols[0].kind == FOREIN_KEY_TIMESTAMP))
	{
		bs.capacity = 1024;
		bs.entries = palloc(bs.capacity * sizeof(IntEntry));
	}
	else
		begin_tuplesort(&bs);

	reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
									   build_callback, &bs, NULL);
	if (bs.sort)
		tuplesort_performsort(bs.sort);
	else
		sort_int_entries(bs.entries, bs.nentries);

	/* block 0 is the metapage; written again once the root is known */
	forein_init_metapage(metabuf.data, InvalidBlockNumber, 0,
						 forein_index_fillfactor(index));
	write_page(&bs, metabuf.data, bs.next_blkno++);

	level_init(&leaves, 0, usable_space() * forein_index_fillfactor(index) / 100);
	load_leaves(&bs, heap, indexInfo, &leaves);
	load_inner(&bs, &leaves, &root, &root_level);

	forein_init_metapage(metabuf.data, root, root_level,
						 forein_index_fillfactor(index));
	write_page(&bs, metabuf.data, FOREIN_METAPAGE_BLKNO);

	/* WAL alone does not cover pages written behind the buffer manager */
	if (bs.use_wal)
		smgrimmedsync(RelationGetSmgr(index), MAIN_FORKNUM);

	if (bs.sort)
		tuplesort_end(bs.sort);
	else
		pfree(bs.entries);
	ExecDropSingleTupleTableSlot(bs.slot);
	forein_offload_node_event(index, root);

	result = palloc(sizeof(IndexBuildResult));
	result->heap_tuples = reltuples;
	result->index_tuples = bs.indtuples;
	return result;
}

/* The init fork of an unlogged index: metapage and an empty root leaf */
void
forein_buildempty(Relation index)
{
	ForeinState *state = forein_get_state(index);
	PGAlignedBlock meta;
	PGAlignedBlock root;
	IndexTuple	placeholder = forein_make_placeholder(state);

	forein_init_metapage(meta.data, 1, 0, forein_index_fillfactor(index));
	forein_init_page(root.data, FOREIN_ROOT, 0);
	ForeinPageGetOpaque(root.data)->version = 1;
	if (PageAddItem(root.data, (Item) placeholder, IndexTupleSize(placeholder),
					FOREIN_HIKEY, false, false) == InvalidOffsetNumber ||
		PageAddItem(root.data, (Item) placeholder, IndexTupleSize(placeholder),
					FOREIN_LOKEY, false, false) == InvalidOffsetNumber)
		elog(ERROR, "forein: failed to initialize an empty root");

	PageSetChecksumInplace(meta.data, FOREIN_METAPAGE_BLKNO);
	smgrextend(RelationGetSmgr(index), INIT_FORKNUM, FOREIN_METAPAGE_BLKNO,
			   meta.data, true);
	log_newpage(&(RelationGetSmgr(index))->smgr_rnode.node, INIT_FORKNUM,
				FOREIN_METAPAGE_BLKNO, meta.data, true);
	PageSetChecksumInplace(root.data, 1);
	smgrextend(RelationGetSmgr(index), INIT_FORKNUM, 1, root.data, true);
	log_newpage(&(RelationGetSmgr(index))->smgr_rnode.node, INIT_FORKNUM, 1,
				root.data, true);
	smgrimmedsync(RelationGetSmgr(index), INIT_FORKNUM);
}
