/*-------------------------------------------------------------------------
 *
 * forein_check.c
 *	  forein_check(index regclass, heapallindexed boolean): verify the
 *	  structure of a forein index, like contrib/amcheck's bt_index_check.
 *
 * The check runs under AccessShareLock on the table and the index, so
 * inserts, page splits and VACUUM (including page deletion) may run at the
 * same time.  Like bt_index_check it holds one buffer lock at a time while
 * reading, verifies private copies of pages, and treats any cross-page
 * discrepancy only as a suspicion: before reporting, it looks again with
 * the locks that writers use (left sibling before right, child before
 * parent), so that a concurrent split or deletion is not taken for
 * corruption.  Page-local invariants need no re-check: a page copy taken
 * under a share lock is always self-consistent.
 *
 * Invariants verified:
 *	- metapage magic, version and root;
 *	- on every page: sane header and line pointers, items strictly ascending
 *	  by (key, heap TID), every item >= the low key (unless leftmost) and
 *	  < the high key (unless rightmost), an inner page's first child and
 *	  downlinks pointing at possible blocks;
 *	- on every level, walked left to right from the root down: right and
 *	  left links agree, a page's high key equals its right sibling's low
 *	  key, every page has the level's number, the leftmost page has no left
 *	  link and no page is reached twice;
 *	- between levels: the children of the downlinks, in order, are exactly
 *	  the pages of the level below (so every downlink's child is one level
 *	  down), and each child's low key equals its downlink's separator (the
 *	  first child's: the parent's low key; the first child of a leftmost
 *	  page is leftmost).  A page
 *	  without a downlink is accepted only when its left sibling is flagged
 *	  INCOMPLETE_SPLIT;
 *	- every live page of the relation is reachable from the root;
 *	- with heapallindexed, every heap tuple visible to a snapshot taken
 *	  before the leaf level was read has an index entry (key and heap TID),
 *	  using a Bloom filter of the leaf entries (so, like amcheck, a missing
 *	  entry is found with high probability, not with certainty).
 *
 * Portions Copyright (c) 2026, forein developers
 *
 * pg_extension/forein_check.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/transam.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_class.h"
#include "commands/defrem.h"
#include "common/pg_prng.h"
#include "fmgr.h"
#include "lib/bloomfilter.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "forein.h"

PG_FUNCTION_INFO_V1(forein_check);

/* State of one check */
typedef struct ForeinCheckState
{
	Relation	index;
	Relation	heap;
	ForeinState *fstate;
	TupleDesc	itupdesc;
	BlockNumber nblocks;		/* index length when the check started */
	BlockNumber nblocks_now;	/* latest length seen */
	BlockNumber root;			/* from the metapage at the start */
	uint32		root_level;
	uint8	   *visited;		/* bitmap: pages met on the level walks */
	BlockNumber visited_nbits;
	BufferAccessStrategy strategy;
	MemoryContext tmpcxt;		/* reset after every page */
	bool		heapallindexed;
	bloom_filter *filter;
	Snapshot	snapshot;
	StringInfoData fp;			/* fingerprint scratch buffer */
	int64		nleaftuples;
	int64		nheaptuples;
} ForeinCheckState;

/* A downlink seen on the parent level */
typedef struct ForeinCheckDownlink
{
	BlockNumber parent;
	OffsetNumber off;			/* on the parent, when read */
	BlockNumber child;
	IndexTuple	sep;			/* NULL: minus infinity */
} ForeinCheckDownlink;

/* The downlinks of one level, in key order */
typedef struct ForeinCheckLevel
{
	ForeinCheckDownlink *items;
	int			n;
	int			cap;
	HTAB	   *bychild;		/* child block -> index in items */
	MemoryContext cxt;
} ForeinCheckLevel;

typedef struct ForeinCheckChildEntry
{
	BlockNumber child;			/* hash key */
	int			idx;
} ForeinCheckChildEntry;

/* Where the walk of one level is (check_level) */
typedef struct ForeinCheckWalk
{
	uint32		level;
	ForeinCheckLevel *pl;		/* downlinks of the level above; NULL: root
								 * level */
	ForeinCheckLevel *out;		/* downlinks of this level; NULL: leaf level */
	BlockNumber prevblk;		/* the last live page met; invalid: none yet */
	Page		prev;			/* a copy of it; NULL: none yet */
	int			next;			/* the next downlink of pl to match */
} ForeinCheckWalk;

static void check_report(ForeinCheckState *cs, BlockNumber blkno,
						 const char *fmt,...) pg_attribute_printf(3, 4) pg_attribute_noreturn();
static void check_index_checkable(Relation indrel);
static void check_init_state(ForeinCheckState *cs, Relation heaprel,
							 Relation indrel, bool heapallindexed);
static void check_heap_begin(ForeinCheckState *cs);
static ForeinCheckLevel *check_level_create(void);
static void check_every_level(ForeinCheckState *cs);
static void check_heap_all_indexed(ForeinCheckState *cs);
static void check_metapage(ForeinCheckState *cs, BlockNumber *root,
						   uint32 *root_level);
static Page check_read_page(ForeinCheckState *cs, BlockNumber blkno);
static void check_copy_locked(Buffer buf, Page copy);
static bool check_block_exists(ForeinCheckState *cs, BlockNumber blkno);
static void check_page_special(ForeinCheckState *cs, Page page,
							   BlockNumber blkno);
static void check_page_header(ForeinCheckState *cs, Page page,
							  BlockNumber blkno);
static void check_page_items(ForeinCheckState *cs, Page page,
							 BlockNumber blkno);
static void check_level(ForeinCheckState *cs, BlockNumber leftmost,
						uint32 level, ForeinCheckLevel *pl,
						ForeinCheckLevel *out);
static Page check_walk_read(ForeinCheckState *cs, ForeinCheckWalk *walk,
							BlockNumber cur);
static void check_walk_links(ForeinCheckState *cs, ForeinCheckWalk *walk,
							 BlockNumber cur, Page page);
static void check_collect_downlinks(ForeinCheckState *cs,
									ForeinCheckLevel *out, BlockNumber cur,
									Page page);
static void check_fingerprint_leaf(ForeinCheckState *cs, Page page);
static void check_siblings(ForeinCheckState *cs, BlockNumber lblk, Page lpage,
						   BlockNumber rblk, Page rpage);
static void check_deleted_on_walk(ForeinCheckState *cs, BlockNumber blkno,
								  BlockNumber prevblk, ForeinCheckLevel *pl);
static void check_top_page(ForeinCheckState *cs, BlockNumber blkno, Page page,
						   BlockNumber prevblk);
static void check_match(ForeinCheckState *cs, ForeinCheckLevel *pl, int *next,
						BlockNumber blkno, Page page, uint32 level);
static void check_unmatched(ForeinCheckState *cs, ForeinCheckLevel *pl, int m,
							uint32 level);
static void check_child_linked(ForeinCheckState *cs, BlockNumber child,
							   uint32 level, BlockNumber startparent,
							   BlockNumber leftmostparent);
static bool check_find_downlink(ForeinCheckState *cs, BlockNumber start,
								BlockNumber child, BlockNumber *pblk,
								OffsetNumber *poff, IndexTuple *sep);
static void check_unreachable(ForeinCheckState *cs);
static bool check_descend_reaches(ForeinCheckState *cs, BlockNumber target,
								  uint32 level, IndexTuple lokey);
static void check_fingerprint(ForeinCheckState *cs, ItemPointer tid,
							  Datum *values, bool *isnull);
