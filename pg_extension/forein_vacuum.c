/*-------------------------------------------------------------------------
 *
 * forein_vacuum.c
 *	  VACUUM support for the forein index access method: removal of dead
 *	  index tuples, deletion of empty leaf pages and recycling of deleted
 *	  pages through the free space map.
 *
 * Bulk delete visits every block in physical order (like btvacuumscan), so
 * it reads the index sequentially rather than in key order.  A concurrent
 * page split can move tuples from a page we have not visited yet into a page
 * we have already passed; that happens only when the new right page was a
 * recycled block below the scan position.  nbtree catches this with vacuum
 * cycle IDs stamped by splits.  Forein pages carry no cycle ID, so instead
 * we remember which blocks were not live (new or deleted) when the scan
 * passed them: a split can only ever reuse such a block, so when a live leaf
 * whose right link points backwards to a remembered block is visited, we
 * follow the right links back ("backtrack") and vacuum those pages too.
 *
 * Page deletion follows nbtree's approach, simplified:
 *
 *	- Only leaf pages are deleted.  Inner pages are never deleted, which is
 *	  also why the rightmost child of a parent is never deleted: an inner
 *	  page therefore never becomes empty, and the tree never loses height
 *	  or inner pages.  The consequence is that after mass deletions one
 *	  empty leaf per level-1 page can remain, and the inner levels keep the
 *	  size they had at the index's peak (about one page per few hundred
 *	  leaves), until REINDEX.
 *	- The empty target's key space passes to its right sibling R: the
 *	  target's downlink is repointed to R and R's old downlink (the next
 *	  item on the same parent page) is removed, R's low key becomes the
 *	  target's low key, and the sibling links skip the target.  Because
 *	  every one of these changes lives on at most four pages (left sibling,
 *	  target, right sibling, parent), it is done in one generic WAL record,
 *	  so nbtree's half-dead intermediate state is not needed.
 *	- The deleted page keeps its right link so that a reader that reached
 *	  it through a stale downlink or sibling link moves right into R, which
 *	  now covers the deleted page's key range.  It is stamped with the next
 *	  full transaction ID and may only be recycled once that ID is older
 *	  than every snapshot (GlobalVisCheckRemovableFullXid), i.e. when no
 *	  transaction that could still hold a pointer to it is running.
 *
 * Lock order: left sibling, target, right sibling (left to right within a
 * level), then the parent (child before parent), matching the order used by
 * inserters; no lock is held while the parent is searched for.
 *
 * Portions Copyright (c) 2026, forein developers
 *
 * pg_extension/forein_vacuum.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/generic_xlog.h"
#include "access/transam.h"
#include "commands/progress.h"
#include "commands/vacuum.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "storage/bufmgr.h"
#include "storage/indexfsm.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "forein.h"
#include "forein_xlog.h"

/* Working state of one bulk delete or cleanup scan */
typedef struct ForeinVacState
{
	IndexVacuumInfo *info;
	IndexBulkDeleteResult *stats;
	IndexBulkDeleteCallback callback;
	void	   *callback_state;
	ForeinState *fstate;
	/* bitmap of blocks that were new or deleted when the scan passed them */
	uint8	   *reusable;
	BlockNumber reusable_nbits;
	MemoryContext pagecxt;		/* reset after every page */
} ForeinVacState;

/* What the scan learned about a page that may be deleted */
typedef struct ForeinDelCandidate
{
	BlockNumber target;
	BlockNumber left;
	BlockNumber right;
	IndexTuple	lokey;			/* NULL when the target is leftmost */
} ForeinDelCandidate;

/*
 * What bulk delete removes from one leaf: the items to delete, and the
 * posting tuples to replace by tuples of their live TIDs only.
 */
typedef struct ForeinVacDead
{
	OffsetNumber deletable[MaxIndexTuplesPerPage];
	int			ndeletable;
	OffsetNumber updated_off[MaxIndexTuplesPerPage];
	IndexTuple	updated[MaxIndexTuplesPerPage];
	int			nupdated;
	double		removed_tids;	/* posting TIDs beyond one per deleted item */
} ForeinVacDead;

/* The pages one deletion changes, exclusively locked in this order */
typedef struct ForeinDelLocked
{
	Buffer		lbuf;			/* left sibling; InvalidBuffer: none */
	Buffer		tbuf;			/* the target */
	Buffer		rbuf;			/* right sibling, which takes its key space */
	Buffer		pbuf;			/* parent, holding both their downlinks */
	BlockNumber parent;
	OffsetNumber toff;			/* the target's downlink, once rechecked */
} ForeinDelLocked;

static void forein_vacuum_scan(ForeinVacState *vstate);
static BlockNumber forein_vacuum_page(ForeinVacState *vstate,
									  BlockNumber blkno, bool backtrack);
