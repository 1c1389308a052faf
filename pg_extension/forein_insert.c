/*-------------------------------------------------------------------------
 *
 * forein_insert.c
 *	  Insertion: unique checks, page splits and downlink insertion.
 *
 * A split is WAL-logged in one record over the left page, the new right
 * page, the old right sibling (its left link) and, when the split happens
 * while inserting a downlink, the child whose INCOMPLETE_SPLIT flag that
 * downlink clears: forein's SPLIT record (forein_xlog_tree.c) when forein
 * is preloaded, else a generic one.  The left page keeps INCOMPLETE_SPLIT
 * until its new sibling's downlink is in the parent (the next record), so
 * a crash in between leaves a tree that searches handle (move right) and
 * that the next inserter to touch the page completes.  Every record holds
 * at most four pages, the limit of generic WAL.
 *
 * pg_extension/forein_insert.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/rmgr.h"
#include "access/tableam.h"
#include "access/xloginsert.h"
#include "access/xact.h"
#include "forein.h"
#include "forein_xlog.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/predicate.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

/* One insert, as nbtree's BTInsertStateData: what each attempt needs */
typedef struct ForeinInsertState
{
	Relation	index;
	ForeinState *state;
	Relation	heapRel;
	IndexTuple	itup;			/* the new entry; t_tid is the heap TID */
	ForeinSearchKey key;		/* its position */
	Datum	   *values;			/* its key, for a unique violation's detail */
	bool	   *isnull;
	IndexUniqueCheck checkUnique;
	bool		indexUnchanged;
	bool		dedup;			/* the index deduplicates */
	bool		is_unique;		/* the result: no duplicate found */
} ForeinInsertState;

static bool insert_onto(Relation index, ForeinState *state, Relation heapRel,
						bool bottomup, Buffer buf, ForeinStack stack,
						IndexTuple itup, OffsetNumber off, Buffer childbuf);
static Buffer insert_search_leaf(ForeinInsertState *ins,
								 const ForeinSearchKey *key,
								 ForeinStack *stack);
static bool insert_plain(ForeinInsertState *ins);
static bool insert_unique(ForeinInsertState *ins);
static bool insert_check_unique(ForeinInsertState *ins, Buffer buf,
								ForeinStack stack,
								const ForeinSearchKey *first,
								bool *anyentry);
static bool insert_further_right(ForeinInsertState *ins, Buffer buf,
								 ForeinStack stack, bool bottomup);

static void
page_add(Relation index, Page page, IndexTuple itup, OffsetNumber off)
{
	if (PageAddItem(page, (Item) itup, IndexTupleSize(itup), off, false,
					false) == InvalidOffsetNumber)
		elog(ERROR, "failed to add item to a page of index \"%s\"",
			 RelationGetRelationName(index));
}

static inline Size
item_cost(IndexTuple itup)
{
	return MAXALIGN(IndexTupleSize(itup)) + sizeof(ItemIdData);
}

/*
 * Where to split n ordered items: the first item of the right page.  Both
 * halves must fit with their bounds.  Normally the bytes are halved; a
 * rightmost page that grows at its end keeps the fill factor on the left,
 * so ascending loads leave pages as full as a build would, and a leaf of a
 * single key keeps 96% on the left, as nbtree's single-value strategy does:
 * that key's new TIDs mostly arrive at its end.  A leaf of an index that
 * aligns its leaves (`align`, forein_index_align_leaves) takes, among the
 * splits within FOREIN_CUT_SLACK of the target, the one with the most
 * aligned separator (forein_separator.c), which is never a cut between
 * duplicates when another is there.  Otherwise, among the splits that
 * leave each side between a quarter and three quarters, a leaf prefers one
 * between two different keys (`differ` given), as nbtree's "many
 * duplicates" strategy does: cutting a run of duplicates leaves a half-full
 * page behind every time that key grows.  Returns -1 when no point fits.
 *
 * A page holds two bounds, and the right page's low key repeats its first
 * item's key, so with items near the 1/3-page limit no split of the page's
 * items plus a new one may fit (three such items and a large high key).
 * The page's own items always split: cut before the last item k = n - 1,
 * the left keeps its old bytes less item k plus k's separator (no larger
 * than k), the right holds three things of at most 1/3 page each.  So
 * split_page then splits without the new items, and the insertion retries.
 */
#define FOREIN_SINGLEVALUE_FILLFACTOR 96

static int
choose_split(IndexTuple *items, int n, Size lo_cost, Size hi_cost, bool inner,
			 bool rightmost_append, bool single_value, int fillpct,
			 ForeinState *differ, bool align)
{
	Size		usable = BLCKSZ - SizeOfPageHeaderData -
		MAXALIGN(sizeof(ForeinPageOpaqueData));
	Size		total = 0;
	Size		left = lo_cost;
	Size		target;
	int			best = -1;
	Size		best_dist = 0;
	int			boundary = -1;
	Size		boundary_dist = 0;
	int			aligned = -1;
	int			aligned_score = -1;
	Size		aligned_dist = 0;
	Size		slack = FOREIN_CUT_SLACK(usable);
	int			k;

	for (k = 0; k < n; k++)
		total += item_cost(items[k]);
	if (single_value)
		target = usable * FOREIN_SINGLEVALUE_FILLFACTOR / 100;
	else if (rightmost_append)
		target = usable * fillpct / 100;
	else
		target = (total + lo_cost + hi_cost) / 2;

	/*
	 * Split before item k: k's key becomes the left high key and the right
	 * low key.  An inner item k leaves the page as a downlink: its child
	 * becomes the right page's first child, so k may be 0.
	 */
	for (k = inner ? 0 : 1; k < n; k++)
	{
		Size		sep = item_cost(items[k]) - (inner ? FOREIN_DOWNLINK_EXTRA : 0);
		Size		right;
		Size		dist;

		if (k > 0)
			left += item_cost(items[k - 1]);
		right = total - (left - lo_cost) - (inner ? item_cost(items[k]) : 0) +
			sep + hi_cost;
		if (left + sep > usable || right > usable)
			continue;
		dist = left > target ? left - target : target - left;
		if (best < 0 || dist < best_dist)
		{
			best = k;
			best_dist = dist;
		}
		if (differ != NULL && left >= total / 4 && right >= total / 4 &&
			(boundary < 0 || dist < boundary_dist) &&
			!forein_keys_equal(differ, items[k - 1], items[k]))
		{
			boundary = k;
			boundary_dist = dist;
		}
		if (align && !single_value && dist <= slack)
		{
			int			score = forein_cut_alignment(differ, items[k - 1], items[k]);

			if (score > aligned_score ||
				(score == aligned_score && dist < aligned_dist))
			{
				aligned = k;
				aligned_score = score;
				aligned_dist = dist;
			}
		}
	}
	if (best < 0)
		return -1;
	if (aligned_score >= 0)
		return aligned;
	return boundary >= 0 && !single_value && !rightmost_append ? boundary : best;
}

/*
 * Splits the page in buf to make room for the nnew items at off (replacing
 * the item there when `replace`).  Consumes childbuf (clears its
 * INCOMPLETE_SPLIT in the same record) and, through the downlink insertion
 * that follows, buf.  Returns false when the new items fit on neither half:
 * the page was split without them, childbuf is still held, and the caller
 * must retry the insertion.
 */