static void check_heap_callback(Relation index, ItemPointer tid,
								Datum *values, bool *isnull,
								bool tupleIsAlive, void *state);

#define ITEM(page, off) ((IndexTuple) PageGetItem((page), PageGetItemId((page), (off))))

/* A copy of the separator at position off; NULL: minus infinity */
static IndexTuple
check_sep_at(Page page, OffsetNumber off)
{
	if (off == FOREIN_FIRST_CHILD && ForeinPageIsLeftmost(page))
		return NULL;
	return CopyIndexTuple(ITEM(page, off));
}

static inline bool
check_is_visited(ForeinCheckState *cs, BlockNumber blkno)
{
	return blkno < cs->visited_nbits &&
		(cs->visited[blkno / 8] & (1 << (blkno % 8))) != 0;
}

static void
check_set_visited(ForeinCheckState *cs, BlockNumber blkno)
{
	if (blkno >= cs->visited_nbits)
	{
		/* a page added by a concurrent split */
		Size		oldbytes = (cs->visited_nbits + 7) / 8;
		BlockNumber nbits = Max(blkno + 1, cs->visited_nbits * 2);
		Size		newbytes = (nbits + 7) / 8;

		cs->visited = repalloc(cs->visited, newbytes);
		memset(cs->visited + oldbytes, 0, newbytes - oldbytes);
		cs->visited_nbits = nbits;
	}
	cs->visited[blkno / 8] |= (uint8) (1 << (blkno % 8));
}

Datum
forein_check(PG_FUNCTION_ARGS)
{
	Oid			indrelid = PG_GETARG_OID(0);
	bool		heapallindexed = PG_GETARG_BOOL(1);
	ForeinCheckState cs;
	Oid			heapid;
	Relation	heaprel;
	Relation	indrel;
	Oid			save_userid;
	int			save_sec_context;
	int			save_nestlevel;

	/*
	 * Reading the index (and, with heapallindexed, the whole table) needs
	 * SELECT on the table, checked before any lock.  Then lock the table
	 * before the index, as every other path does, to avoid deadlocks, and
	 * make sure the index still belongs to that table.
	 */
	heapid = forein_check_table_privilege(indrelid, FOREIN_PRIV_SELECT);
	heaprel = table_open(heapid, AccessShareLock);

	/*
	 * heapallindexed evaluates index expressions and predicates: run them
	 * as the table owner, in a restricted context, like amcheck.
	 */
	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(heaprel->rd_rel->relowner,
						   save_sec_context | SECURITY_RESTRICTED_OPERATION);
	save_nestlevel = NewGUCNestLevel();

	indrel = index_open(indrelid, AccessShareLock);
	if (heapid != IndexGetRelation(indrelid, false))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("could not open parent table of index \"%s\"",
						RelationGetRelationName(indrel))));

	/*
	 * A partitioned index has no pages: check the index of every leaf
	 * partition, each as if called for it (its own privilege check, locks
	 * and security context).
	 */
	if (indrel->rd_rel->relkind == RELKIND_PARTITIONED_INDEX &&
		indrel->rd_indam != NULL &&
		indrel->rd_indam->amvacuumcleanup == forein_vacuumcleanup)
	{
		List	   *leaves = forein_partition_indexes(indrelid);
		ListCell   *lc;

		AtEOXact_GUC(false, save_nestlevel);
		SetUserIdAndSecContext(save_userid, save_sec_context);
		index_close(indrel, NoLock);
		table_close(heaprel, NoLock);
		foreach(lc, leaves)
			DirectFunctionCall2(forein_check, ObjectIdGetDatum(lfirst_oid(lc)),
								BoolGetDatum(heapallindexed));
		PG_RETURN_VOID();
	}
	check_index_checkable(indrel);

	check_init_state(&cs, heaprel, indrel, heapallindexed);
	if (cs.nblocks == 0)
		check_report(&cs, FOREIN_METAPAGE_BLKNO, "The index has no metapage.");
	if (heapallindexed)
		check_heap_begin(&cs);

	check_metapage(&cs, &cs.root, &cs.root_level);
	check_every_level(&cs);
	check_unreachable(&cs);

	if (heapallindexed)
		check_heap_all_indexed(&cs);

	FreeAccessStrategy(cs.strategy);
	MemoryContextDelete(cs.tmpcxt);

	AtEOXact_GUC(false, save_nestlevel);
	SetUserIdAndSecContext(save_userid, save_sec_context);

	index_close(indrel, AccessShareLock);
	table_close(heaprel, AccessShareLock);

	PG_RETURN_VOID();
}

/*
 * Refuse an index that this check cannot read, as amcheck's
 * btree_index_checkable: not a forein index, an index on another
 * session's temporary table, or an index not yet valid.
 */
static void
check_index_checkable(Relation indrel)
{
	if (indrel->rd_rel->relkind != RELKIND_INDEX ||
		indrel->rd_indam == NULL ||
		indrel->rd_indam->amvacuumcleanup != forein_vacuumcleanup)
	{
		char	   *amname = get_am_name(indrel->rd_rel->relam);

		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a forein index",
						RelationGetRelationName(indrel)),
				 amname ? errdetail("It uses access method \"%s\".", amname) : 0));
	}
	if (RELATION_IS_OTHER_TEMP(indrel))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot access temporary tables of other sessions"),
				 errdetail("Index \"%s\" is associated with temporary relation.",
						   RelationGetRelationName(indrel))));
	if (!indrel->rd_index->indisvalid)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot check index \"%s\"",
						RelationGetRelationName(indrel)),
				 errdetail("Index is not valid.")));
}

/*
 * Set up the state of one check.  The index length read here bounds the
 * pages that must be reachable (check_unreachable); pages added later by
 * concurrent splits only grow the visited bitmap.
 */
static void
check_init_state(ForeinCheckState *cs, Relation heaprel, Relation indrel,
				 bool heapallindexed)
{
	memset(cs, 0, sizeof(*cs));
	cs->index = indrel;
	cs->heap = heaprel;
	cs->fstate = forein_get_state(indrel);
	cs->itupdesc = RelationGetDescr(indrel);
	cs->nblocks = RelationGetNumberOfBlocks(indrel);
	cs->nblocks_now = cs->nblocks;
	cs->visited_nbits = Max(cs->nblocks, 1);
	cs->visited = palloc0((cs->visited_nbits + 7) / 8);
	cs->strategy = GetAccessStrategy(BAS_BULKREAD);
	cs->tmpcxt = AllocSetContextCreate(CurrentMemoryContext,
									   "forein_check page",
									   ALLOCSET_DEFAULT_SIZES);
	cs->heapallindexed = heapallindexed;
	initStringInfo(&cs->fp);
}

/*
 * heapallindexed, before any leaf is read: register the snapshot the heap
 * scan will use and create the Bloom filter the leaf entries go into.
 */
static void
check_heap_begin(ForeinCheckState *cs)
{
	Relation	indrel = cs->index;
	int64		total_elems;

	/*
	 * Take the snapshot before reading the leaves: every tuple visible to
	 * it was indexed before, and VACUUM cannot remove its entry while we
	 * hold the snapshot.
	 */
	cs->snapshot = RegisterSnapshot(GetTransactionSnapshot());
	if (IsolationUsesXactSnapshot() && indrel->rd_index->indcheckxmin &&
		!TransactionIdPrecedes(HeapTupleHeaderGetXmin(indrel->rd_indextuple->t_data),
							   cs->snapshot->xmin))
		ereport(ERROR,
				(errcode(ERRCODE_T_R_SERIALIZATION_FAILURE),
				 errmsg("index \"%s\" cannot be verified using transaction snapshot",
						RelationGetRelationName(indrel))));

	total_elems = Max((int64) cs->nblocks * (MaxIndexTuplesPerPage / 3),
					  (int64) indrel->rd_rel->reltuples);
	cs->filter = bloom_create(total_elems, maintenance_work_mem,
							  pg_prng_uint64(&pg_global_prng_state));
}