static bool forein_vacuum_not_leaf(ForeinVacState *vstate, Buffer buf,
								   BlockNumber blkno, bool backtrack);
static bool forein_vacuum_delitems(ForeinVacState *vstate, Buffer buf);
static void forein_vacuum_collect(ForeinVacState *vstate, Page page,
								  ForeinVacDead *dead);
static void forein_vacuum_candidate(ForeinVacState *vstate, BlockNumber blkno,
									Page page, ForeinDelCandidate *cand);
static bool forein_delete_page(ForeinVacState *vstate,
							   ForeinDelCandidate *cand);
static void forein_delete_lock(Relation rel, ForeinDelCandidate *cand,
							   BlockNumber parent, ForeinDelLocked *locked);
static void forein_delete_unlock(ForeinDelLocked *locked);
static ForeinPageOpaque forein_delete_opaque(Relation rel, Buffer buf,
											 BlockNumber blkno);
static bool forein_delete_recheck(Relation rel, ForeinDelCandidate *cand,
								  ForeinDelLocked *locked);
static bool forein_unlink_page(Relation rel, ForeinDelCandidate *cand,
							   ForeinDelLocked *locked);
static BlockNumber forein_find_parent(Relation index, ForeinState *fstate,
									  ForeinDelCandidate *cand);

/*
 * Is this page safe to hand out again?  New (all-zero) pages always are; a
 * deleted page is once no running transaction can still be on its way to it
 * through a stale link, i.e. once its deletion XID is older than every
 * snapshot.  Called by forein_newbuf on pages from the FSM, with the page
 * locked, and by VACUUM.
 */
bool
forein_page_recyclable(Page page)
{
	ForeinPageOpaque opaque;
	FullTransactionId fxid;

	if (PageIsNew(page))
		return true;

	/* Never reuse a page we cannot interpret */
	if (PageGetSpecialSize(page) != MAXALIGN(sizeof(ForeinPageOpaqueData)))
		return false;
	opaque = ForeinPageGetOpaque(page);
	if (opaque->page_id != FOREIN_PAGE_ID ||
		(opaque->flags & FOREIN_DELETED) == 0)
		return false;

	if (PageGetMaxOffsetNumber(page) < FOREIN_DELETED_STAMP ||
		ItemIdGetLength(PageGetItemId(page, FOREIN_DELETED_STAMP)) != sizeof(FullTransactionId))
		return false;
	memcpy(&fxid, PageGetItem(page, PageGetItemId(page, FOREIN_DELETED_STAMP)),
		   sizeof(FullTransactionId));
	return GlobalVisCheckRemovableFullXid(NULL, fxid);
}

/*
 * Bulk deletion of all index entries pointing to a set of heap tuples.
 * The set is given by a callback that says whether a heap TID is dead.
 */
IndexBulkDeleteResult *
forein_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
				  IndexBulkDeleteCallback callback, void *callback_state)
{
	ForeinVacState vstate;

	if (stats == NULL)
		stats = (IndexBulkDeleteResult *) palloc0(sizeof(IndexBulkDeleteResult));

	vstate.info = info;
	vstate.stats = stats;
	vstate.callback = callback;
	vstate.callback_state = callback_state;
	forein_vacuum_scan(&vstate);

	return stats;
}

/*
 * Post-VACUUM cleanup.  When bulk delete did not run (nothing to delete, or
 * an insert-driven autovacuum), scan anyway: that is what recycles pages
 * deleted by earlier VACUUMs and what counts the index tuples.  The metapage
 * records nothing that would let us skip the scan safely, so unlike nbtree
 * we always do it.
 */
IndexBulkDeleteResult *
forein_vacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	/* No-op in ANALYZE ONLY mode */
	if (info->analyze_only)
		return stats;

	if (stats == NULL)
	{
		ForeinVacState vstate;

		stats = (IndexBulkDeleteResult *) palloc0(sizeof(IndexBulkDeleteResult));
		vstate.info = info;
		vstate.stats = stats;
		vstate.callback = NULL;
		vstate.callback_state = NULL;
		forein_vacuum_scan(&vstate);
	}

	/* Make the pages we recorded visible to GetFreeIndexPage */
	IndexFreeSpaceMapVacuum(info->index);

	/*
	 * Concurrent splits may have made us count some tuples twice; do not
	 * believe a total above the heap's when the heap's is exact.
	 */
	if (!info->estimated_count &&
		stats->num_index_tuples > info->num_heap_tuples)
		stats->num_index_tuples = info->num_heap_tuples;

	return stats;
}