static bool
split_page(Relation index, ForeinState *state, Buffer buf, ForeinStack stack,
		   IndexTuple *newitems, int nnew, OffsetNumber off, bool replace,
		   Buffer childbuf)
{
	Page		origpage = BufferGetPage(buf);
	ForeinPageOpaque oopaque = ForeinPageGetOpaque(origpage);
	BlockNumber blkno = BufferGetBlockNumber(buf);
	OffsetNumber maxoff = PageGetMaxOffsetNumber(origpage);
	bool		leaf = oopaque->level == 0;
	IndexTuple *items;
	IndexTuple	hikey = (IndexTuple) PageGetItem(origpage, PageGetItemId(origpage, FOREIN_HIKEY));
	IndexTuple	lokey = (IndexTuple) PageGetItem(origpage, PageGetItemId(origpage, FOREIN_LOKEY));
	IndexTuple	sep;
	int			n = 0;
	int			k;
	int			i;
	OffsetNumber o;
	Buffer		rbuf;
	Buffer		obuf = InvalidBuffer;
	BlockNumber rblkno;
	BlockNumber oright = oopaque->right;
	GenericXLogState *xs = NULL;
	bool		direct = forein_wal_rmgr_ready || !RelationNeedsWAL(index);
	PGAlignedBlock lscratch;
	PGAlignedBlock rscratch;
	char	   *packed_new = NULL;
	Size		packed_len = 0;
	int			first_right;
	Page		lpage;
	Page		rpage;
	ForeinPageOpaque lopaque;
	ForeinPageOpaque ropaque;
	uint16		flags = oopaque->flags;
	uint16		level = oopaque->level;
	BlockNumber oleft = oopaque->left;
	uint32		version = oopaque->version;
	BlockNumber first_child = oopaque->first_child;
	bool		inserted = true;

	Assert(!(flags & FOREIN_INCOMPLETE_SPLIT));
	items = palloc(sizeof(IndexTuple) * (maxoff + nnew + 1));
	for (o = FOREIN_FIRST_ITEM; o <= maxoff; o++)
	{
		if (o == off)
			for (i = 0; i < nnew; i++)
				items[n++] = newitems[i];
		if (!(replace && o == off))
			items[n++] = (IndexTuple) PageGetItem(origpage, PageGetItemId(origpage, o));
	}
	if (off > maxoff)
		for (i = 0; i < nnew; i++)
			items[n++] = newitems[i];

	k = choose_split(items, n, item_cost(lokey), item_cost(hikey), !leaf,
					 oright == InvalidBlockNumber && off > maxoff,
					 leaf && n > 2 && forein_keys_equal(state, items[0], items[n - 1]),
					 leaf ? forein_index_fillfactor(index) : FOREIN_INNER_FILLFACTOR,
					 leaf ? state : NULL, leaf && forein_index_align_leaves(index));
	if (k < 0)
	{
		/* the page's own items only (see choose_split) */
		n = 0;
		for (o = FOREIN_FIRST_ITEM; o <= maxoff; o++)
			items[n++] = (IndexTuple) PageGetItem(origpage, PageGetItemId(origpage, o));
		k = choose_split(items, n, item_cost(lokey), item_cost(hikey), !leaf,
						 false, false, 50, leaf ? state : NULL, false);
		if (k < 0)
			elog(ERROR, "forein: could not find a split point in block %u of index \"%s\"",
				 blkno, RelationGetRelationName(index));
		elog(DEBUG1, "forein: block %u (level %u) of index \"%s\" split without the new entry, which no split could take",
			 blkno, level, RelationGetRelationName(index));
		inserted = false;
		childbuf = InvalidBuffer;	/* its downlink is not in yet */
	}

	/*
	 * The separator: on leaves, forein_leaf_separator's (between different
	 * keys a key alone, TID (0,0), so a search for the key's first entry
	 * starts on the page that has it; between duplicates the full (key,
	 * TID)).  On inner pages, downlink k's separator; its child becomes the
	 * right page's first child.
	 */
	sep = leaf ? forein_leaf_separator(state, items[k - 1], items[k]) :
		forein_make_bound(items[k]);

	rbuf = forein_newbuf(index);
	rblkno = BufferGetBlockNumber(rbuf);
	if (oright != InvalidBlockNumber)
		obuf = forein_getbuf(index, oright, BUFFER_LOCK_EXCLUSIVE);

	/*
	 * With forein's own WAL (or none) both halves are built in scratch pages
	 * and copied in one critical section, as nbtree does; generic WAL builds
	 * them in its working copies.
	 */
	if (direct)
	{
		lpage = lscratch.data;
		rpage = rscratch.data;
		if (RelationNeedsWAL(index))
			packed_new = forein_split_pack_new(newitems, inserted ? nnew : 0,
											   &packed_len);
	}
	else
	{
		xs = forein_xlog_start(index);
		lpage = forein_register_page(xs, buf, GENERIC_XLOG_FULL_IMAGE);
		rpage = forein_register_page(xs, rbuf, GENERIC_XLOG_FULL_IMAGE);
	}

	/* the new right page: items [k, n) (inner: k + 1), bounds [sep, old hi) */
	forein_init_page(rpage, 0, level);
	first_right = leaf ? k : k + 1;
	if (!forein_fill_page(rpage, hikey, sep, items + first_right, n - first_right))
		elog(ERROR, "failed to add item to a page of index \"%s\"",
			 RelationGetRelationName(index));
	ropaque = ForeinPageGetOpaque(rpage);
	if (!leaf)
		ropaque->first_child = FOREIN_DOWNLINK(items[k]);
	ropaque->left = blkno;
	ropaque->right = oright;
	ropaque->version = version + 1;

	/* the left page: items [0, k), bounds [old lo, sep) */
	forein_init_page(lpage, flags | FOREIN_INCOMPLETE_SPLIT, level);
	if (!forein_fill_page(lpage, sep, lokey, items, k))
		elog(ERROR, "failed to add item to a page of index \"%s\"",
			 RelationGetRelationName(index));
	lopaque = ForeinPageGetOpaque(lpage);
	lopaque->first_child = first_child;
	lopaque->left = oleft;
	lopaque->right = rblkno;
	lopaque->version = version + 1;

	if (direct)
	{
		/*
		 * The left page keeps the old page's LSN, which XLogInsert compares
		 * with the last checkpoint's redo pointer: a zero LSN would log the
		 * page whole (nbtree's _bt_split does the same).
		 */
		PageSetLSN(lpage, PageGetLSN(origpage));
		START_CRIT_SECTION();
		memcpy(BufferGetPage(buf), lpage, BLCKSZ);
		memcpy(BufferGetPage(rbuf), rpage, BLCKSZ);
		MarkBufferDirty(buf);
		MarkBufferDirty(rbuf);
		if (BufferIsValid(obuf))
		{
			ForeinPageGetOpaque(BufferGetPage(obuf))->left = rblkno;
			MarkBufferDirty(obuf);
		}
		if (BufferIsValid(childbuf))
		{
			ForeinPageGetOpaque(BufferGetPage(childbuf))->flags &= ~FOREIN_INCOMPLETE_SPLIT;
			MarkBufferDirty(childbuf);
		}
		if (RelationNeedsWAL(index))
		{
			XLogRecPtr	lsn = forein_log_split(buf, rbuf, obuf, childbuf, off,
											   inserted && replace,
											   inserted ? nnew : 0, k,
											   packed_new, packed_len);

			PageSetLSN(BufferGetPage(buf), lsn);
			PageSetLSN(BufferGetPage(rbuf), lsn);
			if (BufferIsValid(obuf))
				PageSetLSN(BufferGetPage(obuf), lsn);
			if (BufferIsValid(childbuf))
				PageSetLSN(BufferGetPage(childbuf), lsn);
		}
		END_CRIT_SECTION();
		if (packed_new)
			pfree(packed_new);
	}
	else
	{
		if (BufferIsValid(obuf))
			ForeinPageGetOpaque(forein_register_page(xs, obuf, 0))->left = rblkno;
		if (BufferIsValid(childbuf))
			ForeinPageGetOpaque(forein_register_page(xs, childbuf, 0))->flags &= ~FOREIN_INCOMPLETE_SPLIT;
		forein_xlog_finish(xs);
	}

	if (BufferIsValid(obuf))
		forein_relbuf(obuf);
	if (BufferIsValid(childbuf))
		forein_relbuf(childbuf);
	forein_relbuf(rbuf);
	pfree(items);
	pfree(sep);

	forein_offload_node_event(index, blkno);
	forein_offload_node_event(index, rblkno);

	forein_insert_downlink(index, state, buf, stack);
	return inserted;
}