/* An empty list of downlinks, in a memory context of its own */
static ForeinCheckLevel *
check_level_create(void)
{
	ForeinCheckLevel *out;
	HASHCTL		ctl;

	out = palloc0(sizeof(ForeinCheckLevel));
	out->cxt = AllocSetContextCreate(CurrentMemoryContext,
									 "forein_check level",
									 ALLOCSET_DEFAULT_SIZES);
	out->cap = 64;
	out->items = MemoryContextAlloc(out->cxt,
									sizeof(ForeinCheckDownlink) * out->cap);
	ctl.keysize = sizeof(BlockNumber);
	ctl.entrysize = sizeof(ForeinCheckChildEntry);
	ctl.hcxt = out->cxt;
	out->bychild = hash_create("forein_check downlinks", 1024, &ctl,
							   HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	return out;
}

/*
 * Walk the levels from the root down, as amcheck's bt_check_every_level.
 * The walk of an inner level collects its downlinks, which the walk of the
 * level below matches with its pages; only two levels' lists are kept.
 */
static void
check_every_level(ForeinCheckState *cs)
{
	BlockNumber leftmost = cs->root;
	uint32		level = cs->root_level;
	ForeinCheckLevel *pl = NULL;

	for (;;)
	{
		ForeinCheckLevel *out = NULL;

		if (level > 0)
			out = check_level_create();

		check_level(cs, leftmost, level, pl, out);

		if (pl)
		{
			MemoryContextDelete(pl->cxt);
			pfree(pl);
		}
		pl = out;
		if (level == 0)
			break;
		/* Every inner page has a first child, so the walk found one */
		leftmost = pl->items[0].child;
		level--;
	}
}

/*
 * heapallindexed, once the structure is verified: scan the heap with the
 * snapshot taken before the leaves were read, and look every visible
 * tuple up in the Bloom filter (check_heap_callback).  Frees the filter
 * and unregisters the snapshot.
 */
static void
check_heap_all_indexed(ForeinCheckState *cs)
{
	Relation	heaprel = cs->heap;
	Relation	indrel = cs->index;
	IndexInfo  *indexinfo = BuildIndexInfo(indrel);
	TableScanDesc scan;

	/* Visible tuples only (an MVCC scan); no uniqueness work */
	indexinfo->ii_Concurrent = true;
	indexinfo->ii_Unique = false;
	indexinfo->ii_ExclusionOps = NULL;
	indexinfo->ii_ExclusionProcs = NULL;
	indexinfo->ii_ExclusionStrats = NULL;

	scan = table_beginscan_strat(heaprel, cs->snapshot, 0, NULL,
								 true, true);
	/* table_index_build_scan ends the scan */
	table_index_build_scan(heaprel, indrel, indexinfo, true, false,
						   check_heap_callback, cs, scan);

	ereport(DEBUG1,
			(errmsg_internal("forein_check: %lld heap tuples found in \"%s\" among %lld leaf entries",
							 (long long) cs->nheaptuples,
							 RelationGetRelationName(indrel),
							 (long long) cs->nleaftuples)));

	bloom_free(cs->filter);
	UnregisterSnapshot(cs->snapshot);
}

/* Raise ERRCODE_INDEX_CORRUPTED naming the index and the block */
static void
check_report(ForeinCheckState *cs, BlockNumber blkno, const char *fmt,...)
{
	StringInfoData buf;

	initStringInfo(&buf);
	for (;;)
	{
		va_list		args;
		int			needed;

		va_start(args, fmt);
		needed = appendStringInfoVA(&buf, fmt, args);
		va_end(args);
		if (needed == 0)
			break;
		enlargeStringInfo(&buf, needed);
	}

	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("index \"%s\" is corrupted at block %u",
					RelationGetRelationName(cs->index), blkno),
			 errdetail_internal("%s", buf.data)));
	pg_unreachable();
}

/* Does the block exist?  The index may have grown since we looked. */
static bool
check_block_exists(ForeinCheckState *cs, BlockNumber blkno)
{
	if (blkno == InvalidBlockNumber)
		return false;
	if (blkno < cs->nblocks_now)
		return true;
	cs->nblocks_now = RelationGetNumberOfBlocks(cs->index);
	return blkno < cs->nblocks_now;
}

static void
check_copy_locked(Buffer buf, Page copy)
{
	memcpy(copy, BufferGetPage(buf), BLCKSZ);
}

/* A private copy of a page, read under a share lock held only meanwhile */
static Page
check_read_page(ForeinCheckState *cs, BlockNumber blkno)
{
	Buffer		buf;
	Page		page = palloc(BLCKSZ);

	CHECK_FOR_INTERRUPTS();
	buf = ReadBufferExtended(cs->index, MAIN_FORKNUM, blkno, RBM_NORMAL,
							 cs->strategy);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	check_copy_locked(buf, page);
	UnlockReleaseBuffer(buf);
	return page;
}

static void
check_metapage(ForeinCheckState *cs, BlockNumber *root, uint32 *root_level)
{
	Page		page = check_read_page(cs, FOREIN_METAPAGE_BLKNO);
	ForeinMetaPageData *meta;

	if (PageIsNew(page))
		check_report(cs, FOREIN_METAPAGE_BLKNO, "The metapage is all zeroes.");
	meta = ForeinPageGetMeta(page);
	if (meta->magic != FOREIN_MAGIC)
		check_report(cs, FOREIN_METAPAGE_BLKNO,
					 "Metapage magic number is 0x%08X, expected 0x%08X.",
					 meta->magic, FOREIN_MAGIC);
	/* another format version: the error every other path gives */
	if (meta->version != FOREIN_VERSION)
		forein_verify_metapage(cs->index, page);
	if (meta->root == FOREIN_METAPAGE_BLKNO ||
		!check_block_exists(cs, meta->root))
		check_report(cs, FOREIN_METAPAGE_BLKNO,
					 "Metapage root block %u is not a block of the index (%u blocks).",
					 meta->root, cs->nblocks_now);
	if (meta->root_level >= 64)
		check_report(cs, FOREIN_METAPAGE_BLKNO,
					 "Metapage root level %u is implausible.", meta->root_level);
	*root = meta->root;
	*root_level = meta->root_level;
	pfree(page);
}

/* Header and special space: what must hold before the opaque is read */
static void
check_page_special(ForeinCheckState *cs, Page page, BlockNumber blkno)
{
	PageHeader	phdr = (PageHeader) page;
	ForeinPageOpaque opaque;

	if (PageGetSpecialSize(page) != MAXALIGN(sizeof(ForeinPageOpaqueData)))
		check_report(cs, blkno, "Special space is %d bytes, expected %d.",
					 (int) PageGetSpecialSize(page),
					 (int) MAXALIGN(sizeof(ForeinPageOpaqueData)));
	opaque = ForeinPageGetOpaque(page);
	if (opaque->page_id != FOREIN_PAGE_ID)
		check_report(cs, blkno, "Page id is 0x%04X, expected 0x%04X.",
					 opaque->page_id, FOREIN_PAGE_ID);
	if (phdr->pd_lower < SizeOfPageHeaderData ||
		phdr->pd_lower > phdr->pd_upper ||
		phdr->pd_upper > phdr->pd_special)
		check_report(cs, blkno, "Page header is inconsistent (lower %u, upper %u, special %u).",
					 phdr->pd_lower, phdr->pd_upper, phdr->pd_special);
	if (opaque->flags & FOREIN_META)
		check_report(cs, blkno, "A page other than block 0 is flagged as the metapage.");
}