/* Remember that a block was new or deleted when the scan passed it */
static void
forein_mark_reusable(ForeinVacState *vstate, BlockNumber blkno, bool set)
{
	if (blkno >= vstate->reusable_nbits)
	{
		BlockNumber nbits;
		Size		oldbytes = (vstate->reusable_nbits + 7) / 8;
		Size		newbytes;

		if (!set)
			return;
		nbits = Max(blkno + 1, vstate->reusable_nbits * 2);
		newbytes = (nbits + 7) / 8;
		if (vstate->reusable == NULL)
			vstate->reusable = palloc0(newbytes);
		else
		{
			vstate->reusable = repalloc(vstate->reusable, newbytes);
			memset(vstate->reusable + oldbytes, 0, newbytes - oldbytes);
		}
		vstate->reusable_nbits = nbits;
	}
	if (set)
		vstate->reusable[blkno / 8] |= (uint8) (1 << (blkno % 8));
	else
		vstate->reusable[blkno / 8] &= (uint8) ~(1 << (blkno % 8));
}

static bool
forein_is_reusable(ForeinVacState *vstate, BlockNumber blkno)
{
	if (blkno >= vstate->reusable_nbits)
		return false;
	return (vstate->reusable[blkno / 8] & (1 << (blkno % 8))) != 0;
}

/*
 * Visit every page of the index, including the ones added while we run.
 */
static void
forein_vacuum_scan(ForeinVacState *vstate)
{
	IndexVacuumInfo *info = vstate->info;
	IndexBulkDeleteResult *stats = vstate->stats;
	Relation	rel = info->index;
	BlockNumber num_pages;
	BlockNumber blkno;
	bool		needLock;

	/*
	 * These describe the whole index and are recomputed by every scan;
	 * tuples_removed and pages_newly_deleted accumulate across bulk delete
	 * passes of one VACUUM.
	 */
	stats->estimated_count = false;
	stats->num_index_tuples = 0;
	stats->pages_deleted = 0;
	stats->pages_free = 0;

	/* an index of another on-disk format is not ours to change */
	forein_check_metapage(rel);

	vstate->fstate = forein_get_state(rel);
	vstate->reusable = NULL;
	vstate->reusable_nbits = 0;
	vstate->pagecxt = AllocSetContextCreate(CurrentMemoryContext,
											"forein vacuum",
											ALLOCSET_DEFAULT_SIZES);

	/*
	 * Loop until no pages were added while we scanned: a split into a new
	 * page at the end may have moved tuples we must see.  Like nbtree, take
	 * the extension lock while reading the length so that a page being
	 * added is initialized before we can read it (local relations cannot
	 * be extended concurrently).
	 */
	needLock = !RELATION_IS_LOCAL(rel);
	blkno = FOREIN_METAPAGE_BLKNO + 1;
	for (;;)
	{
		if (needLock)
			LockRelationForExtension(rel, ExclusiveLock);
		num_pages = RelationGetNumberOfBlocks(rel);
		if (needLock)
			UnlockRelationForExtension(rel, ExclusiveLock);

		if (info->report_progress)
			pgstat_progress_update_param(PROGRESS_SCAN_BLOCKS_TOTAL,
										 num_pages);

		if (blkno >= num_pages)
			break;

		for (; blkno < num_pages; blkno++)
		{
			BlockNumber right;

			right = forein_vacuum_page(vstate, blkno, false);

			/*
			 * A right link pointing back to a block that was not live when
			 * we passed it means a split moved tuples there behind our
			 * back; vacuum that chain of pages too.  Clearing the bit keeps
			 * us from visiting (and counting) such a page twice.
			 */
			while (right != InvalidBlockNumber && right < blkno &&
				   forein_is_reusable(vstate, right))
			{
				forein_mark_reusable(vstate, right, false);
				elog(DEBUG2, "forein vacuum of \"%s\": block %u links back to reused block %u",
					 RelationGetRelationName(rel), blkno, right);
				right = forein_vacuum_page(vstate, right, true);
			}

			if (info->report_progress)
				pgstat_progress_update_param(PROGRESS_SCAN_BLOCKS_DONE,
											 blkno);
		}
	}

	stats->num_pages = num_pages;

	MemoryContextDelete(vstate->pagecxt);
	if (vstate->reusable)
		pfree(vstate->reusable);
	vstate->reusable = NULL;
}

/*
 * Vacuum one page.  Returns the right link of a live leaf, else
 * InvalidBlockNumber.  With backtrack, the page is one that a concurrent
 * split filled after the main scan passed it: vacuum its tuples, but leave
 * the FSM, the page counts and page deletion to the main scan.
 */