/*
 * Adds itup at off on a page known to have room, and logs it.  With forein
 * preloaded the record is forein's own (forein_xlog.c): the offset and the
 * tuple.  Otherwise it is a generic WAL record written directly:
 * GenericXLogFinish would copy the page twice and compare it byte by byte
 * to find what changed, which made inserts three times slower than
 * btree's.  We know what changed: the header, the line pointers from off
 * on (or from the first entry marked LP_DEAD, so the standby gets the
 * marks: see forein_xlog_finish), and the new tuple.  The record is
 * exactly what generic_redo() replays (fragments of offset, length, bytes;
 * the hole between pd_lower and pd_upper zeroed, as it is here).
 */
static void
add_item_logged(Relation index, Buffer buf, IndexTuple itup, OffsetNumber off)
{
	Page		page = BufferGetPage(buf);
	bool		generic = RelationNeedsWAL(index) && !forein_wal_rmgr_ready;
	OffsetNumber from = off;

	START_CRIT_SECTION();
	if (generic)
	{
		/* the record carries the line pointers from the first marked one */
		OffsetNumber marked = forein_first_dead_mark(page, off);

		if (marked != InvalidOffsetNumber)
			from = marked;
	}
	if (PageAddItem(page, (Item) itup, IndexTupleSize(itup), off, false,
					false) == InvalidOffsetNumber)
		elog(PANIC, "failed to add item to a page of index \"%s\"",
			 RelationGetRelationName(index));
	MarkBufferDirty(buf);
	if (RelationNeedsWAL(index) && !generic)
	{
		XLogRecPtr	lsn = forein_log_insert(buf, off);	/* PageSetLSN is a macro */

		PageSetLSN(page, lsn);
	}
	else if (generic)
	{
		PageHeader	hdr = (PageHeader) page;
		ItemId		iid = PageGetItemId(page, off);
		char		delta[SizeOfPageHeaderData + MaxIndexTuplesPerPage * sizeof(ItemIdData) +
						  BLCKSZ / 4 + 3 * 2 * sizeof(OffsetNumber)];
		char	   *p = delta;
		OffsetNumber frag[3][2];
		int			i;
		XLogRecPtr	lsn;

		frag[0][0] = 0;
		frag[0][1] = SizeOfPageHeaderData;
		frag[1][0] = (char *) PageGetItemId(page, from) - (char *) page;
		frag[1][1] = hdr->pd_lower - frag[1][0];
		frag[2][0] = ItemIdGetOffset(iid);
		frag[2][1] = ItemIdGetLength(iid);
		for (i = 0; i < 3; i++)
		{
			memcpy(p, &frag[i][0], sizeof(OffsetNumber));
			p += sizeof(OffsetNumber);
			memcpy(p, &frag[i][1], sizeof(OffsetNumber));
			p += sizeof(OffsetNumber);
			memcpy(p, (char *) page + frag[i][0], frag[i][1]);
			p += frag[i][1];
		}
		XLogBeginInsert();
		XLogRegisterBuffer(0, buf, REGBUF_STANDARD);
		XLogRegisterBufData(0, delta, p - delta);
		lsn = XLogInsert(RM_GENERIC_ID, 0);
		PageSetLSN(page, lsn);
	}
	END_CRIT_SECTION();
}

/*
 * The recovery-conflict horizon of deleting the n entries at offs of leaf
 * buf (ntids heap TIDs in all): table_index_delete_tuples (entries known
 * deletable, as for nbtree's simple deletion) returns the newest XID a
 * standby query must not still see, or InvalidTransactionId when there is
 * none: it examines no tuple behind an LP_DEAD heap line pointer, since the
 * pruning that made it LP_DEAD logged that conflict already.
 */
static TransactionId
deletion_horizon(Relation index, Relation heapRel, Buffer buf,
				 const OffsetNumber *offs, int n, int ntids)
{
	Page		page = BufferGetPage(buf);
	TM_IndexDeleteOp delstate;
	TransactionId horizon;
	int			i;

	delstate.irel = index;
	delstate.iblknum = BufferGetBlockNumber(buf);
	delstate.bottomup = false;
	delstate.bottomupfreespace = 0;
	delstate.ndeltids = 0;
	delstate.deltids = palloc(ntids * sizeof(TM_IndexDelete));
	delstate.status = palloc(ntids * sizeof(TM_IndexStatus));
	for (i = 0; i < n; i++)
	{
		IndexTuple	itup = (IndexTuple) PageGetItem(page, PageGetItemId(page, offs[i]));
		int			count = forein_posting_count(itup);
		int			k;

		for (k = 0; k < count; k++)
		{
			int			j = delstate.ndeltids++;

			delstate.deltids[j].tid = *forein_posting_tid(itup, k);
			delstate.deltids[j].id = j;
			delstate.status[j].idxoffnum = offs[i];
			delstate.status[j].knowndeletable = true;
			delstate.status[j].promising = false;
			delstate.status[j].freespace = 0;
		}
	}
	horizon = table_index_delete_tuples(heapRel, &delstate);
	pfree(delstate.deltids);
	pfree(delstate.status);
	return horizon;
}

/*
 * Deletes the n entries at offs (ascending) of the exclusively locked leaf
 * buf, after shrinking the nupdated posting tuples at updated_off to
 * updated (bottom-up deletion), in one record with the recovery-conflict
 * horizon (forein_change_leaf; without forein's resource manager callers
 * pass no horizon and no updates); returns where the insert position off
 * is afterwards.
 */
static OffsetNumber
delete_entries(Relation index, Buffer buf, OffsetNumber *offs, int n,
			   OffsetNumber *updated_off, IndexTuple *updated, int nupdated,
			   TransactionId horizon, OffsetNumber off)
{
	int			i;

	if (n == 0 && nupdated == 0)
		return off;
	forein_change_leaf(index, buf, offs, n, updated_off, updated, nupdated,
					   false, horizon);
	for (i = 0; i < n && offs[i] < off; i++)
		;
	return off - i;
}

/*
 * Before a full leaf splits, deletes the entries scans marked LP_DEAD
 * (kill_items), as nbtree's simple deletion does; returns where the insert
 * position off is afterwards.  The deletion record carries the
 * recovery-conflict horizon (deletion_horizon) when forein's WAL resource
 * manager is there (forein preloaded: forein_xlog.c) or needs none (an
 * unlogged index).  A generic record cannot carry one, so without it only
 * entries that need none go: those whose heap tuples are pruned, all at
 * once or else one by one.  Under churn the scan that marks an entry has
 * often pruned its heap page first (heap_page_prune_opt on fetch).  The
 * heap is read under the leaf's exclusive lock, as nbtree does.
 */