/* Header, special space and line pointers, before any tuple is touched */
static void
check_page_header(ForeinCheckState *cs, Page page, BlockNumber blkno)
{
	PageHeader	phdr = (PageHeader) page;
	ForeinPageOpaque opaque;
	OffsetNumber maxoff;
	OffsetNumber off;

	check_page_special(cs, page, blkno);
	opaque = ForeinPageGetOpaque(page);
	if (opaque->flags & FOREIN_DELETED)
		return;					/* contents of deleted pages do not matter */

	maxoff = PageGetMaxOffsetNumber(page);
	if (maxoff < FOREIN_LOKEY)
		check_report(cs, blkno, "Page has %u line pointers; the high and low keys need 2.",
					 maxoff);
	for (off = FirstOffsetNumber; off <= maxoff; off = OffsetNumberNext(off))
	{
		ItemId		iid = PageGetItemId(page, off);
		IndexTuple	itup;
		Size		minsize = sizeof(IndexTupleData);

		/* a scan may mark a leaf entry of dead heap tuples LP_DEAD (a hint) */
		if (!ItemIdIsNormal(iid) &&
			!(ItemIdIsDead(iid) && ItemIdHasStorage(iid) && opaque->level == 0 &&
			  off >= FOREIN_FIRST_ITEM))
			check_report(cs, blkno, "Line pointer %u is not in normal use (flags %u).",
						 off, ItemIdGetFlags(iid));
		if (ItemIdGetOffset(iid) < phdr->pd_upper ||
			ItemIdGetOffset(iid) + ItemIdGetLength(iid) > phdr->pd_special ||
			ItemIdGetLength(iid) < sizeof(IndexTupleData))
			check_report(cs, blkno, "Line pointer %u (offset %u, length %u) lies outside the tuple space.",
						 off, ItemIdGetOffset(iid), ItemIdGetLength(iid));
		itup = (IndexTuple) PageGetItem(page, iid);
		if (opaque->level > 0 && off >= FOREIN_FIRST_ITEM)
		{
			minsize += sizeof(BlockNumber);
			if ((itup->t_info & FOREIN_DOWNLINK_BIT) == 0)
				check_report(cs, blkno, "Item at offset %u of an inner page is not flagged as a downlink.",
							 off);
		}
		else if ((itup->t_info & FOREIN_DOWNLINK_BIT) && off < FOREIN_FIRST_ITEM)
			check_report(cs, blkno, "Bound at offset %u is flagged as a downlink or posting list.",
						 off);
		/* on a leaf item the bit marks a posting list: check_posting */
		if (IndexTupleSize(itup) > ItemIdGetLength(iid) ||
			IndexTupleSize(itup) < minsize)
			check_report(cs, blkno, "Tuple at offset %u has size %u, its line pointer %u.",
						 off, (unsigned) IndexTupleSize(itup), ItemIdGetLength(iid));
	}
}

/* Page-local invariants of a live page (a private copy) */
/*
 * Compares the last (key, TID) position of a - its last posting TID on a
 * leaf - with b.
 */
static int
compare_after(ForeinCheckState *cs, IndexTuple a, IndexTuple b, bool leaf)
{
	ForeinSearchKey key;

	forein_key_from_tuple(cs->fstate, a, &key);
	if (leaf)
		key.tid = *forein_posting_last_tid(a);
	return forein_compare(cs->fstate, &key, b);
}

/* A posting tuple: valid, strictly ascending TIDs, the first in t_tid */
static void
check_posting(ForeinCheckState *cs, BlockNumber blkno, OffsetNumber off,
			  IndexTuple itup)
{
	int			n = forein_posting_count(itup);
	int			k;

	if (!ItemPointerEquals(&itup->t_tid, forein_posting_tid(itup, 0)))
		check_report(cs, blkno, "Posting tuple at offset %u does not start at its heap TID (%u,%u).",
					 off, ItemPointerGetBlockNumberNoCheck(&itup->t_tid),
					 ItemPointerGetOffsetNumberNoCheck(&itup->t_tid));
	for (k = 0; k < n; k++)
	{
		ItemPointer tid = forein_posting_tid(itup, k);

		if (!ItemPointerIsValid(tid))
			check_report(cs, blkno, "Posting tuple at offset %u has an invalid heap TID at position %d.",
						 off, k);
		if (k > 0 && ItemPointerCompare(forein_posting_tid(itup, k - 1), tid) >= 0)
			check_report(cs, blkno, "Posting tuple at offset %u: heap TID (%u,%u) at position %d does not ascend.",
						 off, ItemPointerGetBlockNumberNoCheck(tid),
						 ItemPointerGetOffsetNumberNoCheck(tid), k);
	}
}

static void
check_page_items(ForeinCheckState *cs, Page page, BlockNumber blkno)
{
	ForeinPageOpaque opaque = ForeinPageGetOpaque(page);
	OffsetNumber maxoff = PageGetMaxOffsetNumber(page);
	bool		leftmost = ForeinPageIsLeftmost(page);
	bool		rightmost = ForeinPageIsRightmost(page);
	bool		inner = opaque->level > 0;
	IndexTuple	hikey = ITEM(page, FOREIN_HIKEY);
	IndexTuple	lokey = ITEM(page, FOREIN_LOKEY);
	IndexTuple	prev = NULL;
	OffsetNumber prevoff = InvalidOffsetNumber;
	OffsetNumber off;
	MemoryContext oldcxt = MemoryContextSwitchTo(cs->tmpcxt);

	if (!leftmost && !rightmost &&
		forein_compare_tuples(cs->fstate, lokey, hikey) >= 0)
		check_report(cs, blkno, "The low key (tid %u,%u) is not below the high key (tid %u,%u).",
					 ItemPointerGetBlockNumberNoCheck(&lokey->t_tid),
					 ItemPointerGetOffsetNumberNoCheck(&lokey->t_tid),
					 ItemPointerGetBlockNumberNoCheck(&hikey->t_tid),
					 ItemPointerGetOffsetNumberNoCheck(&hikey->t_tid));

	if (!inner && opaque->first_child != InvalidBlockNumber)
		check_report(cs, blkno, "Leaf page has first child %u.",
					 opaque->first_child);

	for (off = inner ? FOREIN_FIRST_CHILD : FOREIN_FIRST_ITEM; off <= maxoff;
		 off = OffsetNumberNext(off))
	{
		IndexTuple	itup = ITEM(page, off);

		if (inner)
		{
			BlockNumber child = forein_inner_child(page, off);

			if (child == FOREIN_METAPAGE_BLKNO || child == blkno ||
				!check_block_exists(cs, child))
				check_report(cs, blkno, "Downlink at offset %u points to block %u, which cannot be a child (index has %u blocks).",
							 off, child, cs->nblocks_now);
			if (off == FOREIN_FIRST_CHILD)
				continue;		/* the first child's separator is the low key */
		}
		else if (!ItemPointerIsValid(&itup->t_tid))
			check_report(cs, blkno, "Item at offset %u has an invalid heap TID.",
						 off);
		else if (ForeinTupleIsPosting(itup))
			check_posting(cs, blkno, off, itup);

		if (prev != NULL &&
			compare_after(cs, prev, itup, !inner) >= 0)
			check_report(cs, blkno, "Item at offset %u (tid %u,%u) is not above the item at offset %u (tid %u,%u).",
						 off,
						 ItemPointerGetBlockNumberNoCheck(&itup->t_tid),
						 ItemPointerGetOffsetNumberNoCheck(&itup->t_tid),
						 prevoff,
						 ItemPointerGetBlockNumberNoCheck(&prev->t_tid),
						 ItemPointerGetOffsetNumberNoCheck(&prev->t_tid));
		if (!leftmost && prev == NULL &&
			forein_compare_tuples(cs->fstate, itup, lokey) < 0)
			check_report(cs, blkno, "Item at offset %u (tid %u,%u) is below the page's low key (tid %u,%u).",
						 off,
						 ItemPointerGetBlockNumberNoCheck(&itup->t_tid),
						 ItemPointerGetOffsetNumberNoCheck(&itup->t_tid),
						 ItemPointerGetBlockNumberNoCheck(&lokey->t_tid),
						 ItemPointerGetOffsetNumberNoCheck(&lokey->t_tid));
		prev = itup;
		prevoff = off;
	}

	/* Items ascend, so the last one bounds them all */
	if (!rightmost && prev != NULL &&
		compare_after(cs, prev, hikey, !inner) >= 0)
		check_report(cs, blkno, "Item at offset %u (tid %u,%u) is not below the page's high key (tid %u,%u).",
					 prevoff,
					 ItemPointerGetBlockNumberNoCheck(&prev->t_tid),
					 ItemPointerGetOffsetNumberNoCheck(&prev->t_tid),
					 ItemPointerGetBlockNumberNoCheck(&hikey->t_tid),
					 ItemPointerGetOffsetNumberNoCheck(&hikey->t_tid));

	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(cs->tmpcxt);
}

