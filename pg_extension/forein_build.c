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
 * The keys are sorted as nbtsort.c sorts them: index tuples in tuplesort's
 * btree sort (sort support, abbreviated keys, heap TID as the last key,
 * duplicates of a unique index found by the sort; dead tuples of a unique
 * index sorted apart), and the build reports btree's progress phases.  A
 * single key of a fixed-width type forein knows, or of text ordered as
 * bytes, sorts as compact entries of its own instead (SortEntry below).
 *
 * pg_extension/forein_build.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/nbtree.h"
#include "access/stratnum.h"
#include "access/tableam.h"
#include "access/xloginsert.h"
#include "catalog/index.h"
#include "catalog/pg_am.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_type.h"
#include "commands/progress.h"
#include "forein.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "lib/binaryheap.h"
#include "port/pg_bswap.h"
#include "storage/buffile.h"
#include "storage/smgr.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/date.h"
#include "utils/tuplesort.h"
#include "utils/uuid.h"

/*
 * Single integer-like (integers, dates, timestamps) and uuid keys, and text
 * keys of a non-unique index ordered as bytes, are sorted as compact 24-byte
 * entries: the key as two order-preserving unsigned words (text: its first
 * 8 bytes, then a pointer to the whole value, copied to a key arena), then
 * the heap TID.  That is a third to a half of a tuplesort's footprint per
 * row and a comparison without a call, so more rows sort per batch.  Up to
 * maintenance_work_mem the entries sort in memory; beyond it each full
 * batch is sorted and written to a temporary file as a run (a text entry
 * followed by its value, lo then its length), and the load merges the runs
 * with the last batch.
 */
typedef struct SortEntry
{
	uint64		hi;
	uint64		lo;
	ItemPointerData tid;
	uint8		isnull;
	uint8		alive;
} SortEntry;

#define INT_SIGN_FLIP	UINT64CONST(0x8000000000000000)
/* the text key arena grows in blocks of this size */
#define KEY_BLOCK_SIZE	(1024 * 1024)
/* how many entries ahead the load prefetches text values */
#define PREFETCH_DISTANCE 32

static inline int
compare_tids(const SortEntry *a, const SortEntry *b)
{
	BlockNumber ab = ItemPointerGetBlockNumberNoCheck(&a->tid);
	BlockNumber bb = ItemPointerGetBlockNumberNoCheck(&b->tid);

	if (ab != bb)
		return ab < bb ? -1 : 1;
	return (int) ItemPointerGetOffsetNumberNoCheck(&a->tid) -
		(int) ItemPointerGetOffsetNumberNoCheck(&b->tid);
}

static inline int
compare_entries(const SortEntry *a, const SortEntry *b)
{
	if (a->isnull != b->isnull)
		return a->isnull ? 1 : -1;
	if (!a->isnull)
	{
		if (a->hi != b->hi)
			return a->hi < b->hi ? -1 : 1;
		if (a->lo != b->lo)
			return a->lo < b->lo ? -1 : 1;
	}
	return compare_tids(a, b);
}

#define ST_SORT sort_entries
#define ST_ELEMENT_TYPE SortEntry
#define ST_COMPARE(a, b) compare_entries(a, b)
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/* The text value a text entry's lo points to */
#define ENTRY_TEXT(e)	((struct varlena *) (uintptr_t) (e)->lo)

/* Text ordered as bytes: memcmp, then the shorter first */
static inline int
compare_text_entries(const SortEntry *a, const SortEntry *b)
{
	if (a->isnull != b->isnull)
		return a->isnull ? 1 : -1;
	if (!a->isnull)
	{
		struct varlena *va;
		struct varlena *vb;
		Size		la;
		Size		lb;
		int			r;

		/* the values only on a tie of the first 8 bytes: they are far */
		if (a->hi != b->hi)
			return a->hi < b->hi ? -1 : 1;
		va = ENTRY_TEXT(a);
		vb = ENTRY_TEXT(b);
		la = VARSIZE_ANY_EXHDR(va);
		lb = VARSIZE_ANY_EXHDR(vb);
		r = memcmp(VARDATA_ANY(va), VARDATA_ANY(vb), Min(la, lb));
		if (r != 0)
			return r;
		if (la != lb)
			return la < lb ? -1 : 1;
	}
	return compare_tids(a, b);
}

#define ST_SORT sort_text_entries
#define ST_ELEMENT_TYPE SortEntry
#define ST_COMPARE(a, b) compare_text_entries(a, b)
#define ST_SCOPE static
#define ST_DEFINE
#include "lib/sort_template.h"

/* A sorted batch of entries written out; head is its next entry */
typedef struct EntryRun
{
	BufFile    *file;
	Size		left;			/* entries not yet taken, head included */
	SortEntry	head;
	char	   *value;			/* text: head's value */
	Size		value_size;
} EntryRun;