static BlockNumber
forein_vacuum_page(ForeinVacState *vstate, BlockNumber blkno, bool backtrack)
{
	IndexVacuumInfo *info = vstate->info;
	IndexBulkDeleteResult *stats = vstate->stats;
	Relation	rel = info->index;
	Buffer		buf;
	Page		page;
	ForeinPageOpaque opaque;
	OffsetNumber offnum;
	OffsetNumber maxoff;
	BlockNumber right;
	bool		candidate;
	ForeinDelCandidate cand;

	vacuum_delay_point();

	buf = ReadBufferExtended(rel, MAIN_FORKNUM, blkno, RBM_NORMAL,
							 info->strategy);
	LockBuffer(buf, BUFFER_LOCK_SHARE);
	if (forein_vacuum_not_leaf(vstate, buf, blkno, backtrack))
		return InvalidBlockNumber;
	page = BufferGetPage(buf);
	opaque = ForeinPageGetOpaque(page);

	/*
	 * A leaf.  When removing tuples, take a cleanup lock: it waits out
	 * scans that still hold a pin on this page with TIDs they have not
	 * returned yet, so the heap cannot reuse those TIDs under them.
	 */
	if (vstate->callback)
	{
		LockBuffer(buf, BUFFER_LOCK_UNLOCK);
		LockBufferForCleanup(buf);
		/* It may have split meanwhile; only VACUUM deletes pages */
		page = BufferGetPage(buf);
		opaque = ForeinPageGetOpaque(page);
		if ((opaque->flags & FOREIN_DELETED) || opaque->level != 0)
		{
			UnlockReleaseBuffer(buf);
			return InvalidBlockNumber;
		}
	}

	maxoff = PageGetMaxOffsetNumber(page);
	if (vstate->callback && forein_vacuum_delitems(vstate, buf))
	{
		page = BufferGetPage(buf);
		opaque = ForeinPageGetOpaque(page);
		maxoff = PageGetMaxOffsetNumber(page);
	}

	for (offnum = FOREIN_FIRST_ITEM; offnum <= maxoff; offnum = OffsetNumberNext(offnum))
		stats->num_index_tuples +=
			forein_posting_count((IndexTuple) PageGetItem(page, PageGetItemId(page, offnum)));

	right = opaque->right;

	/*
	 * An empty leaf is a deletion candidate unless it is rightmost (no right
	 * sibling to take over its key space), the root, or the left half of a
	 * split whose right half still lacks a downlink.  The rest is checked
	 * again under the proper locks in forein_delete_page.
	 */
	candidate = !backtrack &&
		maxoff < FOREIN_FIRST_ITEM &&
		right != InvalidBlockNumber &&
		(opaque->flags & (FOREIN_ROOT | FOREIN_INCOMPLETE_SPLIT)) == 0;
	if (candidate)
		forein_vacuum_candidate(vstate, blkno, page, &cand);

	UnlockReleaseBuffer(buf);

	if (candidate)
	{
		if (forein_delete_page(vstate, &cand))
		{
			stats->pages_newly_deleted++;
			stats->pages_deleted++;
			/* The deleted page cannot be reused before a later VACUUM */
		}
		MemoryContextReset(vstate->pagecxt);
	}

	return right;
}

/*
 * The first look at a page, share-locked: a new or deleted page is counted
 * and, when recyclable, recorded in the FSM (by the main scan only); inner
 * pages and the metapage hold no heap TIDs.  Returns true, with buf
 * released, for all of these; false for a live leaf, still locked.
 */
static bool
forein_vacuum_not_leaf(ForeinVacState *vstate, Buffer buf, BlockNumber blkno,
					   bool backtrack)
{
	IndexBulkDeleteResult *stats = vstate->stats;
	Relation	rel = vstate->info->index;
	Page		page = BufferGetPage(buf);
	ForeinPageOpaque opaque;

	if (PageIsNew(page))
	{
		/* Never initialized (e.g. extension interrupted): free for reuse */
		if (!backtrack)
		{
			forein_mark_reusable(vstate, blkno, true);
			RecordFreeIndexPage(rel, blkno);
			stats->pages_deleted++;
			stats->pages_free++;
		}
		UnlockReleaseBuffer(buf);
		return true;
	}

	forein_check_page(rel, page, blkno);
	opaque = ForeinPageGetOpaque(page);

	if (opaque->flags & FOREIN_DELETED)
	{
		if (!backtrack)
		{
			forein_mark_reusable(vstate, blkno, true);
			if (forein_page_recyclable(page))
			{
				RecordFreeIndexPage(rel, blkno);
				stats->pages_free++;
			}
			stats->pages_deleted++;
		}
		UnlockReleaseBuffer(buf);
		return true;
	}

	/* Inner pages and the metapage hold no heap TIDs */
	if (opaque->level != 0 || (opaque->flags & FOREIN_META))
	{
		UnlockReleaseBuffer(buf);
		return true;
	}
	return false;
}