/*
 * Walk one level left to right.  pl holds the downlinks of the level above
 * (NULL for the root level); the downlinks of this level go to out.
 */
static void
check_level(ForeinCheckState *cs, BlockNumber leftmost, uint32 level,
			ForeinCheckLevel *pl, ForeinCheckLevel *out)
{
	ForeinCheckWalk walk;
	BlockNumber cur = leftmost;

	walk.level = level;
	walk.pl = pl;
	walk.out = out;
	walk.prevblk = InvalidBlockNumber;
	walk.prev = NULL;
	walk.next = 0;

	while (cur != InvalidBlockNumber)
	{
		Page		page;
		ForeinPageOpaque opaque;

		page = check_walk_read(cs, &walk, cur);
		opaque = ForeinPageGetOpaque(page);

		if (opaque->flags & FOREIN_DELETED)
		{
			/* Deleted pages keep their right link; follow it */
			check_deleted_on_walk(cs, cur, walk.prevblk, pl);
			cur = opaque->right;
			pfree(page);
			continue;
		}

		check_page_items(cs, page, cur);
		check_walk_links(cs, &walk, cur, page);

		if (level > 0)
			check_collect_downlinks(cs, out, cur, page);
		else if (cs->heapallindexed)
			check_fingerprint_leaf(cs, page);

		if (walk.prev)
			pfree(walk.prev);
		walk.prev = page;
		walk.prevblk = cur;
		cur = opaque->right;
	}

	if (walk.prev == NULL)
		check_report(cs, leftmost, "Level %u has no live page.", level);
	pfree(walk.prev);

	/* Downlinks whose children the walk did not meet */
	if (pl != NULL)
	{
		for (; walk.next < pl->n; walk.next++)
			check_unmatched(cs, pl, walk.next, level);
	}
}

/*
 * The page a level walk's link led to, as a private copy: it must exist,
 * be met for the first time, and be a page of this level with a sane
 * header and line pointers.  Marks it visited.
 */
static Page
check_walk_read(ForeinCheckState *cs, ForeinCheckWalk *walk, BlockNumber cur)
{
	Page		page;
	ForeinPageOpaque opaque;

	if (!check_block_exists(cs, cur))
		check_report(cs, BlockNumberIsValid(walk->prevblk) ? walk->prevblk : cur,
					 "Link to block %u at level %u points past the end of the index (%u blocks).",
					 cur, walk->level, cs->nblocks_now);
	if (check_is_visited(cs, cur))
		check_report(cs, cur,
					 "Block %u is reached twice (sibling link cycle, or shared by two levels) while walking level %u.",
					 cur, walk->level);
	check_set_visited(cs, cur);

	page = check_read_page(cs, cur);
	if (PageIsNew(page))
		check_report(cs, cur, "Block %u is all zeroes but is linked into level %u.",
					 cur, walk->level);
	check_page_special(cs, page, cur);
	opaque = ForeinPageGetOpaque(page);
	if (opaque->level != walk->level)
		check_report(cs, cur, "Page has level %u but is linked into level %u.",
					 opaque->level, walk->level);
	check_page_header(cs, page, cur);
	return page;
}

/*
 * The links of a live page met on a level walk: with its left sibling (the
 * previous live page of the walk), and from the level above (the next
 * downlink, or, on the root level, the metapage).
 */
static void
check_walk_links(ForeinCheckState *cs, ForeinCheckWalk *walk, BlockNumber cur,
				 Page page)
{
	ForeinPageOpaque opaque = ForeinPageGetOpaque(page);

	if (walk->prev == NULL)
	{
		/* The leftmost page of a level never gains a left sibling */
		if (!ForeinPageIsLeftmost(page))
			check_report(cs, cur, "The first page of level %u has left link %u.",
						 walk->level, opaque->left);
	}
	else
		check_siblings(cs, walk->prevblk, walk->prev, cur, page);

	if (walk->pl == NULL)
		check_top_page(cs, cur, page, walk->prevblk);
	else
	{
		check_match(cs, walk->pl, &walk->next, cur, page, walk->level);
		if (opaque->flags & FOREIN_ROOT)
		{
			BlockNumber root;
			uint32		root_level;

			check_metapage(cs, &root, &root_level);
			if (root != cur)
				check_report(cs, cur, "Page at level %u is flagged as the root, but the root is block %u.",
							 walk->level, root);
		}
	}
}

/*
 * Append the downlinks of a live inner page to out, for the walk of the
 * level below, and refuse a child that has two of them.
 */
static void
check_collect_downlinks(ForeinCheckState *cs, ForeinCheckLevel *out,
						BlockNumber cur, Page page)
{
	OffsetNumber maxoff = PageGetMaxOffsetNumber(page);
	OffsetNumber off;
	MemoryContext oldcxt = MemoryContextSwitchTo(out->cxt);

	for (off = FOREIN_FIRST_CHILD; off <= maxoff; off = OffsetNumberNext(off))
	{
		ForeinCheckDownlink *dl;
		ForeinCheckChildEntry *entry;
		bool		found;

		if (out->n == out->cap)
		{
			out->cap *= 2;
			out->items = repalloc(out->items,
								  sizeof(ForeinCheckDownlink) * out->cap);
		}
		dl = &out->items[out->n];
		dl->parent = cur;
		dl->off = off;
		dl->child = forein_inner_child(page, off);
		dl->sep = check_sep_at(page, off);

		/*
		 * Two downlinks to one child cannot come from concurrent activity:
		 * a walk by right links never sees an item twice.
		 */
		entry = hash_search(out->bychild, &dl->child, HASH_ENTER, &found);
		if (found)
			check_report(cs, cur, "Downlink at offset %u points to block %u, as does the downlink at offset %u of block %u.",
						 off, dl->child, out->items[entry->idx].off,
						 out->items[entry->idx].parent);
		entry->idx = out->n;
		out->n++;
	}
	MemoryContextSwitchTo(oldcxt);
}