/* Pages of one level, written as they fill */
typedef struct LevelWriter
{
	uint16		level;
	Size		target;			/* bytes of items + bounds before a new page */
	IndexTuple *items;			/* the open page's items (copies in arena) */
	char	   *arena;			/* FOREIN_ARENA_SIZE bytes, emptied per page */
	Size		arena_used;
	int			nitems;
	Size		bytes;
	IndexTuple	lokey;			/* the open page's low key; NULL: leftmost */
	BlockNumber first_blkno;
	int			npages;
	/* per page written: low key (NULL for the first) for the level above */
	IndexTuple *page_lokeys;
	int			page_lokeys_size;
	MemoryContext pagecxt;		/* the low key */
} LevelWriter;

/* An open page's items: at most a page of them plus one more item */
#define FOREIN_ARENA_SIZE	(2 * BLCKSZ)

typedef struct BuildState
{
	Relation	heap;
	Relation	index;
	ForeinState *state;
	bool		use_wal;
	bool		unique;
	bool		align_leaves;	/* leaves cut by leaf_cut */
	BlockNumber next_blkno;
	IndexTuple	placeholder;
	Tuplesortstate *sort;		/* NULL: the compact sort; unique indexes:
								 * the live tuples */
	Tuplesortstate *deadsort;	/* unique indexes: the dead tuples */
	bool		havedead;
	double		indtuples;
	SortEntry  *entries;		/* compact entries; NULL: the tuplesort */
	Size		nentries;
	Size		capacity;
	Size		next;			/* reading position after the sort */
	EntryRun   *runs;			/* batches written out */
	int			nruns;
	int			runs_size;
	binaryheap *merge;			/* runs and the last batch by head; NULL:
								 * the last batch alone */
	SortEntry	taken;			/* the entry last returned by the merge */
	SortEntry	prev;			/* unique: the entry loaded before */
	bool		have_prev;
	char	   *taken_value;	/* text: taken's value, read from a run */
	Size		taken_value_size;
	bool		text;			/* the entries are text (lo: the value) */
	Size		budget;			/* bytes: entries and text values */
	MemoryContext keycxt;		/* text: the values, emptied per batch */
	char	   *key_block;		/* text: the block values are copied to */
	Size		key_block_left;
	Size		key_bytes;		/* text: bytes of the blocks taken */
	/* the index as tuplesort's btree sort sees it (begin_tuplesort) */
	RelationData sortrel;
	FormData_pg_class sortclass;
	Oid			sortfamilies[INDEX_MAX_KEYS];
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
	w->arena = palloc(FOREIN_ARENA_SIZE);
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
	i = 0;
	if (w->level > 0 && w->nitems > 0)
	{
		opaque->first_child = FOREIN_DOWNLINK(w->items[0]);
		i = 1;
	}
	for (; i < w->nitems; i++)
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
	w->arena_used = 0;
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

/* An inner page's first downlink costs nothing: it becomes first_child */
static void
level_append(LevelWriter *w, IndexTuple itup)
{
	Size		size = IndexTupleSize(itup);
	IndexTuple	copy = (IndexTuple) (w->arena + w->arena_used);

	if (w->arena_used + MAXALIGN(size) > FOREIN_ARENA_SIZE)
		elog(ERROR, "forein: build page items overflow");
	memcpy(copy, itup, size);
	w->arena_used += MAXALIGN(size);
	if (w->level == 0 || w->nitems > 0)
		w->bytes += item_cost(itup);
	w->items[w->nitems++] = copy;
}

/*
 * The cost of a bound made from itup: a posting list's bound is its key, a
 * downlink's its separator
 */
static inline Size
bound_cost(LevelWriter *w, IndexTuple itup)
{
	if (w->level > 0)
		return item_cost(itup) - FOREIN_DOWNLINK_EXTRA;
	if (ForeinTupleIsPosting(itup))
		return MAXALIGN(forein_tuple_key_size(itup)) + sizeof(ItemIdData);
	return item_cost(itup);
}

/*
 * Closes the open leaf at the best cut before itup, which does not fit:
 * among the cuts whose page fills to within FOREIN_CUT_SLACK of the target,
 * the one with the most aligned separator (forein_separator.c), then the
 * one nearest the target.  Where no cut falls in that window (large items),
 * the one nearest the target that fits.  The items after the cut move on to
 * the next page; the caller then adds itup.
 */
static void
leaf_cut(BuildState *bs, LevelWriter *w, IndexTuple itup, Size lo_cost)
{
	Size		slack = FOREIN_CUT_SLACK(w->target);
	Size		left = lo_cost;
	int			best = -1;
	bool		best_in_window = false;
	int			best_score = 0;
	Size		best_dist = 0;
	IndexTuple	right;
	IndexTuple	sep;
	IndexTuple *carry;
	int			ncarry;
	int			k;
	int			i;

	for (k = 1; k <= w->nitems; k++)
	{
		Size		fill;
		Size		dist;
		bool		in_window;
		int			score;

		right = k < w->nitems ? w->items[k] : itup;
		left += item_cost(w->items[k - 1]);
		fill = left + bound_cost(w, right);
		if (fill > usable_space())
			break;
		dist = fill > w->target ? fill - w->target : w->target - fill;
		in_window = dist <= slack;
		score = in_window ? forein_cut_alignment(bs->state, w->items[k - 1], right) : 0;
		if (best < 0 ||
			(in_window && !best_in_window) ||
			(in_window == best_in_window &&
			 (score > best_score || (score == best_score && dist < best_dist))))
		{
			best = k;
			best_in_window = in_window;
			best_score = score;
			best_dist = dist;
		}
	}
	if (best < 0)
		elog(ERROR, "forein: no leaf cut fits a page");

	right = best < w->nitems ? w->items[best] : itup;
	sep = forein_leaf_separator(bs->state, w->items[best - 1], right);
	ncarry = w->nitems - best;
	carry = palloc(sizeof(IndexTuple) * Max(ncarry, 1));
	for (i = 0; i < ncarry; i++)
	{
		carry[i] = CopyIndexTuple(w->items[best + i]);
		w->bytes -= item_cost(carry[i]);
	}
	w->nitems = best;
	level_flush(bs, w, sep, false);
	pfree(sep);
	for (i = 0; i < ncarry; i++)
	{
		level_append(w, carry[i]);
		pfree(carry[i]);
	}
	pfree(carry);
}

/*
 * Adds an item; closes the open page first when the item would take it past
 * its target.  The high key is the bound of the next page's first item,
 * which may be larger than the items the page was planned with: when it
 * does not fit, the page's last items move on to the next page.  Leaves
 * of an index with offload words are cut by leaf_cut instead, and every
 * leaf separator is forein_leaf_separator's.  An inner page takes at least two
 * children (its bounds and one downlink always fit), so every level above
 * the leaves has fewer pages than the one below.
 */
static void
level_add(BuildState *bs, LevelWriter *w, IndexTuple itup)
{
	Size		cost = item_cost(itup);
	Size		lo_cost = w->lokey ? item_cost(w->lokey) : item_cost(bs->placeholder);
	Size		hi_cost = bound_cost(w, itup);
	bool		aligned_cuts = w->level == 0 && bs->align_leaves;
	Size		limit = w->target;

	/* a leaf may fill past its target, for a better cut (leaf_cut) */
	if (aligned_cuts)
		limit = Min(w->target + FOREIN_CUT_SLACK(w->target), usable_space());
	if (w->nitems > (w->level > 0 ? 1 : 0) &&
		(w->bytes + cost + lo_cost + hi_cost > limit ||
		 w->nitems >= MaxIndexTuplesPerPage - 2))
	{
		IndexTuple *carry;
		int			ncarry = 0;
		IndexTuple	next = itup;
		IndexTuple	sep;
		int			i;

		if (aligned_cuts)
		{
			leaf_cut(bs, w, itup, lo_cost);
			level_append(w, itup);
			return;
		}
		carry = palloc(sizeof(IndexTuple) * w->nitems);
		while (w->nitems > 1 && w->bytes + lo_cost + bound_cost(w, next) > usable_space())
		{
			next = w->items[--w->nitems];
			w->bytes -= item_cost(next);
			carry[ncarry++] = CopyIndexTuple(next);
		}
		next = ncarry > 0 ? carry[ncarry - 1] : itup;
		sep = w->level == 0 ?
			forein_leaf_separator(bs->state, w->items[w->nitems - 1], next) :
			forein_make_bound(next);
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

/*
 * tuplesort's index sort is btree's own: it wants a btree relation and takes
 * each key column's sort support from rd_opfamily.  A forein opclass orders
 * by the same "<" operator as a btree opclass, so the sort gets a copy of
 * the index's relcache entry that names btree and, per key column, the btree
 * family of that operator: btree's comparators and abbreviated keys.  A
 * column whose operator is in no btree family keeps forein's family, whose
 * support proc 1 is the comparison the sort falls back to.  The copy shares
 * everything else (descriptor, indoption, collations) with the index.
 */
static void
init_sortrel(BuildState *bs)
{
	Relation	index = bs->index;
	int			i;

	bs->sortrel = *index;
	bs->sortclass = *index->rd_rel;
	bs->sortclass.relam = BTREE_AM_OID;
	bs->sortrel.rd_rel = &bs->sortclass;
	for (i = 0; i < bs->state->nkeys; i++)
	{
		Oid			opcintype = index->rd_opcintype[i];
		Oid			lt = get_opfamily_member(index->rd_opfamily[i], opcintype,
											 opcintype, BTLessStrategyNumber);
		Oid			family;
		Oid			optype;
		int16		strategy;

		bs->sortfamilies[i] = index->rd_opfamily[i];
		if (OidIsValid(lt) &&
			get_ordering_op_properties(lt, &family, &optype, &strategy) &&
			optype == opcintype && strategy == BTLessStrategyNumber)
			bs->sortfamilies[i] = family;
		/* the sort's scan key reads proc 1 through the shared cache */
		(void) index_getprocinfo(index, i + 1, FOREIN_CMP_PROC);
	}
	bs->sortrel.rd_opfamily = bs->sortfamilies;
}

/* Sorts by the key columns in index order, then by heap TID */
static void
begin_tuplesort(BuildState *bs)
{
	bs->sort = tuplesort_begin_index_btree(bs->heap, &bs->sortrel, bs->unique,
										   bs->index->rd_index->indnullsnotdistinct,
										   maintenance_work_mem, NULL,
										   TUPLESORT_NONE);
	/* as btree: dead tuples never count as duplicates, and are few */
	if (bs->unique)
		bs->deadsort = tuplesort_begin_index_btree(bs->heap, &bs->sortrel,
												   false, false, work_mem,
												   NULL, TUPLESORT_NONE);
}

static void
put_tuple(BuildState *bs, ItemPointer tid, Datum *values, bool *isnull,
		  bool alive)
{
	if (alive || bs->deadsort == NULL)
		tuplesort_putindextuplevalues(bs->sort, bs->index, tid, values, isnull);
	else
	{
		tuplesort_putindextuplevalues(bs->deadsort, bs->index, tid, values,
									  isnull);
		bs->havedead = true;
	}
}

/* A compact entry's key from a non-NULL key Datum (text: a plain value) */
static inline void
encode_entry(BuildState *bs, Datum value, SortEntry *e)
{
	if (bs->text)
	{
		struct varlena *v = (struct varlena *) DatumGetPointer(value);
		Size		size = VARSIZE_ANY(v);
		Size		pad = VARATT_IS_SHORT(v) ? 0 :
			INTALIGN((uintptr_t) bs->key_block) - (uintptr_t) bs->key_block;
		char	   *copy = bs->key_block + pad;

		Assert(pad + size <= bs->key_block_left);
		memcpy(copy, v, size);
		bs->key_block += pad + size;
		bs->key_block_left -= pad + size;
		e->hi = forein_word_bytes(VARDATA_ANY(v), VARSIZE_ANY_EXHDR(v));
		e->lo = (uint64) (uintptr_t) copy;
	}
	else if (bs->state->cols[0].kind == FOREIN_KEY_UUID)
	{
		const unsigned char *data = DatumGetUUIDP(value)->data;

		memcpy(&e->hi, data, sizeof(uint64));
		memcpy(&e->lo, data + sizeof(uint64), sizeof(uint64));
		e->hi = pg_ntoh64(e->hi);
		e->lo = pg_ntoh64(e->lo);
	}
	else
	{
		ForeinSearchKey key;

		forein_key_from_datum(bs->state, value, false, &key);
		e->hi = (uint64) key.vals[0].ival ^ INT_SIGN_FLIP;
		e->lo = 0;
	}
}

/* The key Datum of a non-NULL entry; a uuid's points into *uuid */
static inline Datum
decode_entry(BuildState *bs, const SortEntry *e, pg_uuid_t *uuid)
{
	uint64		w;

	if (bs->text)
		return PointerGetDatum(ENTRY_TEXT(e));
	if (bs->state->cols[0].kind == FOREIN_KEY_UUID)
	{
		w = pg_hton64(e->hi);
		memcpy(uuid->data, &w, sizeof(uint64));
		w = pg_hton64(e->lo);
		memcpy(uuid->data + sizeof(uint64), &w, sizeof(uint64));
		return UUIDPGetDatum(uuid);
	}
	return int_datum(bs->state->cols[0].typid, (int64) (e->hi ^ INT_SIGN_FLIP));
}

static inline int
compare_any_entries(BuildState *bs, const SortEntry *a, const SortEntry *b)
{
	return bs->text ? compare_text_entries(a, b) : compare_entries(a, b);
}

/*
 * Sorted, a batch's text values are read in random order: the value a few
 * entries after entry i starts loading now (a NULL's 0 is harmless to
 * prefetch).  A macro: GCC drops calls of a function that only prefetches.
 */
#ifdef __GNUC__
#define PREFETCH_VALUE(bs, i) \
	do { \
		if ((bs)->text && (i) + PREFETCH_DISTANCE < (bs)->nentries) \
			__builtin_prefetch(ENTRY_TEXT(&(bs)->entries[(i) + PREFETCH_DISTANCE])); \
	} while (0)
#else
#define PREFETCH_VALUE(bs, i) ((void) 0)
#endif

/* Sorts the full batch and writes it out as a run */
static void
write_run(BuildState *bs)
{
	EntryRun   *run;
	Size		i;

	if (bs->nruns == bs->runs_size)
	{
		bs->runs_size = Max(8, 2 * bs->runs_size);
		bs->runs = bs->runs ? repalloc(bs->runs, sizeof(EntryRun) * bs->runs_size) :
			palloc(sizeof(EntryRun) * bs->runs_size);
	}
	run = &bs->runs[bs->nruns++];
	memset(run, 0, sizeof(*run));
	run->file = BufFileCreateTemp(false);
	run->left = bs->nentries;
	if (!bs->text)
	{
		sort_entries(bs->entries, bs->nentries);
		BufFileWrite(run->file, bs->entries, bs->nentries * sizeof(SortEntry));
	}
	else
	{
		sort_text_entries(bs->entries, bs->nentries);
		for (i = 0; i < bs->nentries; i++)
		{
			SortEntry	e = bs->entries[i];
			struct varlena *v = e.isnull ? NULL : ENTRY_TEXT(&e);

			PREFETCH_VALUE(bs, i);

			e.lo = v ? VARSIZE_ANY(v) : 0;
			BufFileWrite(run->file, &e, sizeof(SortEntry));
			if (v)
				BufFileWrite(run->file, v, e.lo);
		}
		MemoryContextReset(bs->keycxt);
		bs->key_block = NULL;
		bs->key_block_left = 0;
		bs->key_bytes = 0;
	}
	bs->nentries = 0;
}

static void
read_run(EntryRun *run, void *ptr, Size size)
{
	if (BufFileRead(run->file, ptr, size) != size)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("forein: could not read a sorted run from a temporary file")));
}

/* Reads a run's next entry into its head; false at its end */
static bool
advance_run(BuildState *bs, EntryRun *run)
{
	if (--run->left == 0)
		return false;
	read_run(run, &run->head, sizeof(SortEntry));
	if (bs->text && !run->head.isnull)
	{
		Size		size = run->head.lo;

		if (size > run->value_size)
		{
			run->value_size = Max(size, 2 * run->value_size);
			run->value = run->value ? repalloc(run->value, run->value_size) :
				palloc(run->value_size);
		}
		read_run(run, run->value, size);
		run->head.lo = (uint64) (uintptr_t) run->value;
	}
	return true;
}

/* Rewinds a run to read it from its first entry with advance_run */
static void
rewind_run(EntryRun *run)
{
	if (BufFileSeek(run->file, 0, 0, SEEK_SET) != 0)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("forein: could not rewind a sorted run's temporary file")));
	run->left++;				/* advance_run counts the head it reads */
}