/*
 * Remove the entries of a cleanup-locked leaf whose heap TIDs the callback
 * says are dead, in one WAL record (forein_change_leaf), as nbtree's
 * _bt_delitems_vacuum.  Returns whether the page changed.
 */
static bool
forein_vacuum_delitems(ForeinVacState *vstate, Buffer buf)
{
	Relation	rel = vstate->info->index;
	ForeinVacDead dead;
	bool		changed = false;
	MemoryContext oldcxt;

	oldcxt = MemoryContextSwitchTo(vstate->pagecxt);
	forein_vacuum_collect(vstate, BufferGetPage(buf), &dead);
	if (dead.ndeletable > 0 || dead.nupdated > 0)
	{
		forein_change_leaf(rel, buf, dead.deletable, dead.ndeletable,
						   dead.updated_off, dead.updated, dead.nupdated,
						   true, InvalidTransactionId);
		vstate->stats->tuples_removed += dead.ndeletable + dead.removed_tids;
		changed = true;
	}
	MemoryContextSwitchTo(oldcxt);
	MemoryContextReset(vstate->pagecxt);
	return changed;
}

/*
 * Ask the callback about every heap TID of a leaf: an entry all of whose
 * TIDs are dead is to be deleted, a posting tuple with only some dead is
 * to be replaced by a tuple of its live TIDs (formed in the current memory
 * context).
 */
static void
forein_vacuum_collect(ForeinVacState *vstate, Page page, ForeinVacDead *dead)
{
	OffsetNumber maxoff = PageGetMaxOffsetNumber(page);
	OffsetNumber offnum;
	ItemPointerData live[FOREIN_MAX_TIDS_PER_PAGE];

	dead->ndeletable = 0;
	dead->nupdated = 0;
	dead->removed_tids = 0;
	for (offnum = FOREIN_FIRST_ITEM; offnum <= maxoff;
		 offnum = OffsetNumberNext(offnum))
	{
		IndexTuple	itup;
		int			ntids;
		int			nlive = 0;
		int			k;

		itup = (IndexTuple) PageGetItem(page, PageGetItemId(page, offnum));
		ntids = forein_posting_count(itup);
		if (ntids == 1)
		{
			if (vstate->callback(&itup->t_tid, vstate->callback_state))
				dead->deletable[dead->ndeletable++] = offnum;
			continue;
		}
		/* a posting tuple: keep its live TIDs, or remove it */
		for (k = 0; k < ntids; k++)
		{
			ItemPointer tid = forein_posting_tid(itup, k);

			if (!vstate->callback(tid, vstate->callback_state))
				live[nlive++] = *tid;
		}
		if (nlive == 0)
			dead->deletable[dead->ndeletable++] = offnum;
		else if (nlive < ntids)
		{
			dead->updated_off[dead->nupdated] = offnum;
			dead->updated[dead->nupdated++] = forein_form_posting(itup, live, nlive);
		}
		dead->removed_tids += ntids - nlive - (nlive == 0 ? 1 : 0);
	}
}

/*
 * Remember what the scan saw of an empty leaf that may be deleted, in the
 * page memory context (reset once the deletion was tried): its links and
 * a copy of its low key, with which the parent is found without a lock.
 */
static void
forein_vacuum_candidate(ForeinVacState *vstate, BlockNumber blkno, Page page,
						ForeinDelCandidate *cand)
{
	ForeinPageOpaque opaque = ForeinPageGetOpaque(page);
	MemoryContext oldcxt = MemoryContextSwitchTo(vstate->pagecxt);

	cand->target = blkno;
	cand->left = opaque->left;
	cand->right = opaque->right;
	if (opaque->left == InvalidBlockNumber)
		cand->lokey = NULL;
	else
		cand->lokey = CopyIndexTuple((IndexTuple)
									 PageGetItem(page,
												 PageGetItemId(page, FOREIN_LOKEY)));
	MemoryContextSwitchTo(oldcxt);
}

void
forein_set_downlink(Page page, OffsetNumber off, BlockNumber child)
{
	IndexTuple	itup;

	if (off == FOREIN_FIRST_CHILD)
	{
		ForeinPageGetOpaque(page)->first_child = child;
		return;
	}
	itup = (IndexTuple) PageGetItem(page, PageGetItemId(page, off));
	memcpy((char *) itup + IndexTupleSize(itup) - sizeof(BlockNumber), &child,
		   sizeof(BlockNumber));
}

/*
 * Find the level-1 page holding the target's downlink: descend with the
 * target's low key (its downlink's separator), then move right in case the
 * parent split since.  Holds no lock on return.  Gives up (returns
 * InvalidBlockNumber) unless the downlink to the right sibling follows on
 * the same parent page: the rightmost child of a parent is never deleted.
 */