/*
 * heapallindexed: add every (heap TID, key) of a live leaf to the Bloom
 * filter, each TID of a posting list on its own, as the heap scan will
 * look them up.
 */
static void
check_fingerprint_leaf(ForeinCheckState *cs, Page page)
{
	OffsetNumber maxoff = PageGetMaxOffsetNumber(page);
	OffsetNumber off;
	MemoryContext oldcxt = MemoryContextSwitchTo(cs->tmpcxt);

	for (off = FOREIN_FIRST_ITEM; off <= maxoff; off = OffsetNumberNext(off))
	{
		IndexTuple	itup = ITEM(page, off);
		Datum		values[INDEX_MAX_KEYS];
		bool		isnull[INDEX_MAX_KEYS];
		int			k;

		index_deform_tuple(itup, cs->itupdesc, values, isnull);
		for (k = 0; k < forein_posting_count(itup); k++)
		{
			check_fingerprint(cs, forein_posting_tid(itup, k), values, isnull);
			bloom_add_element(cs->filter, (unsigned char *) cs->fp.data,
							  cs->fp.len);
			cs->nleaftuples++;
		}
	}
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(cs->tmpcxt);
}

/*
 * lblk's right link led to rblk.  Their links must agree and the key space
 * must be split exactly: lblk's high key equals rblk's low key.  On a
 * mismatch, look again holding both locks (left to right); a split or
 * deletion in between shows up as a changed right link or a deleted page.
 */
static void
check_siblings(ForeinCheckState *cs, BlockNumber lblk, Page lpage,
			   BlockNumber rblk, Page rpage)
{
	ForeinPageOpaque lop = ForeinPageGetOpaque(lpage);
	ForeinPageOpaque rop = ForeinPageGetOpaque(rpage);
	Buffer		lbuf;
	Buffer		rbuf;
	Page		l;
	Page		r;
	MemoryContext oldcxt;
	bool		ok;

	oldcxt = MemoryContextSwitchTo(cs->tmpcxt);
	ok = rop->left == lblk &&
		forein_compare_tuples(cs->fstate, ITEM(lpage, FOREIN_HIKEY),
							  ITEM(rpage, FOREIN_LOKEY)) == 0;
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(cs->tmpcxt);
	if (ok && lop->right == rblk)
		return;

	l = palloc(BLCKSZ);
	r = palloc(BLCKSZ);
	lbuf = ReadBuffer(cs->index, lblk);
	LockBuffer(lbuf, BUFFER_LOCK_SHARE);
	rbuf = ReadBuffer(cs->index, rblk);
	LockBuffer(rbuf, BUFFER_LOCK_SHARE);
	check_copy_locked(lbuf, l);
	check_copy_locked(rbuf, r);
	UnlockReleaseBuffer(rbuf);
	UnlockReleaseBuffer(lbuf);

	check_page_header(cs, l, lblk);
	check_page_header(cs, r, rblk);
	lop = ForeinPageGetOpaque(l);
	rop = ForeinPageGetOpaque(r);
	if ((lop->flags & FOREIN_DELETED) || (rop->flags & FOREIN_DELETED) ||
		lop->right != rblk)
	{
		/* Changed under us: split or deletion; each page is checked anyway */
		pfree(l);
		pfree(r);
		return;
	}
	if (rop->left != lblk)
		check_report(cs, rblk, "Left link is %u, but block %u's right link points here.",
					 rop->left, lblk);
	oldcxt = MemoryContextSwitchTo(cs->tmpcxt);
	if (forein_compare_tuples(cs->fstate, ITEM(l, FOREIN_HIKEY),
							  ITEM(r, FOREIN_LOKEY)) != 0)
		check_report(cs, rblk, "Low key differs from the high key of left sibling %u.",
					 lblk);
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(cs->tmpcxt);
	pfree(l);
	pfree(r);
}

/*
 * A deleted page met on a level walk.  Fine if a concurrent VACUUM deleted
 * it after we read the link that led here; not if that link still points
 * to it, since deletion unlinks the page and repoints its downlink in one
 * atomic step.
 */
static void
check_deleted_on_walk(ForeinCheckState *cs, BlockNumber blkno,
					  BlockNumber prevblk, ForeinCheckLevel *pl)
{
	if (BlockNumberIsValid(prevblk))
	{
		Page		prev = check_read_page(cs, prevblk);
		ForeinPageOpaque op = ForeinPageGetOpaque(prev);

		if (!PageIsNew(prev) && (op->flags & FOREIN_DELETED) == 0 &&
			op->right == blkno)
			check_report(cs, prevblk, "Right link points to deleted block %u.",
						 blkno);
		pfree(prev);
	}
	else if (pl == NULL)
	{
		BlockNumber root;
		uint32		root_level;

		check_metapage(cs, &root, &root_level);
		if (root == blkno)
			check_report(cs, blkno, "The root page is flagged deleted.");
	}
	else
	{
		BlockNumber pblk;
		OffsetNumber poff;
		IndexTuple	sep;

		/* Reached through the first downlink of the level above */
		if (check_find_downlink(cs, pl->items[0].parent, blkno, &pblk, &poff,
								&sep))
			check_report(cs, pblk, "Downlink at offset %u points to deleted block %u.",
						 poff, blkno);
	}
}

/*
 * A page on the root level.  Only the root lives there, except while a
 * root split is in progress (the root is flagged INCOMPLETE_SPLIT and its
 * new sibling waits for a new root) or after the tree grew during the check.
 */
static void
check_top_page(ForeinCheckState *cs, BlockNumber blkno, Page page,
			   BlockNumber prevblk)
{
	BlockNumber root;
	uint32		root_level;

	if (!BlockNumberIsValid(prevblk))
	{
		if ((ForeinPageGetOpaque(page)->flags & FOREIN_ROOT) == 0)
		{
			check_metapage(cs, &root, &root_level);
			if (root == blkno)
				check_report(cs, blkno, "The root page is not flagged as the root.");
		}
		return;
	}

	/*
	 * Sibling first, then the metapage: the split's completion clears the
	 * flag and installs the new root in one atomic step, so one of the two
	 * shows it.
	 */
	{
		Page		prev = check_read_page(cs, prevblk);
		ForeinPageOpaque op = ForeinPageGetOpaque(prev);
		bool		pending = !PageIsNew(prev) && op->right == blkno &&
			(op->flags & FOREIN_INCOMPLETE_SPLIT) != 0;

		pfree(prev);
		if (pending)
			return;
	}
	check_metapage(cs, &root, &root_level);
	if (root == cs->root && root_level == cs->root_level)
		check_report(cs, blkno, "Page is on the root level %u beside root %u, but its left sibling %u is not flagged as an incomplete split.",
					 root_level, root, prevblk);
}

/*
 * Match a live page of this level with the next downlink of the level
 * above.  Downlinks skipped over must be to pages deleted meanwhile.
 */