static OffsetNumber
delete_dead_entries(Relation index, Relation heapRel, Buffer buf,
					OffsetNumber off)
{
	Page		page = BufferGetPage(buf);
	OffsetNumber maxoff = PageGetMaxOffsetNumber(page);
	OffsetNumber marked[MaxIndexTuplesPerPage];
	OffsetNumber deletable[MaxIndexTuplesPerPage];
	int			nmarked = 0;
	int			ndeletable = 0;
	int			ntids = 0;
	int			i;
	TransactionId horizon;

	for (i = FOREIN_FIRST_ITEM; i <= maxoff; i++)
		if (forein_leaf_is_marked(page, i))
		{
			marked[nmarked++] = i;
			ntids += forein_posting_count((IndexTuple)
										  PageGetItem(page, PageGetItemId(page, i)));
		}
	if (nmarked == 0)
		return off;
	/* an unlogged index has no standby to hold a conflict horizon for */
	horizon = RelationNeedsWAL(index) ?
		deletion_horizon(index, heapRel, buf, marked, nmarked, ntids) :
		InvalidTransactionId;
	if (!TransactionIdIsValid(horizon) || forein_wal_rmgr_ready)
	{
		memcpy(deletable, marked, nmarked * sizeof(OffsetNumber));
		ndeletable = nmarked;
	}
	else
	{
		for (i = 0; i < nmarked; i++)
		{
			IndexTuple	itup = (IndexTuple) PageGetItem(page, PageGetItemId(page, marked[i]));

			if (!TransactionIdIsValid(deletion_horizon(index, heapRel, buf, &marked[i], 1,
													   forein_posting_count(itup))))
				deletable[ndeletable++] = marked[i];
		}
		horizon = InvalidTransactionId;
	}
	return delete_entries(index, buf, deletable, ndeletable, NULL, NULL, 0,
						  horizon, off);
}

/*
 * Which TID of a posting tuple (the run of duplicates it holds) is
 * promising for bottom-up deletion: as nbtree's
 * _bt_bottomupdel_finish_pending, the first TID when most of the list
 * points into the first TID's heap block (its first and middle TIDs share
 * it), else the last when the middle and last share theirs, else none.
 * Versions of one row made by updates cluster in a heap block; TIDs of
 * distinct rows with one key spread out.
 */
static int
promising_posting_tid(IndexTuple itup)
{
	int			n = forein_posting_count(itup);
	BlockNumber first = ItemPointerGetBlockNumber(forein_posting_tid(itup, 0));
	BlockNumber mid = ItemPointerGetBlockNumber(forein_posting_tid(itup, n / 2));
	BlockNumber last = ItemPointerGetBlockNumber(forein_posting_tid(itup, n - 1));

	if (first == mid)
		return 0;
	if (mid == last)
		return n - 1;
	return -1;
}

/*
 * Bottom-up deletion (nbtree's _bt_bottomupdel_pass): before a full leaf
 * splits for an entry that is a new version of a row whose key did not
 * change (the executor's indexUnchanged hint: a non-HOT update), or for a
 * unique key that already has entries, asks the table which of the leaf's
 * entries point to heap tuples dead to every transaction and deletes
 * those.  Entries of duplicate keys are the promising ones: old versions
 * sit beside their successors.  The table visits a few heap blocks, the
 * most promising first, and stops once it has found bottomupfreespace
 * (heapam's heap_index_delete_tuples).  This finds the old versions no
 * scan has visited and marked yet, so version churn does not split leaves.
 * A posting tuple goes when all its TIDs are deletable, else it is
 * shrunk to the others (a DELETE_UPDATE record: forein_xlog.c).  The record
 * needs a recovery-conflict horizon, so without forein's resource manager
 * (forein not preloaded) a logged index does without.  Returns where the
 * insert position off is afterwards.
 */
static OffsetNumber
delete_old_versions(Relation index, ForeinState *state, Relation heapRel,
					Buffer buf, OffsetNumber off, Size itemsz)
{
	Page		page = BufferGetPage(buf);
	OffsetNumber maxoff = PageGetMaxOffsetNumber(page);
	TM_IndexDeleteOp delstate;
	OffsetNumber deletable[MaxIndexTuplesPerPage];
	OffsetNumber updated_off[MaxIndexTuplesPerPage];
	IndexTuple	updated[MaxIndexTuplesPerPage];
	uint16		ndead[MaxIndexTuplesPerPage + 1];
	int			firstid[MaxIndexTuplesPerPage + 1];
	bool	   *dead;
	ItemPointer live;
	int			ndeletable = 0;
	int			nupdated = 0;
	int			ntids = 0;
	bool		anypromising = false;
	OffsetNumber start;
	OffsetNumber end;
	OffsetNumber i;
	int			j;
	TransactionId horizon;

	if ((RelationNeedsWAL(index) && !forein_wal_rmgr_ready) ||
		maxoff < FOREIN_FIRST_ITEM)
		return off;
	for (i = FOREIN_FIRST_ITEM; i <= maxoff; i++)
		ntids += forein_posting_count((IndexTuple) PageGetItem(page, PageGetItemId(page, i)));

	delstate.irel = index;
	delstate.iblknum = BufferGetBlockNumber(buf);
	delstate.bottomup = true;
	delstate.bottomupfreespace = Max(BLCKSZ / 16, itemsz);
	delstate.ndeltids = 0;
	delstate.deltids = palloc(ntids * sizeof(TM_IndexDelete));
	delstate.status = palloc(ntids * sizeof(TM_IndexStatus));
	for (start = FOREIN_FIRST_ITEM; start <= maxoff; start = end)
	{
		IndexTuple	first = (IndexTuple) PageGetItem(page, PageGetItemId(page, start));
		bool		dup;

		for (end = start + 1; end <= maxoff; end++)
			if (!forein_keys_equal(state, first,
								   (IndexTuple) PageGetItem(page, PageGetItemId(page, end))))
				break;
		dup = end - start > 1;
		for (i = start; i < end; i++)
		{
			ItemId		iid = PageGetItemId(page, i);
			IndexTuple	itup = (IndexTuple) PageGetItem(page, iid);
			int			count = forein_posting_count(itup);
			int			promising = count == 1 ? (dup ? 0 : -1) :
				promising_posting_tid(itup);
			int			k;

			firstid[i] = delstate.ndeltids;
			if (ItemIdIsDead(iid))
				continue;		/* left by simple deletion: not deletable yet */
			anypromising |= promising >= 0;
			for (k = 0; k < count; k++)
			{
				TM_IndexDelete *d = &delstate.deltids[delstate.ndeltids];
				TM_IndexStatus *st = &delstate.status[delstate.ndeltids];

				d->tid = *forein_posting_tid(itup, k);
				d->id = delstate.ndeltids++;
				st->idxoffnum = i;
				st->knowndeletable = false;
				st->promising = k == promising;
				/* at worst, for a posting tuple's TID */
				st->freespace = count == 1 ?
					ItemIdGetLength(iid) + sizeof(ItemIdData) : sizeof(ItemPointerData);
			}
		}
	}
	/* nothing is likely an old version: spare the heap */
	if (!anypromising)
	{
		pfree(delstate.deltids);
		pfree(delstate.status);
		return off;
	}
	horizon = table_index_delete_tuples(heapRel, &delstate);

	/* the table may reorder and shorten deltids; status and ids are by TID */
	memset(ndead, 0, sizeof(ndead));
	dead = palloc0(ntids * sizeof(bool));
	live = palloc(ntids * sizeof(ItemPointerData));
	for (j = 0; j < delstate.ndeltids; j++)
	{
		int			id = delstate.deltids[j].id;
		TM_IndexStatus *st = &delstate.status[id];

		if (st->knowndeletable)
		{
			ndead[st->idxoffnum]++;
			dead[id] = true;
		}
	}
	for (i = FOREIN_FIRST_ITEM; i <= maxoff; i++)
	{
		IndexTuple	itup = (IndexTuple) PageGetItem(page, PageGetItemId(page, i));
		int			count = forein_posting_count(itup);
		int			nlive = 0;
		int			k;

		if (ndead[i] == 0)
			continue;
		if (ndead[i] == count)
		{
			deletable[ndeletable++] = i;
			continue;
		}
		for (k = 0; k < count; k++)
			if (!dead[firstid[i] + k])
				live[nlive++] = *forein_posting_tid(itup, k);
		updated_off[nupdated] = i;
		updated[nupdated++] = forein_form_posting(itup, live, nlive);
	}
	off = delete_entries(index, buf, deletable, ndeletable, updated_off, updated,
						 nupdated, horizon, off);
	for (j = 0; j < nupdated; j++)
		pfree(updated[j]);
	pfree(live);
	pfree(dead);
	pfree(delstate.deltids);
	pfree(delstate.status);
	return off;
}