/* The merge's sources: runs 0..nruns-1, then the last batch (nruns) */
static inline const SortEntry *
source_head(BuildState *bs, int src)
{
	return src < bs->nruns ? &bs->runs[src].head : &bs->entries[bs->next];
}

/* binaryheap is a max-heap: the smallest head must compare highest */
static int
compare_sources(Datum a, Datum b, void *arg)
{
	BuildState *bs = (BuildState *) arg;

	return compare_any_entries(bs, source_head(bs, DatumGetInt32(b)),
							   source_head(bs, DatumGetInt32(a)));
}

/* Sorts the last batch; with runs written, sets up their merge */
static void
finish_entries(BuildState *bs)
{
	int			i;

	if (bs->text)
		sort_text_entries(bs->entries, bs->nentries);
	else
		sort_entries(bs->entries, bs->nentries);
	bs->next = 0;
	if (bs->nruns == 0)
		return;
	bs->merge = binaryheap_allocate(bs->nruns + 1, compare_sources, bs);
	for (i = 0; i < bs->nruns; i++)
	{
		rewind_run(&bs->runs[i]);
		if (advance_run(bs, &bs->runs[i]))
			binaryheap_add_unordered(bs->merge, Int32GetDatum(i));
	}
	if (bs->nentries > 0)
		binaryheap_add_unordered(bs->merge, Int32GetDatum(bs->nruns));
	binaryheap_build(bs->merge);
}