static void
check_match(ForeinCheckState *cs, ForeinCheckLevel *pl, int *next,
			BlockNumber blkno, Page page, uint32 level)
{
	int			k = -1;
	int			m;
	ForeinCheckDownlink *dl;
	bool		ok;

	if (*next < pl->n && pl->items[*next].child == blkno)
		k = *next;
	else
	{
		ForeinCheckChildEntry *entry;

		entry = hash_search(pl->bychild, &blkno, HASH_FIND, NULL);
		if (entry)
			k = entry->idx;
	}

	if (k < 0)
	{
		/* No downlink when we read the level above: a split since? */
		BlockNumber start;

		start = *next > 0 ? pl->items[*next - 1].parent : pl->items[0].parent;
		check_child_linked(cs, blkno, level, start, pl->items[0].parent);
		return;
	}
	if (k < *next)
		check_report(cs, blkno, "Downlink to this page in block %u comes before the downlink to its left sibling.",
					 pl->items[k].parent);

	for (m = *next; m < k; m++)
		check_unmatched(cs, pl, m, level);
	*next = k + 1;

	dl = &pl->items[k];
	if (dl->sep == NULL)
		ok = ForeinPageIsLeftmost(page);
	else
	{
		MemoryContext oldcxt = MemoryContextSwitchTo(cs->tmpcxt);

		ok = !ForeinPageIsLeftmost(page) &&
			forein_compare_tuples(cs->fstate, dl->sep,
								  ITEM(page, FOREIN_LOKEY)) == 0;
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(cs->tmpcxt);
	}
	if (!ok)
		check_child_linked(cs, blkno, level, dl->parent, pl->items[0].parent);
}

/*
 * The walk of this level did not meet the child of downlink m.  Fine if the
 * child was deleted since (its downlink then is gone too).  A live child
 * that still has that downlink is either off the sibling chain or out of
 * order in it.
 */
static void
check_unmatched(ForeinCheckState *cs, ForeinCheckLevel *pl, int m,
				uint32 level)
{
	ForeinCheckDownlink *dl = &pl->items[m];
	Page		page;
	ForeinPageOpaque opaque;
	BlockNumber pblk;
	OffsetNumber poff;
	IndexTuple	sep;

	page = check_read_page(cs, dl->child);
	if (PageIsNew(page))
		check_report(cs, dl->parent, "Downlink points to block %u, which is all zeroes.",
					 dl->child);
	check_page_header(cs, page, dl->child);
	opaque = ForeinPageGetOpaque(page);

	if (!check_find_downlink(cs, dl->parent, dl->child, &pblk, &poff, &sep))
	{
		pfree(page);
		return;					/* repointed by a concurrent deletion */
	}
	if (opaque->flags & FOREIN_DELETED)
		check_report(cs, pblk, "Downlink at offset %u points to deleted block %u.",
					 poff, dl->child);
	if (opaque->level != level)
		check_report(cs, pblk, "Downlink at offset %u points to block %u at level %u, expected level %u.",
					 poff, dl->child, opaque->level, level);
	check_report(cs, dl->child, "Page at level %u has a downlink in block %u but is not at that position in the sibling chain of its level.",
				 level, pblk);
}

/*
 * Verify, under locks, that a live child is linked from the level above:
 * either its left sibling is flagged INCOMPLETE_SPLIT (the split that made
 * it has not inserted its downlink yet), or a downlink to it exists and its
 * separator equals the child's low key.  The child stays share-locked while
 * the parent level is searched (child before parent, as writers do), which
 * freezes its low key and keeps its downlink from being repointed.
 */
static void
check_child_linked(ForeinCheckState *cs, BlockNumber child, uint32 level,
				   BlockNumber startparent, BlockNumber leftmostparent)
{
	int			attempt;

	for (attempt = 0; attempt < 3; attempt++)
	{
		Page		c = check_read_page(cs, child);
		ForeinPageOpaque cop;
		BlockNumber leftblk;
		Buffer		lbuf = InvalidBuffer;
		Buffer		cbuf;
		Page		l = NULL;
		bool		found;
		BlockNumber pblk = InvalidBlockNumber;
		OffsetNumber poff = InvalidOffsetNumber;
		IndexTuple	sep = NULL;
		bool		ok;
		MemoryContext oldcxt;

		check_page_header(cs, c, child);
		cop = ForeinPageGetOpaque(c);
		if (cop->flags & FOREIN_DELETED)
			return;
		leftblk = cop->left;

		/* Left sibling, then the child: left to right */
		if (BlockNumberIsValid(leftblk))
		{
			if (!check_block_exists(cs, leftblk))
				check_report(cs, child, "Left link %u points past the end of the index.",
							 leftblk);
			l = palloc(BLCKSZ);
			lbuf = ReadBuffer(cs->index, leftblk);
			LockBuffer(lbuf, BUFFER_LOCK_SHARE);
		}
		cbuf = ReadBuffer(cs->index, child);
		LockBuffer(cbuf, BUFFER_LOCK_SHARE);
		check_copy_locked(cbuf, c);
		if (BufferIsValid(lbuf))
		{
			check_copy_locked(lbuf, l);
			UnlockReleaseBuffer(lbuf);
		}

		cop = ForeinPageGetOpaque(c);
		if (cop->flags & FOREIN_DELETED)
		{
			UnlockReleaseBuffer(cbuf);
			return;
		}
		if (cop->left != leftblk)
		{
			/* a split or deletion on the left meanwhile: look again */
			UnlockReleaseBuffer(cbuf);
			pfree(c);
			if (l)
				pfree(l);
			continue;
		}
		if (l != NULL && !PageIsNew(l))
		{
			ForeinPageOpaque lop = ForeinPageGetOpaque(l);

			if ((lop->flags & (FOREIN_DELETED | FOREIN_INCOMPLETE_SPLIT)) ==
				FOREIN_INCOMPLETE_SPLIT && lop->right == child)
			{
				UnlockReleaseBuffer(cbuf);
				return;			/* the downlink is legitimately missing */
			}
		}

		found = check_find_downlink(cs, startparent, child, &pblk, &poff, &sep);
		if (!found && startparent != leftmostparent)
			found = check_find_downlink(cs, leftmostparent, child, &pblk,
										&poff, &sep);
		UnlockReleaseBuffer(cbuf);

		if (!found)
			check_report(cs, child, "Page at level %u has no downlink in level %u, and its left sibling %u is not flagged as an incomplete split.",
						 level, level + 1, leftblk);

		oldcxt = MemoryContextSwitchTo(cs->tmpcxt);
		if (sep == NULL)
			ok = ForeinPageIsLeftmost(c);
		else
			ok = !ForeinPageIsLeftmost(c) &&
				forein_compare_tuples(cs->fstate, sep, ITEM(c, FOREIN_LOKEY)) == 0;
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(cs->tmpcxt);
		if (!ok)
		{
			if (sep == NULL)
				check_report(cs, pblk, "The first downlink of a leftmost page points to block %u, which is not leftmost (left link %u).",
							 child, leftblk);
			check_report(cs, pblk, "Separator of the downlink at offset %u differs from the low key of its child block %u.",
						 poff, child);
		}
		return;
	}
	/* The neighbourhood kept changing; concurrent activity, not corruption */
}

/*
 * Search the level above for a downlink to child, from start moving right
 * (inner pages are never deleted, and splits move downlinks only right).
 * On success return where it is and a copy of its separator (NULL: minus
 * infinity).
 */