static BlockNumber
forein_find_parent(Relation index, ForeinState *fstate,
				   ForeinDelCandidate *cand)
{
	ForeinSearchKey key;
	ForeinStack stack = NULL;
	Buffer		buf;
	BlockNumber result = InvalidBlockNumber;

	if (cand->lokey == NULL)
	{
		memset(&key, 0, sizeof(key));
		key.unbounded = true;
		key.tidmode = FOREIN_TID_BEFORE;
	}
	else
		forein_key_from_tuple(fstate, cand->lokey, &key);

	buf = forein_descend(index, fstate, &key, 1, BUFFER_LOCK_SHARE, &stack,
						 false);
	forein_free_stack(stack);
	if (!BufferIsValid(buf))
		return InvalidBlockNumber;

	for (;;)
	{
		Page		page = BufferGetPage(buf);
		ForeinPageOpaque opaque = ForeinPageGetOpaque(page);
		BlockNumber next;

		if ((opaque->flags & FOREIN_DELETED) == 0 && opaque->level == 1)
		{
			OffsetNumber off = forein_inner_find_child(page, cand->target);

			if (off != InvalidOffsetNumber)
			{
				if (off < PageGetMaxOffsetNumber(page) &&
					forein_inner_child(page, off + 1) == cand->right)
					result = BufferGetBlockNumber(buf);
				break;
			}
		}
		else if (opaque->level != 1)
			break;				/* not the level we asked for: give up */

		next = opaque->right;
		if (next == InvalidBlockNumber)
			break;
		UnlockReleaseBuffer(buf);
		CHECK_FOR_INTERRUPTS();
		buf = ReadBuffer(index, next);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
	}

	UnlockReleaseBuffer(buf);
	return result;
}

/*
 * Try to delete an empty leaf found by the scan.  Returns true if deleted;
 * false when anything changed since the scan saw the page or a condition
 * for deletion does not hold, in which case a later VACUUM tries again.
 */
static bool
forein_delete_page(ForeinVacState *vstate, ForeinDelCandidate *cand)
{
	Relation	rel = vstate->info->index;
	ForeinState *fstate = vstate->fstate;
	BlockNumber root;
	uint32		root_level;
	BlockNumber parent;
	ForeinDelLocked locked;
	bool		unlinked;

	/* A one-level tree's only leaf is the root */
	forein_get_root(rel, &root, &root_level);
	if (root_level == 0 || root == cand->target)
		return false;

	parent = forein_find_parent(rel, fstate, cand);
	if (parent == InvalidBlockNumber)
	{
		elog(DEBUG2, "forein vacuum of \"%s\": empty block %u kept (rightmost child of its parent, or its downlink moved)",
			 RelationGetRelationName(rel), cand->target);
		return false;
	}

	forein_delete_lock(rel, cand, parent, &locked);

	if (!forein_delete_recheck(rel, cand, &locked))
	{
		elog(DEBUG2, "forein vacuum of \"%s\": block %u changed before it could be deleted",
			 RelationGetRelationName(rel), cand->target);
		forein_delete_unlock(&locked);
		return false;
	}

	unlinked = forein_unlink_page(rel, cand, &locked);
	forein_delete_unlock(&locked);
	if (!unlinked)
		return false;

	/* The target is gone and R's interval grew */
	forein_offload_node_event(rel, cand->target);
	forein_offload_node_event(rel, cand->right);

	return true;
}

/*
 * Pin and exclusively lock the pages a deletion changes, in the lock order
 * of the file header.  Nothing is checked yet: forein_delete_recheck.
 */
static void
forein_delete_lock(Relation rel, ForeinDelCandidate *cand, BlockNumber parent,
				   ForeinDelLocked *locked)
{
	locked->lbuf = InvalidBuffer;
	locked->parent = parent;
	locked->toff = InvalidOffsetNumber;

	/* Left to right on the leaf level, then the parent */
	if (cand->left != InvalidBlockNumber)
	{
		locked->lbuf = ReadBuffer(rel, cand->left);
		LockBuffer(locked->lbuf, BUFFER_LOCK_EXCLUSIVE);
	}
	locked->tbuf = ReadBuffer(rel, cand->target);
	LockBuffer(locked->tbuf, BUFFER_LOCK_EXCLUSIVE);
	locked->rbuf = ReadBuffer(rel, cand->right);
	LockBuffer(locked->rbuf, BUFFER_LOCK_EXCLUSIVE);
	locked->pbuf = ReadBuffer(rel, parent);
	LockBuffer(locked->pbuf, BUFFER_LOCK_EXCLUSIVE);
}