/* The next entry in sorted order, or NULL at the end */
static const SortEntry *
take_entry(BuildState *bs)
{
	int			src;
	bool		more;

	if (bs->merge == NULL)
	{
		PREFETCH_VALUE(bs, bs->next);
		return bs->next < bs->nentries ? &bs->entries[bs->next++] : NULL;
	}
	if (binaryheap_empty(bs->merge))
		return NULL;
	src = DatumGetInt32(binaryheap_first(bs->merge));
	bs->taken = *source_head(bs, src);
	if (src < bs->nruns)
	{
		/* the run's value buffer is its next head's */
		if (bs->text && !bs->taken.isnull)
		{
			Size		size = VARSIZE_ANY(ENTRY_TEXT(&bs->taken));

			if (size > bs->taken_value_size)
			{
				bs->taken_value_size = Max(size, 2 * bs->taken_value_size);
				bs->taken_value = bs->taken_value ?
					repalloc(bs->taken_value, bs->taken_value_size) :
					palloc(bs->taken_value_size);
			}
			memcpy(bs->taken_value, ENTRY_TEXT(&bs->taken), size);
			bs->taken.lo = (uint64) (uintptr_t) bs->taken_value;
		}
		more = advance_run(bs, &bs->runs[src]);
	}
	else
	{
		PREFETCH_VALUE(bs, bs->next);
		more = ++bs->next < bs->nentries;
	}
	if (more)
		binaryheap_replace_first(bs->merge, Int32GetDatum(src));
	else
		(void) binaryheap_remove_first(bs->merge);
	return &bs->taken;
}