/*
 * Makes room for an entry of itemsz bytes on the full, exclusively locked
 * leaf buf before it splits: deletes the entries scans marked, then, for
 * a new version of an unchanged key (bottomup), old versions no scan has
 * marked.  Returns where the insert position off is afterwards.
 */
static OffsetNumber
make_room(Relation index, ForeinState *state, Relation heapRel, Buffer buf,
		  OffsetNumber off, Size itemsz, bool bottomup)
{
	Page		page = BufferGetPage(buf);

	off = delete_dead_entries(index, heapRel, buf, off);
	if (bottomup && PageGetFreeSpace(page) < itemsz)
		off = delete_old_versions(index, state, heapRel, buf, off, itemsz);
	return off;
}

/*
 * Adds itup at off, splitting if needed; releases buf and childbuf.  Returns
 * false when a split could not take itup (split_page): buf is released,
 * childbuf still held, and the caller retries.  With heapRel (a leaf whose
 * caller has not tried yet), a full page first makes room (make_room;
 * bottomup: itup is a new version of an unchanged key).
 */
static bool
insert_onto(Relation index, ForeinState *state, Relation heapRel,
			bool bottomup, Buffer buf, ForeinStack stack, IndexTuple itup,
			OffsetNumber off, Buffer childbuf)
{
	Page		page = BufferGetPage(buf);

	if (heapRel != NULL &&
		PageGetFreeSpace(page) < MAXALIGN(IndexTupleSize(itup)))
		off = make_room(index, state, heapRel, buf, off,
						MAXALIGN(IndexTupleSize(itup)), bottomup);

	if (PageGetFreeSpace(page) >= MAXALIGN(IndexTupleSize(itup)) &&
		!BufferIsValid(childbuf))
	{
		add_item_logged(index, buf, itup, off);
		forein_relbuf(buf);
		return true;
	}
	if (PageGetFreeSpace(page) >= MAXALIGN(IndexTupleSize(itup)) &&
		(forein_wal_rmgr_ready || !RelationNeedsWAL(index)))
	{
		/* a downlink that completes childbuf's split */
		START_CRIT_SECTION();
		if (PageAddItem(page, (Item) itup, IndexTupleSize(itup), off, false,
						false) == InvalidOffsetNumber)
			elog(PANIC, "failed to add item to a page of index \"%s\"",
				 RelationGetRelationName(index));
		ForeinPageGetOpaque(BufferGetPage(childbuf))->flags &= ~FOREIN_INCOMPLETE_SPLIT;
		MarkBufferDirty(buf);
		MarkBufferDirty(childbuf);
		if (RelationNeedsWAL(index))
		{
			XLogRecPtr	lsn = forein_log_insert_upper(buf, off, childbuf);

			PageSetLSN(page, lsn);
			PageSetLSN(BufferGetPage(childbuf), lsn);
		}
		END_CRIT_SECTION();
		forein_relbuf(childbuf);
		forein_relbuf(buf);
		return true;
	}
	if (PageGetFreeSpace(page) >= MAXALIGN(IndexTupleSize(itup)))
	{
		GenericXLogState *xs = forein_xlog_start(index);

		page_add(index, forein_register_page(xs, buf, 0), itup, off);
		if (BufferIsValid(childbuf))
			ForeinPageGetOpaque(forein_register_page(xs, childbuf, 0))->flags &= ~FOREIN_INCOMPLETE_SPLIT;
		forein_xlog_finish(xs);
		if (BufferIsValid(childbuf))
			forein_relbuf(childbuf);
		forein_relbuf(buf);
		return true;
	}
	return split_page(index, state, buf, stack, &itup, 1, off, false, childbuf);
}

/*
 * Replaces the leaf item at off by the nnew items (a posting tuple that
 * took a TID, or was cut around one), splitting if they do not fit;
 * releases buf.  Returns false as insert_onto does.
 */
static bool
replace_onto(Relation index, ForeinState *state, Buffer buf, ForeinStack stack,
			 OffsetNumber off, IndexTuple *newitems, int nnew)
{
	Page		page = BufferGetPage(buf);
	Size		need = (nnew - 1) * sizeof(ItemIdData);
	Size		old = MAXALIGN(ItemIdGetLength(PageGetItemId(page, off)));
	GenericXLogState *xs;
	Page		wpage;
	int			i;

	for (i = 0; i < nnew; i++)
		need += MAXALIGN(IndexTupleSize(newitems[i]));
	if (need > old && need - old > PageGetExactFreeSpace(page))
	{
		return split_page(index, state, buf, stack, newitems, nnew, off, true,
						  InvalidBuffer);
	}
	if (forein_wal_rmgr_ready || !RelationNeedsWAL(index))
	{
		forein_replace_logged(index, buf, off, newitems, nnew);
		forein_relbuf(buf);
		return true;
	}
	xs = forein_xlog_start(index);
	wpage = forein_register_page(xs, buf, 0);
	if (!forein_replace_items(wpage, off, newitems, nnew))
		elog(ERROR, "failed to add item to a page of index \"%s\"",
			 RelationGetRelationName(index));
	forein_xlog_finish(xs);
	forein_relbuf(buf);
	return true;
}

/*
 * Merges runs of identical keys on a full leaf into posting tuples, in one
 * WAL record (forein's DEDUP, or a generic one when forein is not
 * preloaded); returns whether it changed the page (offsets move).
 */
static bool
dedup_page(Relation index, Buffer buf)
{
	Page		page = BufferGetPage(buf);
	OffsetNumber maxoff = PageGetMaxOffsetNumber(page);
	int			n = maxoff >= FOREIN_FIRST_ITEM ? maxoff - FOREIN_FIRST_ITEM + 1 : 0;
	IndexTuple *items;
	bool		changed;
	int			i;
	MemoryContext cxt = AllocSetContextCreate(CurrentMemoryContext,
											  "forein dedup",
											  ALLOCSET_DEFAULT_SIZES);
	MemoryContext oldcxt = MemoryContextSwitchTo(cxt);

	items = palloc(sizeof(IndexTuple) * Max(n, 1));
	for (i = 0; i < n; i++)
		items[i] = CopyIndexTuple((IndexTuple) PageGetItem(page, PageGetItemId(page, FOREIN_FIRST_ITEM + i)));
	if (forein_wal_rmgr_ready || !RelationNeedsWAL(index))
		changed = forein_dedup_logged(index, buf, items, n);
	else
	{
		IndexTuple *out = palloc(sizeof(IndexTuple) * Max(n, 1));
		OffsetNumber *offs = palloc(sizeof(OffsetNumber) * Max(n, 1));
		int			m = forein_dedup_items(items, n, out, NULL);

		changed = m < n;
		if (changed)
		{
			GenericXLogState *xs = forein_xlog_start(index);
			Page		wpage = forein_register_page(xs, buf, GENERIC_XLOG_FULL_IMAGE);

			for (i = 0; i < n; i++)
				offs[i] = FOREIN_FIRST_ITEM + i;
			PageIndexMultiDelete(wpage, offs, n);
			for (i = 0; i < m; i++)
				page_add(index, wpage, out[i], InvalidOffsetNumber);
			forein_xlog_finish(xs);
		}
	}
	MemoryContextSwitchTo(oldcxt);
	MemoryContextDelete(cxt);
	return changed;
}