/*
 * Release the pages forein_delete_lock locked: the parent first, then the
 * leaves right to left.
 */
static void
forein_delete_unlock(ForeinDelLocked *locked)
{
	UnlockReleaseBuffer(locked->pbuf);
	UnlockReleaseBuffer(locked->rbuf);
	UnlockReleaseBuffer(locked->tbuf);
	if (BufferIsValid(locked->lbuf))
		UnlockReleaseBuffer(locked->lbuf);
}

/*
 * The opaque of a locked page of a deletion, after forein_check_page; NULL
 * when the page is new (all zeroes), which cannot be deleted around.
 */
static ForeinPageOpaque
forein_delete_opaque(Relation rel, Buffer buf, BlockNumber blkno)
{
	Page		page = BufferGetPage(buf);

	if (PageIsNew(page))
		return NULL;
	forein_check_page(rel, page, blkno);
	return ForeinPageGetOpaque(page);
}

/*
 * Re-verify everything under the locks: the scan saw the pages without
 * them, and the parent was found with none held.  The left sibling, the
 * target and the right sibling must still link to each other, the target
 * must still be an empty live leaf, and the parent must hold the target's
 * downlink followed by its right sibling's.  Sets locked->toff to the
 * target's downlink on the parent.
 */
static bool
forein_delete_recheck(Relation rel, ForeinDelCandidate *cand,
					  ForeinDelLocked *locked)
{
	Page		tpage = BufferGetPage(locked->tbuf);
	Page		rpage = BufferGetPage(locked->rbuf);
	Page		ppage = BufferGetPage(locked->pbuf);
	ForeinPageOpaque lop;
	ForeinPageOpaque top;
	ForeinPageOpaque rop;
	ForeinPageOpaque pop;
	OffsetNumber toff;

	if (BufferIsValid(locked->lbuf))
	{
		lop = forein_delete_opaque(rel, locked->lbuf, cand->left);
		/* An incomplete split toward the target: it has no downlink */
		if (lop == NULL ||
			(lop->flags & (FOREIN_DELETED | FOREIN_INCOMPLETE_SPLIT)) != 0 ||
			lop->level != 0 || lop->right != cand->target)
			return false;
	}

	forein_check_page(rel, tpage, cand->target);
	top = ForeinPageGetOpaque(tpage);
	if ((top->flags & (FOREIN_DELETED | FOREIN_ROOT |
					   FOREIN_INCOMPLETE_SPLIT | FOREIN_META)) != 0 ||
		top->level != 0 ||
		top->left != cand->left || top->right != cand->right ||
		PageGetMaxOffsetNumber(tpage) >= FOREIN_FIRST_ITEM ||
		PageGetMaxOffsetNumber(tpage) < FOREIN_LOKEY)
		return false;

	/*
	 * R must not be mid-split either: keep the finish-split path of
	 * inserters away from a downlink we are moving.
	 */
	rop = forein_delete_opaque(rel, locked->rbuf, cand->right);
	if (rop == NULL ||
		(rop->flags & (FOREIN_DELETED | FOREIN_INCOMPLETE_SPLIT)) != 0 ||
		rop->level != 0 || rop->left != cand->target ||
		PageGetMaxOffsetNumber(rpage) < FOREIN_LOKEY)
		return false;

	pop = forein_delete_opaque(rel, locked->pbuf, locked->parent);
	if (pop == NULL || (pop->flags & FOREIN_DELETED) != 0 || pop->level != 1)
		return false;

	/* The downlink may have shifted, or moved right in a split */
	toff = forein_inner_find_child(ppage, cand->target);
	if (toff == InvalidOffsetNumber ||
		toff >= PageGetMaxOffsetNumber(ppage) ||
		forein_inner_child(ppage, toff + 1) != cand->right)
		return false;
	locked->toff = toff;
	return true;
}

/*
 * forein_unlink_page with forein's own WAL (or none): the four pages
 * changed in one critical section and logged as one UNLINK record.  R's
 * room for its new low key is checked first, which PageIndexTupleOverwrite
 * would otherwise find inside the critical section.
 */