static void
end_entries(BuildState *bs)
{
	int			i;

	for (i = 0; i < bs->nruns; i++)
		BufFileClose(bs->runs[i].file);
	bs->nruns = 0;
	if (bs->merge)
		binaryheap_free(bs->merge);
	pfree(bs->entries);
	bs->entries = NULL;
	if (bs->keycxt)
		MemoryContextDelete(bs->keycxt);
}

static void
put_entry(BuildState *bs, const SortEntry *e)
{
	pg_uuid_t	uuid;
	Datum		value = e->isnull ? (Datum) 0 : decode_entry(bs, e, &uuid);
	bool		isnull = e->isnull;

	put_tuple(bs, (ItemPointer) &e->tid, &value, &isnull, e->alive);
}

/*
 * A text value stored compressed or out of line: the entries move to the
 * tuplesort, which keeps such values as index_form_tuple does.
 */
static void
spill_entries(BuildState *bs)
{
	int			i;
	Size		j;

	begin_tuplesort(bs);
	for (i = 0; i < bs->nruns; i++)
	{
		rewind_run(&bs->runs[i]);
		while (advance_run(bs, &bs->runs[i]))
			put_entry(bs, &bs->runs[i].head);
	}
	for (j = 0; j < bs->nentries; j++)
		put_entry(bs, &bs->entries[j]);
	end_entries(bs);
}