/*
 * Inserts itup on the exclusively locked leaf buf of a deduplicating index:
 * into the posting tuple whose TID range holds itup's TID, if any; else as
 * a tuple of its own, after making room (make_room) and then merging the
 * page's duplicates when it is full.  Releases buf.  Returns false as
 * insert_onto does.
 */
static bool
insert_dedup(Relation index, ForeinState *state, Relation heapRel,
			 bool bottomup, Buffer buf, ForeinStack stack, IndexTuple itup,
			 const ForeinSearchKey *key)
{
	Page		page = BufferGetPage(buf);
	OffsetNumber off = forein_binsearch_leaf(state, page, key);

	if (PageGetFreeSpace(page) < MAXALIGN(IndexTupleSize(itup)))
	{
		off = make_room(index, state, heapRel, buf, off,
						MAXALIGN(IndexTupleSize(itup)), bottomup);
		if (PageGetFreeSpace(page) < MAXALIGN(IndexTupleSize(itup)) &&
			dedup_page(index, buf))
			off = forein_binsearch_leaf(state, page, key);
	}
	if (off > FOREIN_FIRST_ITEM)
	{
		IndexTuple	prev = (IndexTuple) PageGetItem(page, PageGetItemId(page, off - 1));

		if (ForeinTupleIsPosting(prev) &&
			ItemPointerCompare(&itup->t_tid, forein_posting_last_tid(prev)) < 0 &&
			forein_keys_equal(state, prev, itup))
		{
			IndexTuple	rep[3];
			int			nrep = forein_posting_insert(prev, itup, rep);

			return replace_onto(index, state, buf, stack, off - 1, rep, nrep);
		}
	}
	/* (deletion was tried above if the page was full: no heapRel) */
	return insert_onto(index, state, NULL, false, buf, stack, itup, off,
					   InvalidBuffer);
}

/* Grows the tree: a new root above the old root lbuf and its new sibling */
static void
new_root(Relation index, ForeinState *state, Buffer lbuf, IndexTuple sep,
		 BlockNumber rblkno)
{
	Page		lpage = BufferGetPage(lbuf);
	uint16		level = ForeinPageGetOpaque(lpage)->level + 1;
	Buffer		nbuf = forein_newbuf(index);
	Buffer		metabuf = ReadBuffer(index, FOREIN_METAPAGE_BLKNO);
	GenericXLogState *xs;
	Page		npage;
	ForeinMetaPageData *meta;
	IndexTuple	placeholder = forein_make_placeholder(state);
	IndexTuple	downlink = forein_make_downlink(sep, rblkno);

	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	if (forein_wal_rmgr_ready || !RelationNeedsWAL(index))
	{
		START_CRIT_SECTION();
		npage = BufferGetPage(nbuf);
		forein_init_page(npage, FOREIN_ROOT, level);
		ForeinPageGetOpaque(npage)->version = 1;
		if (!forein_fill_page(npage, placeholder, placeholder, &downlink, 1))
			elog(PANIC, "failed to add item to a page of index \"%s\"",
				 RelationGetRelationName(index));
		ForeinPageGetOpaque(npage)->first_child = BufferGetBlockNumber(lbuf);
		meta = ForeinPageGetMeta(BufferGetPage(metabuf));
		meta->root = BufferGetBlockNumber(nbuf);
		meta->root_level = level;
		ForeinPageGetOpaque(lpage)->flags &= ~(FOREIN_ROOT | FOREIN_INCOMPLETE_SPLIT);
		MarkBufferDirty(nbuf);
		MarkBufferDirty(metabuf);
		MarkBufferDirty(lbuf);
		if (RelationNeedsWAL(index))
		{
			XLogRecPtr	lsn = forein_log_new_root(nbuf, metabuf, lbuf);

			PageSetLSN(npage, lsn);
			PageSetLSN(BufferGetPage(metabuf), lsn);
			PageSetLSN(lpage, lsn);
		}
		END_CRIT_SECTION();
	}
	else
	{
		xs = forein_xlog_start(index);
		npage = forein_register_page(xs, nbuf, GENERIC_XLOG_FULL_IMAGE);
		forein_init_page(npage, FOREIN_ROOT, level);
		ForeinPageGetOpaque(npage)->version = 1;
		if (!forein_fill_page(npage, placeholder, placeholder, &downlink, 1))
			elog(ERROR, "failed to add item to a page of index \"%s\"",
				 RelationGetRelationName(index));
		ForeinPageGetOpaque(npage)->first_child = BufferGetBlockNumber(lbuf);
		meta = ForeinPageGetMeta(forein_register_page(xs, metabuf, 0));
		meta->root = BufferGetBlockNumber(nbuf);
		meta->root_level = level;
		ForeinPageGetOpaque(forein_register_page(xs, lbuf, 0))->flags &=
			~(FOREIN_ROOT | FOREIN_INCOMPLETE_SPLIT);
		forein_xlog_finish(xs);
	}

	state->root = BufferGetBlockNumber(nbuf);
	state->root_level = level;
	forein_offload_node_event(index, BufferGetBlockNumber(nbuf));
	forein_relbuf(metabuf);
	forein_relbuf(nbuf);
	forein_relbuf(lbuf);
	pfree(placeholder);
	pfree(downlink);
}

/*
 * Completes the split of the exclusively locked, INCOMPLETE_SPLIT page lbuf:
 * inserts its right sibling's downlink into the parent (found through the
 * stack, or by a descent from the root when the stack ends), clearing the
 * flag in the same record.  Releases lbuf.
 */
void
forein_insert_downlink(Relation index, ForeinState *state, Buffer lbuf,
					   ForeinStack stack)
{
	Page		lpage = BufferGetPage(lbuf);
	ForeinPageOpaque lopaque = ForeinPageGetOpaque(lpage);
	BlockNumber lblkno = BufferGetBlockNumber(lbuf);
	BlockNumber rblkno = lopaque->right;
	uint32		level = lopaque->level;
	Buffer		rbuf;
	Buffer		pbuf;
	ForeinStack parentstack;
	ForeinStack found = NULL;
	IndexTuple	sep;
	IndexTuple	downlink;
	OffsetNumber off;
	BlockNumber parent_blkno;

	/* The right sibling's low key is stable: only deleting lbuf changes it */
	rbuf = forein_getbuf(index, rblkno, BUFFER_LOCK_SHARE);
	sep = forein_make_bound((IndexTuple) PageGetItem(BufferGetPage(rbuf),
													 PageGetItemId(BufferGetPage(rbuf), FOREIN_LOKEY)));
	forein_relbuf(rbuf);

	if (stack == NULL && (lopaque->flags & FOREIN_ROOT))
	{
		new_root(index, state, lbuf, sep, rblkno);
		pfree(sep);
		return;
	}

	if (stack != NULL)
	{
		pbuf = forein_getbuf(index, stack->blkno, BUFFER_LOCK_EXCLUSIVE);
		parentstack = stack->parent;
	}
	else
	{
		/* the descent started below the parent (hint or former root) */
		ForeinSearchKey key;

		if (ForeinPageIsLeftmost(lpage))
		{
			memset(&key, 0, offsetof(ForeinSearchKey, vals));
			key.unbounded = true;
			key.tidmode = FOREIN_TID_BEFORE;
		}
		else
			forein_key_from_tuple(state, (IndexTuple) PageGetItem(lpage, PageGetItemId(lpage, FOREIN_LOKEY)),
								  &key);
		pbuf = forein_descend(index, state, &key, level + 1,
							  BUFFER_LOCK_EXCLUSIVE, &found, false);
		if (!BufferIsValid(pbuf))
			elog(ERROR, "forein: no level %u above block %u in index \"%s\"",
				 level + 1, lblkno, RelationGetRelationName(index));
		parentstack = found;
	}

	/* re-find the downlink to lbuf, moving right; finish the parent's split first */
retry:
	for (;;)
	{
		Page		ppage = BufferGetPage(pbuf);
		ForeinPageOpaque popaque = ForeinPageGetOpaque(ppage);
		BlockNumber pblkno = BufferGetBlockNumber(pbuf);

		if (popaque->flags & FOREIN_INCOMPLETE_SPLIT)
		{
			forein_insert_downlink(index, state, pbuf, parentstack);
			pbuf = forein_getbuf(index, pblkno, BUFFER_LOCK_EXCLUSIVE);
			continue;
		}
		if (!ForeinPageIsDeleted(ppage))
		{
			off = forein_inner_find_child(ppage, lblkno);
			if (off != InvalidOffsetNumber)
				break;
		}
		if (popaque->right == InvalidBlockNumber)
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("index \"%s\": failed to re-find the downlink to block %u",
							RelationGetRelationName(index), lblkno)));
		pblkno = popaque->right;
		forein_relbuf(pbuf);
		pbuf = forein_getbuf(index, pblkno, BUFFER_LOCK_EXCLUSIVE);
	}

	downlink = forein_make_downlink(sep, rblkno);
	parent_blkno = BufferGetBlockNumber(pbuf);	/* insert_onto releases pbuf */
	if (!insert_onto(index, state, NULL, false, pbuf, parentstack, downlink,
					 off + 1, lbuf))
	{
		/* the parent split without our downlink: find it again from there */
		pfree(downlink);
		pbuf = forein_getbuf(index, parent_blkno, BUFFER_LOCK_EXCLUSIVE);
		goto retry;
	}
	pfree(downlink);
	pfree(sep);
	forein_free_stack(found);
}