static bool
forein_unlink_direct(Relation rel, ForeinDelCandidate *cand,
					 ForeinDelLocked *locked, IndexTuple tlokey)
{
	Page		rpage = BufferGetPage(locked->rbuf);
	Page		tpage = BufferGetPage(locked->tbuf);
	Page		ppage = BufferGetPage(locked->pbuf);
	Size		oldsize = MAXALIGN(ItemIdGetLength(PageGetItemId(rpage, FOREIN_LOKEY)));
	FullTransactionId stamp = ReadNextFullTransactionId();

	if (MAXALIGN(IndexTupleSize(tlokey)) > oldsize + PageGetExactFreeSpace(rpage) ||
		PageGetFreeSpace(tpage) < MAXALIGN(sizeof(FullTransactionId)))
	{
		elog(DEBUG2, "forein vacuum of \"%s\": empty block %u kept: its low key does not fit on right sibling %u",
			 RelationGetRelationName(rel), cand->target, cand->right);
		pfree(tlokey);
		return false;
	}

	START_CRIT_SECTION();
	if (!PageIndexTupleOverwrite(rpage, FOREIN_LOKEY, (Item) tlokey,
								 IndexTupleSize(tlokey)) ||
		!forein_mark_deleted(tpage, stamp))
		elog(PANIC, "forein: failed to unlink block %u of index \"%s\"",
			 cand->target, RelationGetRelationName(rel));
	ForeinPageGetOpaque(rpage)->left = cand->left;
	ForeinPageGetOpaque(rpage)->version++;
	if (BufferIsValid(locked->lbuf))
		ForeinPageGetOpaque(BufferGetPage(locked->lbuf))->right = cand->right;
	forein_set_downlink(ppage, locked->toff, cand->right);
	PageIndexTupleDelete(ppage, locked->toff + 1);
	MarkBufferDirty(locked->rbuf);
	MarkBufferDirty(locked->tbuf);
	if (BufferIsValid(locked->lbuf))
		MarkBufferDirty(locked->lbuf);
	MarkBufferDirty(locked->pbuf);
	if (RelationNeedsWAL(rel))
	{
		XLogRecPtr	lsn = forein_log_unlink(locked->lbuf, locked->tbuf,
											locked->rbuf, locked->pbuf,
											cand->left, locked->toff, stamp);

		PageSetLSN(rpage, lsn);
		PageSetLSN(tpage, lsn);
		if (BufferIsValid(locked->lbuf))
			PageSetLSN(BufferGetPage(locked->lbuf), lsn);
		PageSetLSN(ppage, lsn);
	}
	END_CRIT_SECTION();
	pfree(tlokey);
	return true;
}

/*
 * Delete the rechecked target: R takes its low key and its place in the
 * sibling chain, the target is flagged deleted and stamped with the next
 * full transaction ID (forein_page_recyclable), and the target's downlink
 * is repointed to R while R's old one is removed.  Returns false, having
 * changed nothing, when R has no room for its new low key.  The caller
 * still holds and releases the locks.
 */
static bool
forein_unlink_page(Relation rel, ForeinDelCandidate *cand,
				   ForeinDelLocked *locked)
{
	Page		tpage = BufferGetPage(locked->tbuf);
	Page		rpage;
	Page		lpage;
	Page		ppage;
	ForeinPageOpaque rop;
	ForeinPageOpaque lop;
	GenericXLogState *gxstate;
	IndexTuple	tlokey;

	/*
	 * All four pages in one record: a crash leaves either the old tree or
	 * the new one.  Register the right sibling first so that we can still
	 * abort cleanly if its new low key does not fit.
	 */
	tlokey = CopyIndexTuple((IndexTuple)
							PageGetItem(tpage, PageGetItemId(tpage, FOREIN_LOKEY)));
	if (forein_wal_rmgr_ready || !RelationNeedsWAL(rel))
		return forein_unlink_direct(rel, cand, locked, tlokey);

	gxstate = forein_xlog_start(rel);
	rpage = forein_register_page(gxstate, locked->rbuf, 0);
	if (!PageIndexTupleOverwrite(rpage, FOREIN_LOKEY, (Item) tlokey,
								 IndexTupleSize(tlokey)))
	{
		elog(DEBUG2, "forein vacuum of \"%s\": empty block %u kept: its low key does not fit on right sibling %u",
			 RelationGetRelationName(rel), cand->target, cand->right);
		forein_xlog_abort(gxstate);
		pfree(tlokey);
		return false;
	}
	rop = ForeinPageGetOpaque(rpage);
	rop->left = cand->left;
	rop->version++;

	tpage = forein_register_page(gxstate, locked->tbuf, 0);
	if (!forein_mark_deleted(tpage, ReadNextFullTransactionId()))
		elog(ERROR, "forein: failed to stamp deleted block %u of index \"%s\"",
			 cand->target, RelationGetRelationName(rel));

	if (BufferIsValid(locked->lbuf))
	{
		lpage = forein_register_page(gxstate, locked->lbuf, 0);
		lop = ForeinPageGetOpaque(lpage);
		lop->right = cand->right;
	}

	ppage = forein_register_page(gxstate, locked->pbuf, 0);
	forein_set_downlink(ppage, locked->toff, cand->right);
	PageIndexTupleDelete(ppage, locked->toff + 1);

	forein_xlog_finish(gxstate);
	pfree(tlokey);
	return true;
}