static bool
check_find_downlink(ForeinCheckState *cs, BlockNumber start,
					BlockNumber child, BlockNumber *pblk, OffsetNumber *poff,
					IndexTuple *sep)
{
	BlockNumber blkno = start;
	BlockNumber steps = 0;

	while (BlockNumberIsValid(blkno) && check_block_exists(cs, blkno) &&
		   steps++ <= cs->nblocks_now)
	{
		Page		page = check_read_page(cs, blkno);
		ForeinPageOpaque opaque;
		OffsetNumber off;
		BlockNumber right;

		if (PageIsNew(page))
		{
			pfree(page);
			break;
		}
		check_page_header(cs, page, blkno);
		opaque = ForeinPageGetOpaque(page);
		if ((opaque->flags & FOREIN_DELETED) == 0 && opaque->level > 0)
		{
			off = forein_inner_find_child(page, child);
			if (off != InvalidOffsetNumber)
			{
				*pblk = blkno;
				*poff = off;
				*sep = check_sep_at(page, off);
				pfree(page);
				return true;
			}
		}
		right = opaque->right;
		pfree(page);
		blkno = right;
	}
	return false;
}

/*
 * Every live page of the relation must be reachable from the root.  Pages
 * the level walks did not meet may have been created by concurrent splits;
 * those are found by descending with their low key.
 */
static void
check_unreachable(ForeinCheckState *cs)
{
	BlockNumber blkno;

	for (blkno = FOREIN_METAPAGE_BLKNO + 1; blkno < cs->nblocks; blkno++)
	{
		Page		page;
		ForeinPageOpaque opaque;
		IndexTuple	lokey;
		bool		reached;

		if (check_is_visited(cs, blkno))
			continue;
		page = check_read_page(cs, blkno);
		if (PageIsNew(page))
		{
			pfree(page);
			continue;
		}
		check_page_header(cs, page, blkno);
		opaque = ForeinPageGetOpaque(page);
		if (opaque->flags & FOREIN_DELETED)
		{
			pfree(page);
			continue;
		}
		check_page_items(cs, page, blkno);
		lokey = ForeinPageIsLeftmost(page) ? NULL : ITEM(page, FOREIN_LOKEY);
		reached = check_descend_reaches(cs, blkno, opaque->level, lokey);
		if (!reached)
		{
			Page		again = check_read_page(cs, blkno);

			if (!PageIsNew(again) &&
				(ForeinPageGetOpaque(again)->flags & FOREIN_DELETED) == 0)
				check_report(cs, blkno, "Live page at level %u is not reachable from the root.",
							 opaque->level);
			pfree(again);
		}
		pfree(page);
	}
}

/*
 * Descend from the current root to the given level looking for the page
 * that covers lokey (NULL: minus infinity), moving right where the key is
 * at or past a high key.  A linked page covers its own low key, so a
 * reachable target is the page this lands on.
 */
static bool
check_descend_reaches(ForeinCheckState *cs, BlockNumber target, uint32 level,
					  IndexTuple lokey)
{
	BlockNumber root;
	uint32		lvl;
	BlockNumber blkno;
	BlockNumber steps = 0;
	bool		result = false;
	MemoryContext oldcxt;

	check_metapage(cs, &root, &lvl);
	if (level > lvl)
		return false;

	oldcxt = MemoryContextSwitchTo(cs->tmpcxt);
	blkno = root;
	while (BlockNumberIsValid(blkno) && check_block_exists(cs, blkno) &&
		   steps++ <= 2 * cs->nblocks_now)
	{
		Page		page = check_read_page(cs, blkno);
		ForeinPageOpaque opaque;
		OffsetNumber maxoff;
		OffsetNumber off;
		BlockNumber child;

		if (PageIsNew(page))
			break;
		check_page_header(cs, page, blkno);
		opaque = ForeinPageGetOpaque(page);
		if (opaque->level != lvl)
			break;
		if ((opaque->flags & FOREIN_DELETED) ||
			(lokey != NULL && !ForeinPageIsRightmost(page) &&
			 forein_compare_tuples(cs->fstate, lokey,
								   ITEM(page, FOREIN_HIKEY)) >= 0))
		{
			blkno = opaque->right;
			continue;
		}
		if (lvl == level)
		{
			result = (blkno == target);
			break;
		}

		/* The last downlink whose separator is <= lokey, else the first child */
		maxoff = PageGetMaxOffsetNumber(page);
		child = forein_inner_child(page, FOREIN_FIRST_CHILD);
		if (lokey != NULL)
		{
			for (off = FOREIN_FIRST_ITEM; off <= maxoff; off = OffsetNumberNext(off))
			{
				IndexTuple	itup = ITEM(page, off);

				if (forein_compare_tuples(cs->fstate, itup, lokey) > 0)
					break;
				child = forein_inner_child(page, off);
			}
		}
		blkno = child;
		lvl--;
	}
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(cs->tmpcxt);
	return result;
}

/*
 * Fingerprint (heap TID, key values) in a form that does not depend on how
 * the value is stored: integers widened, varlenas detoasted and
 * decompressed, each value preceded by a null flag and its length.
 */
static void
check_fingerprint(ForeinCheckState *cs, ItemPointer tid, Datum *values,
				  bool *isnull)
{
	int			i;

	resetStringInfo(&cs->fp);
	appendBinaryStringInfo(&cs->fp, (char *) tid, sizeof(ItemPointerData));
	for (i = 0; i < cs->itupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(cs->itupdesc, i);
		char		flag = isnull[i] ? 1 : 0;
		const char *data = NULL;
		uint32		len = 0;
		int64		ival = 0;
		struct varlena *detoasted = NULL;

		appendBinaryStringInfo(&cs->fp, &flag, 1);
		if (isnull[i])
			continue;
		if (att->attbyval)
		{
			switch (att->attlen)
			{
				case 1:
					ival = (int64) DatumGetChar(values[i]);
					break;
				case 2:
					ival = (int64) DatumGetInt16(values[i]);
					break;
				case 4:
					ival = (int64) DatumGetInt32(values[i]);
					break;
				default:
					ival = DatumGetInt64(values[i]);
					break;
			}
			data = (const char *) &ival;
			len = sizeof(ival);
		}
		else if (att->attlen > 0)
		{
			data = DatumGetPointer(values[i]);
			len = att->attlen;
		}
		else if (att->attlen == -1)
		{
			struct varlena *orig = (struct varlena *) DatumGetPointer(values[i]);

			detoasted = pg_detoast_datum_packed(orig);
			data = VARDATA_ANY(detoasted);
			len = VARSIZE_ANY_EXHDR(detoasted);
			if (detoasted == orig)
				detoasted = NULL;
		}
		else
		{
			data = DatumGetCString(values[i]);
			len = strlen(data);
		}
		appendBinaryStringInfo(&cs->fp, (char *) &len, sizeof(len));
		appendBinaryStringInfo(&cs->fp, data, len);
		if (detoasted)
			pfree(detoasted);
	}
}

/* Every visible heap tuple must have been among the leaf entries */
static void
check_heap_callback(Relation index, ItemPointer tid, Datum *values,
					bool *isnull, bool tupleIsAlive, void *state)
{
	ForeinCheckState *cs = (ForeinCheckState *) state;

	check_fingerprint(cs, tid, values, isnull);
	cs->nheaptuples++;
	if (bloom_lacks_element(cs->filter, (unsigned char *) cs->fp.data,
							cs->fp.len))
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" lacks an entry for heap tuple (%u,%u) of table \"%s\"",
						RelationGetRelationName(cs->index),
						ItemPointerGetBlockNumber(tid),
						ItemPointerGetOffsetNumber(tid),
						RelationGetRelationName(cs->heap)),
				 errdetail("The tuple is visible to the check's snapshot, but no leaf entry has its key and heap TID.")));
}