/*
 * Looks for a live duplicate of itup's key, starting at the first position
 * of the key on the exclusively locked leaf buf and moving right (share
 * locks, buf stays locked).  Returns true on a conflict; sets *xwait (and
 * *spec) when an in-progress transaction must be waited for first, and
 * *anyentry when the key has entries at all, dead or alive (old versions:
 * bottom-up deletion is worth trying).  Entries whose heap tuples are dead
 * to every transaction are marked LP_DEAD on the way, as nbtree's
 * _bt_check_unique does: later checks skip them, and a full leaf deletes
 * them before it splits.  The mark is a hint, set under a share lock too.
 */
static bool
check_unique(Relation index, ForeinState *state, Relation heapRel, Buffer buf,
			 const ForeinSearchKey *first, IndexTuple itup,
			 IndexUniqueCheck checkUnique, TransactionId *xwait, uint32 *spec,
			 bool *anyentry)
{
	SnapshotData SnapshotDirty;
	ForeinSearchKey after = *first;
	Buffer		cur = buf;
	Page		page = BufferGetPage(buf);
	OffsetNumber off = forein_binsearch_leaf(state, page, first);
	bool		conflict = false;

	InitDirtySnapshot(SnapshotDirty);
	after.tidmode = FOREIN_TID_AFTER;
	*xwait = InvalidTransactionId;
	*spec = 0;
	*anyentry = false;

	for (;;)
	{
		OffsetNumber maxoff = PageGetMaxOffsetNumber(page);

		for (; off <= maxoff; off++)
		{
			ItemId		iid = PageGetItemId(page, off);
			IndexTuple	cand = (IndexTuple) PageGetItem(page, iid);
			ItemPointerData htid;
			bool		all_dead = false;

			if (forein_compare(state, &after, cand) <= 0)
				goto done;		/* past the key's entries */
			*anyentry = true;
			if (ItemIdIsDead(iid))
				continue;
			htid = cand->t_tid;
			if (checkUnique == UNIQUE_CHECK_EXISTING &&
				ItemPointerEquals(&htid, &itup->t_tid))
				continue;		/* the entry being rechecked */
			if (!table_index_fetch_tuple_check(heapRel, &htid, &SnapshotDirty,
											   &all_dead))
			{
				if (all_dead && !ForeinTupleIsPosting(cand))
				{
					ItemIdMarkDead(iid);
					MarkBufferDirtyHint(cur, true);
				}
				continue;
			}
			*xwait = TransactionIdIsValid(SnapshotDirty.xmin) ?
				SnapshotDirty.xmin : SnapshotDirty.xmax;
			if (TransactionIdIsValid(*xwait))
			{
				*spec = SnapshotDirty.speculativeToken;
				goto done;
			}

			/*
			 * A committed live duplicate.  It conflicts unless our own new
			 * heap tuple is already dead (deleted later in this transaction).
			 */
			if (checkUnique != UNIQUE_CHECK_PARTIAL &&
				!table_index_fetch_tuple_check(heapRel, &itup->t_tid,
											   SnapshotSelf, NULL))
				goto done;
			conflict = true;
			goto done;
		}
		if (!forein_page_hi_le(state, page, &after))
			break;				/* the key's entries cannot continue right */
		{
			BlockNumber next = ForeinPageGetOpaque(page)->right;

			if (cur != buf)
				forein_relbuf(cur);
			cur = forein_getbuf(index, next, BUFFER_LOCK_SHARE);
			page = BufferGetPage(cur);
			off = FOREIN_FIRST_ITEM;
		}
	}
done:
	if (cur != buf)
		forein_relbuf(cur);
	return conflict;
}

/*
 * Refuses an index tuple larger than FOREIN_MAX_ITEM_SIZE (a page holds two
 * bounds and one downlink, so 1/3 of a page, as btree), in the words of btree's
 * _bt_check_third_page; itup->t_tid is the heap TID.  For inserts and
 * index builds.
 */
void
forein_check_item_size(Relation index, Relation heap, IndexTuple itup)
{
	Size		itemsz = IndexTupleSize(itup);

	if (itemsz <= FOREIN_MAX_ITEM_SIZE)
		return;
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("index row size %zu exceeds forein maximum %zu for index \"%s\"",
					itemsz, (Size) FOREIN_MAX_ITEM_SIZE,
					RelationGetRelationName(index)),
			 errdetail("Index row references tuple (%u,%u) in relation \"%s\".",
					   ItemPointerGetBlockNumber(&itup->t_tid),
					   ItemPointerGetOffsetNumber(&itup->t_tid),
					   RelationGetRelationName(heap)),
			 errhint("Values larger than 1/3 of a buffer page cannot be indexed.\n"
					 "Consider a function index of an MD5 hash of the value, "
					 "or use full text indexing."),
			 errtableconstraint(heap, RelationGetRelationName(index))));
}

/*
 * Inserts descend from the root: FOREIN's hints serve lookups, and under a
 * steady insert stream the table lags the splits, so a hinted insert pays
 * for the table lookup and extra move-rights without saving page reads.
 */
bool
forein_insert(Relation index, Datum *values, bool *isnull,
			  ItemPointer ht_ctid, Relation heapRel,
			  IndexUniqueCheck checkUnique, bool indexUnchanged,
			  IndexInfo *indexInfo)
{
	ForeinState *state = forein_get_state(index);
	ForeinInsertState ins;
	bool		check;
	int			i;

	ins.index = index;
	ins.state = state;
	ins.heapRel = heapRel;
	ins.itup = index_form_tuple(state->tupdesc, values, isnull);
	ins.values = values;
	ins.isnull = isnull;
	ins.checkUnique = checkUnique;
	ins.indexUnchanged = indexUnchanged;
	ins.dedup = forein_index_dedup(index);
	ins.is_unique = true;

	ins.itup->t_tid = *ht_ctid;
	forein_check_item_size(index, heapRel, ins.itup);
	forein_key_from_tuple(state, ins.itup, &ins.key);
	/* a key with a NULL column never conflicts (unless NULLS NOT DISTINCT) */
	check = checkUnique != UNIQUE_CHECK_NO;
	for (i = 0; check && i < state->nkeys; i++)
		check = !isnull[i] || index->rd_index->indnullsnotdistinct;

	/* An attempt that returns false starts over from the root */
	for (;;)
	{
		if (check ? insert_unique(&ins) : insert_plain(&ins))
			break;
	}
	pfree(ins.itup);
	return ins.is_unique;
}