/*
 * Makes room for one more entry and, for text, size more bytes of value:
 * grows the batch within the budget, else writes it out as a run.
 */
static void
reserve_entry(BuildState *bs, Size size)
{
	if (bs->nentries == bs->capacity)
	{
		Size		fit = (bs->budget - Min(bs->key_bytes, bs->budget)) / sizeof(SortEntry);
		Size		grown = Min(2 * bs->capacity, fit);

		if (grown > bs->capacity)
		{
			bs->capacity = grown;
			bs->entries = repalloc_huge(bs->entries, bs->capacity * sizeof(SortEntry));
		}
		else
			write_run(bs);
	}
	if (bs->text && size > bs->key_block_left)
	{
		Size		block = Max(KEY_BLOCK_SIZE, size);

		if (bs->nentries > 0 &&
			bs->capacity * sizeof(SortEntry) + bs->key_bytes + block > bs->budget)
			write_run(bs);
		bs->key_block = MemoryContextAllocHuge(bs->keycxt, block);
		bs->key_block_left = block;
		bs->key_bytes += block;
	}
}

static void
build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			   bool tupleIsAlive, void *arg)
{
	BuildState *bs = (BuildState *) arg;

	bs->indtuples += 1;
	if (bs->entries != NULL)
	{
		SortEntry  *e;
		Size		size = 0;

		if (bs->text && !isnull[0])
		{
			struct varlena *v = (struct varlena *) DatumGetPointer(values[0]);

			if (VARATT_IS_EXTERNAL(v) || VARATT_IS_COMPRESSED(v))
			{
				spill_entries(bs);
				put_tuple(bs, tid, values, isnull, tupleIsAlive);
				return;
			}
			/* a 4-byte header is aligned: at most 3 bytes before it */
			size = VARSIZE_ANY(v) + (VARATT_IS_SHORT(v) ? 0 : sizeof(int32) - 1);
		}
		reserve_entry(bs, size);
		e = &bs->entries[bs->nentries++];
		e->isnull = isnull[0];
		e->hi = e->lo = 0;
		if (!isnull[0])
			encode_entry(bs, values[0], e);
		e->tid = *tid;
		e->alive = tupleIsAlive;
		return;
	}
	put_tuple(bs, tid, values, isnull, tupleIsAlive);
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

/* Adds a run of identical keys as one leaf tuple */
static void
add_run(BuildState *bs, LevelWriter *w, IndexTuple run, ItemPointerData *tids,
		int n)
{
	IndexTuple	itup = n > 1 ? forein_form_posting(run, tids, n) : run;

	level_add(bs, w, itup);
	if (itup != run)
		pfree(itup);
}

/*
 * The compact sort's next entry as an index tuple, or NULL at the end.  A
 * non-NULL key is written into a tuple formed once (the keys are fixed-width,
 * so only the value differs); a NULL one is formed in tupcxt.  The tuple
 * stays valid until the next call.  A unique index's duplicates are found
 * here: among entries with one key at most one may be live.
 */
static IndexTuple
next_entry(BuildState *bs, IndexInfo *indexInfo, MemoryContext tupcxt,
		   IndexTuple *keytup, int *alive_in_run)
{
	const SortEntry *e;
	Datum		value = (Datum) 0;
	bool		isnull;
	pg_uuid_t	uuid;
	IndexTuple	itup;

	e = take_entry(bs);
	if (e == NULL)
		return NULL;
	isnull = e->isnull;
	if (!isnull)
		value = decode_entry(bs, e, &uuid);
	if (isnull || bs->text || *keytup == NULL)
	{
		MemoryContext old;

		MemoryContextReset(tupcxt);
		old = MemoryContextSwitchTo(tupcxt);
		itup = index_form_tuple(bs->state->tupdesc, &value, &isnull);
		MemoryContextSwitchTo(old);
		if (!isnull && !bs->text)
			*keytup = CopyIndexTuple(itup);
	}
	else
	{
		Form_pg_attribute att = TupleDescAttr(bs->state->tupdesc, 0);
		char	   *data;

		itup = *keytup;
		data = (char *) itup + IndexInfoFindDataOffset(itup->t_info);
		if (att->attbyval)
			store_att_byval(data, value, att->attlen);
		else
			memcpy(data, DatumGetPointer(value), att->attlen);
	}
	itup->t_tid = e->tid;

	if (bs->unique && (!isnull || indexInfo->ii_NullsNotDistinct))
	{
		if (bs->have_prev && bs->prev.isnull == e->isnull &&
			bs->prev.hi == e->hi && bs->prev.lo == e->lo)
		{
			*alive_in_run += e->alive ? 1 : 0;
			if (*alive_in_run > 1)
				report_duplicate(bs->heap, bs->index, itup);
		}
		else
			*alive_in_run = e->alive ? 1 : 0;
		bs->prev = *e;
		bs->have_prev = true;
	}
	return itup;
}

/* A unique index's live and dead tuples merged, each sort's head */
typedef struct SortMerge
{
	IndexTuple	live;
	IndexTuple	dead;
	Tuplesortstate *taken;		/* whose head was returned last; NULL: none */
} SortMerge;

/*
 * The tuplesort's next tuple in (key, TID) order, a unique index's dead
 * tuples merged in; NULL at the end.  A tuple returned by a sort stays
 * valid only until that sort's next call, so the head last returned is
 * replaced here, not when it is returned.
 */
static IndexTuple
next_sorted(BuildState *bs, SortMerge *m)
{
	if (!bs->havedead)
		return tuplesort_getindextuple(bs->sort, true);
	if (m->taken != bs->deadsort)
		m->live = tuplesort_getindextuple(bs->sort, true);
	if (m->taken != bs->sort)
		m->dead = tuplesort_getindextuple(bs->deadsort, true);
	if (m->dead == NULL ||
		(m->live != NULL && forein_compare_tuples(bs->state, m->live, m->dead) <= 0))
	{
		m->taken = bs->sort;
		return m->live;
	}
	m->taken = bs->deadsort;
	return m->dead;
}

/* Loads the sorted entries into leaves; returns the leaf level writer */
static void
load_leaves(BuildState *bs, IndexInfo *indexInfo, LevelWriter *w)
{
	bool		dedup = forein_index_dedup(bs->index);
	PGAlignedBlock runbuf;
	IndexTuple	run = NULL;		/* dedup: the open run's first tuple, copied
								 * to runbuf (the sort reuses its memory) */
	ItemPointerData *run_tids = palloc(sizeof(ItemPointerData) * FOREIN_MAX_TIDS_PER_PAGE);
	int			run_n = 0;
	int			run_max = 0;
	int			alive_in_run = 0;
	IndexTuple	keytup = NULL;	/* next_entry's non-NULL key tuple */
	int64		tuples_done = 0;
	SortMerge	merge = {0};
	MemoryContext tupcxt = AllocSetContextCreate(CurrentMemoryContext,
												 "forein build tuple",
												 ALLOCSET_DEFAULT_SIZES);

	for (;;)
	{
		IndexTuple	itup;

		if (bs->entries != NULL)
			itup = next_entry(bs, indexInfo, tupcxt, &keytup, &alive_in_run);
		else
			itup = next_sorted(bs, &merge);
		if (itup == NULL)
			break;
		if (IndexTupleSize(itup) > FOREIN_MAX_ITEM_SIZE)
			forein_check_item_size(bs->index, bs->heap, itup);
		pgstat_progress_update_param(PROGRESS_CREATEIDX_TUPLES_DONE, ++tuples_done);
		CHECK_FOR_INTERRUPTS();

		if (!dedup)
		{
			level_add(bs, w, itup);
			continue;
		}
		/* identical keys in a row become one posting tuple */
		if (run != NULL && forein_same_key_image(run, itup))
		{
			if (run_n == 1)
				run_max = forein_posting_max_tids(IndexTupleSize(run));
			if (run_n < run_max)
			{
				run_tids[run_n++] = itup->t_tid;
				continue;
			}
		}
		if (run != NULL)
			add_run(bs, w, run, run_tids, run_n);
		run = (IndexTuple) runbuf.data;
		memcpy(run, itup, IndexTupleSize(itup));
		run_tids[0] = itup->t_tid;
		run_n = 1;
	}
	if (run != NULL)
		add_run(bs, w, run, run_tids, run_n);
	pfree(run_tids);
	level_flush(bs, w, NULL, true);
	MemoryContextDelete(tupcxt);
	if (keytup)
		pfree(keytup);
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
	bs.heap = heap;
	bs.index = index;
	bs.state = state;
	bs.use_wal = RelationNeedsWAL(index);
	bs.unique = indexInfo->ii_Unique;
	bs.align_leaves = forein_index_align_leaves(index);
	bs.placeholder = forein_make_placeholder(state);

	init_sortrel(&bs);
	/* text compares by value here, so a unique index's (by hi, lo) is not */
	bs.text = state->cols[0].kind == FOREIN_KEY_GENERIC && !bs.unique &&
		forein_words_bytes_order(&state->words);
	if (state->natts == 1 && !state->cols[0].desc && !state->cols[0].nulls_first &&
		(state->cols[0].kind != FOREIN_KEY_GENERIC || bs.text))
	{
		/* sized for the row estimate (text: 32-byte values), so that the
		 * batch rarely grows */
		bs.budget = (Size) maintenance_work_mem * 1024;
		bs.capacity = Min(Max(1024, (Size) Max(heap->rd_rel->reltuples, 0) + 1),
						  bs.budget / (sizeof(SortEntry) + (bs.text ? 40 : 0)));
		bs.entries = MemoryContextAllocHuge(CurrentMemoryContext,
											bs.capacity * sizeof(SortEntry));
		if (bs.text)
			bs.keycxt = AllocSetContextCreate(CurrentMemoryContext,
											  "forein build keys",
											  ALLOCSET_DEFAULT_SIZES);
	}
	else
	{
		bs.text = false;
		begin_tuplesort(&bs);
	}

	/* btree's phases (its ambuildphasename names them) */
	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE,
								 PROGRESS_BTREE_PHASE_INDEXBUILD_TABLESCAN);
	reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
									   build_callback, &bs, NULL);
	{
		const int	progress_index[] = {
			PROGRESS_CREATEIDX_TUPLES_TOTAL,
			PROGRESS_SCAN_BLOCKS_TOTAL,
			PROGRESS_SCAN_BLOCKS_DONE
		};
		const int64 progress_vals[] = {bs.indtuples, 0, 0};

		pgstat_progress_update_multi_param(3, progress_index, progress_vals);
	}

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE,
								 PROGRESS_BTREE_PHASE_PERFORMSORT_1);
	if (bs.sort)
	{
		tuplesort_performsort(bs.sort);
		if (bs.havedead)
		{
			pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE,
										 PROGRESS_BTREE_PHASE_PERFORMSORT_2);
			tuplesort_performsort(bs.deadsort);
		}
	}
	else
		finish_entries(&bs);

	/* block 0 is the metapage; written again once the root is known */
	forein_init_metapage(metabuf.data, InvalidBlockNumber, 0,
						 forein_index_fillfactor(index));
	write_page(&bs, metabuf.data, bs.next_blkno++);

	pgstat_progress_update_param(PROGRESS_CREATEIDX_SUBPHASE,
								 PROGRESS_BTREE_PHASE_LEAF_LOAD);
	level_init(&leaves, 0, usable_space() * forein_index_fillfactor(index) / 100);
	load_leaves(&bs, indexInfo, &leaves);
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
		end_entries(&bs);
	if (bs.deadsort)
		tuplesort_end(bs.deadsort);
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