/*
 * Descends to the leaf of key and locks it exclusively, as nbtree's
 * _bt_search_insert.  When that leaf is the left half of an incomplete
 * split, completes the split instead and returns InvalidBuffer (stack
 * freed): the caller starts over.
 */
static Buffer
insert_search_leaf(ForeinInsertState *ins, const ForeinSearchKey *key,
				   ForeinStack *stack)
{
	Buffer		buf;

	buf = forein_descend(ins->index, ins->state, key, 0, BUFFER_LOCK_EXCLUSIVE,
						 stack, false);
	if (ForeinPageGetOpaque(BufferGetPage(buf))->flags & FOREIN_INCOMPLETE_SPLIT)
	{
		forein_insert_downlink(ins->index, ins->state, buf, *stack);
		forein_free_stack(*stack);
		return InvalidBuffer;
	}
	return buf;
}

/*
 * One attempt at an insert without a unique check.  Returns false when the
 * caller must start over: an incomplete split was completed first, or the
 * leaf split without our entry.
 */
static bool
insert_plain(ForeinInsertState *ins)
{
	ForeinStack stack;
	Buffer		buf;
	bool		done;

	buf = insert_search_leaf(ins, &ins->key, &stack);
	if (!BufferIsValid(buf))
		return false;
	CheckForSerializableConflictIn(ins->index, NULL, BufferGetBlockNumber(buf));
	if (ins->dedup)
		done = insert_dedup(ins->index, ins->state, ins->heapRel,
							ins->indexUnchanged, buf, stack, ins->itup,
							&ins->key);
	else
		done = insert_onto(ins->index, ins->state, ins->heapRel,
						   ins->indexUnchanged, buf, stack, ins->itup,
						   forein_binsearch_leaf(ins->state, BufferGetPage(buf),
												 &ins->key),
						   InvalidBuffer);
	forein_free_stack(stack);
	return done;				/* false: the leaf split without our entry */
}

/*
 * One attempt at an insert with a unique check.  Returns true when done
 * (our entry is in, or UNIQUE_CHECK_EXISTING found no conflict); false when
 * the caller must start over: an incomplete split was completed, a
 * conflicting transaction was waited for, or the leaf split without our
 * entry (the check runs again).
 */
static bool
insert_unique(ForeinInsertState *ins)
{
	ForeinSearchKey first = ins->key;
	ForeinStack stack;
	Buffer		buf;
	Page		page;
	bool		anyentry;
	bool		bottomup;
	bool		done;

	/*
	 * Every inserter of this key locks the page of the key's first position
	 * before checking, and keeps it locked until its own entry is in: that
	 * serializes checks of equal keys.
	 */
	first.tidmode = FOREIN_TID_BEFORE;
	buf = insert_search_leaf(ins, &first, &stack);
	if (!BufferIsValid(buf))
		return false;
	page = BufferGetPage(buf);
	if (!insert_check_unique(ins, buf, stack, &first, &anyentry))
		return false;
	if (ins->checkUnique == UNIQUE_CHECK_EXISTING)
	{
		forein_relbuf(buf);
		forein_free_stack(stack);
		return true;
	}

	/* the key's other entries are likely old versions, as in nbtree */
	bottomup = ins->indexUnchanged || anyentry;
	CheckForSerializableConflictIn(ins->index, NULL, BufferGetBlockNumber(buf));
	if (!forein_page_hi_le(ins->state, page, &ins->key))
	{
		done = insert_onto(ins->index, ins->state, ins->heapRel, bottomup, buf,
						   stack, ins->itup,
						   forein_binsearch_leaf(ins->state, page, &ins->key),
						   InvalidBuffer);
		forein_free_stack(stack);
		/* false: split without our entry: check again */
		return done;
	}
	return insert_further_right(ins, buf, stack, bottomup);
}

/*
 * The unique check on buf, the locked leaf of the key's first position.
 * A duplicate raises the unique violation, or under UNIQUE_CHECK_PARTIAL
 * clears is_unique.  Returns false, with buf and stack released, after
 * waiting for a transaction that was inserting or deleting a duplicate:
 * the caller starts over.  Sets *anyentry as check_unique does.
 */
static bool
insert_check_unique(ForeinInsertState *ins, Buffer buf, ForeinStack stack,
					const ForeinSearchKey *first, bool *anyentry)
{
	TransactionId xwait;
	uint32		spec;

	if (check_unique(ins->index, ins->state, ins->heapRel, buf, first,
					 ins->itup, ins->checkUnique, &xwait, &spec, anyentry))
	{
		if (ins->checkUnique != UNIQUE_CHECK_PARTIAL)
		{
			char	   *desc;

			forein_relbuf(buf);
			forein_free_stack(stack);
			desc = BuildIndexValueDescription(ins->index, ins->values,
											  ins->isnull);
			ereport(ERROR,
					(errcode(ERRCODE_UNIQUE_VIOLATION),
					 errmsg("duplicate key value violates unique constraint \"%s\"",
							RelationGetRelationName(ins->index)),
					 desc ? errdetail("Key %s already exists.", desc) : 0,
					 errtableconstraint(ins->heapRel,
										RelationGetRelationName(ins->index))));
		}
		ins->is_unique = false;
	}
	else if (TransactionIdIsValid(xwait))
	{
		forein_relbuf(buf);
		forein_free_stack(stack);
		if (spec)
			SpeculativeInsertionWait(xwait, spec);
		else
			XactLockTableWait(xwait, ins->heapRel, &ins->itup->t_tid,
							  XLTW_InsertIndex);
		return false;
	}
	return true;
}

/*
 * Our position is right of buf, the leaf of the key's first position (the
 * key's entries continue right): moves right to the leaf that covers it,
 * as nbtree's _bt_stepright, still holding buf so that no equal key slips
 * in before our entry, and inserts there.  Releases buf and stack.
 * Returns false as insert_unique does.
 */
static bool
insert_further_right(ForeinInsertState *ins, Buffer buf, ForeinStack stack,
					 bool bottomup)
{
	Buffer		target = InvalidBuffer;
	BlockNumber next = ForeinPageGetOpaque(BufferGetPage(buf))->right;
	bool		done;

	/* our position is further right: go there holding buf */
	for (;;)
	{
		Buffer		nbuf = forein_getbuf(ins->index, next, BUFFER_LOCK_EXCLUSIVE);
		Page		npage = BufferGetPage(nbuf);

		if (BufferIsValid(target))
			forein_relbuf(target);
		target = nbuf;
		if (!ForeinPageIsDeleted(npage) &&
			!forein_page_hi_le(ins->state, npage, &ins->key))
			break;
		next = ForeinPageGetOpaque(npage)->right;
	}
	if (ForeinPageGetOpaque(BufferGetPage(target))->flags & FOREIN_INCOMPLETE_SPLIT)
	{
		/* rare: complete that split and start over */
		forein_relbuf(buf);
		forein_insert_downlink(ins->index, ins->state, target, NULL);
		forein_free_stack(stack);
		return false;
	}
	done = insert_onto(ins->index, ins->state, ins->heapRel, bottomup, target,
					   NULL, ins->itup,
					   forein_binsearch_leaf(ins->state, BufferGetPage(target),
											 &ins->key),
					   InvalidBuffer);
	forein_relbuf(buf);
	forein_free_stack(stack);
	return done;
}
