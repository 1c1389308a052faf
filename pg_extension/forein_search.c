/*-------------------------------------------------------------------------
 *
 * forein_search.c
 *	  Descending the tree: binary search within a page, moving right, and
 *	  starting from a hardware hint with validation and fallback.
 *
 * A hint names a node and its level.  It is accepted only if the page is a
 * live forein page of that level whose low key does not exceed the search
 * key; then the usual Lehman-Yao move-right handles a high key that is now
 * too small (at most FOREIN_MAX_HINT_MOVE_RIGHTS steps, shared
 * with the engine in forein/word.h, else the hint is dropped).
 * The primary (deepest) hint is tried first, then the bottom-line node, then
 * the root.  Nothing a hint says is trusted beyond that check, so a stale,
 * torn or random hint can only cost time.
 *
 * pg_extension/forein_search.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "forein.h"
#include "forein_offload_int.h"
#include "miscadmin.h"
#include "utils/rel.h"

/* The int64 value of a non-NULL integer-like tuple */
static inline int64
tuple_int(ForeinState *state, IndexTuple itup)
{
	char	   *data = (char *) itup + IndexInfoFindDataOffset(itup->t_info);

	if (state->cols[0].typlen == 2)
		return *(int16 *) data;
	if (state->cols[0].typlen == 4)
		return *(int32 *) data;
	return *(int64 *) data;
}

#define ITEM_AT(page, off) ((IndexTuple) PageGetItem(page, PageGetItemId(page, off)))

/*
 * forein_compare for a non-NULL integer-like key, inlined: the value
 * comparison decides almost always; ties (the TID) take the general path.
 */
static inline int
compare_int(ForeinState *state, const ForeinSearchKey *key, IndexTuple itup)
{
	int64		v;

	if (IndexTupleHasNulls(itup))
		return -1;
	v = tuple_int(state, itup);
	if (key->vals[0].ival != v)
		return key->vals[0].ival > v ? 1 : -1;
	return forein_compare(state, key, itup);
}

static inline bool
can_interpolate(ForeinState *state, const ForeinSearchKey *key)
{
	const ForeinColumn *col = &state->cols[0];

	/* one ASC NULLS LAST integer-like column (no INCLUDE), a plain value */
	return state->natts == 1 && !col->desc && !col->nulls_first &&
		col->kind != FOREIN_KEY_UUID && col->kind != FOREIN_KEY_GENERIC &&
		!key->unbounded && key->nvals == 1 && !key->vals[0].isnull &&
		!key->vals[0].use_proc;
}

#define COMPARE(fast, state, key, itup) \
	((fast) ? compare_int(state, key, itup) : forein_compare(state, key, itup))

/*
 * Starts loading the line pointer of item `off` and, on a page whose items
 * were written in key order (a built leaf: each tuple sits just below the one
 * before, all of one size), the tuple it will point to.  Both loads are then
 * in flight at once instead of one after the other.  Only addresses are
 * computed from what is in cache; a wrong prediction costs one line.
 */
static inline void
prefetch_item(Page page, OffsetNumber first, OffsetNumber off)
{
#if defined(__GNUC__) || defined(__clang__)
	ItemId		firstid = PageGetItemId(page, first);
	int64		tuple = (int64) ItemIdGetOffset(firstid) -
		(int64) (off - first) * MAXALIGN(ItemIdGetLength(firstid));

	__builtin_prefetch(PageGetItemId(page, off));
	if (tuple >= (int64) SizeOfPageHeaderData && tuple < BLCKSZ)
		__builtin_prefetch((char *) page + tuple);
#endif
}

/*
 * Narrows [*low, *high) for an integer-like key by interpolating, then
 * galloping from the guess: on the dense keys typical of serial columns the
 * guess is exact, so a lookup touches two or three items instead of a binary
 * search's nine, each a likely cache miss.  The final binary search keeps it
 * exact.  A page with both bounds interpolates between them: a hinted
 * descent has just read them to validate the page, so the guess costs no
 * load, and the guess's line pointer and tuple are fetched together.
 * Otherwise it interpolates between the first and last items.
 */
static void
interpolate(ForeinState *state, Page page, const ForeinSearchKey *key,
			OffsetNumber *low, OffsetNumber *high)
{
	OffsetNumber lo = *low;
	OffsetNumber hi = *high - 1;	/* last item */
	IndexTuple	first = NULL;
	IndexTuple	last = NULL;
	double		v0;
	double		v1;
	double		slots;			/* items the interval [v0, v1] spreads over */
	double		k = (double) key->vals[0].ival;
	OffsetNumber guess;
	OffsetNumber step;

	if (!ForeinPageIsLeftmost(page) && !ForeinPageIsRightmost(page))
	{
		first = ITEM_AT(page, FOREIN_LOKEY);
		last = ITEM_AT(page, FOREIN_HIKEY);
		slots = hi - lo + 1;	/* the high key is past the last item */
	}
	if (first == NULL || IndexTupleHasNulls(first) || IndexTupleHasNulls(last))
	{
		first = ITEM_AT(page, lo);
		last = ITEM_AT(page, hi);
		slots = hi - lo;
		if (IndexTupleHasNulls(first) || IndexTupleHasNulls(last))
			return;
	}
	/*
	 * In double: an int8 key's span can exceed int64.  Multiplied before
	 * dividing, so that dense keys (integers below 2^53) give the exact item.
	 */
	v0 = (double) tuple_int(state, first);
	v1 = (double) tuple_int(state, last);
	if (k < v0 || k > v1 || v1 <= v0)
		return;
	guess = lo + (OffsetNumber) Min((k - v0) * slots / (v1 - v0), (double) (hi - lo));
	prefetch_item(page, lo, guess);

	if (compare_int(state, key, ITEM_AT(page, guess)) > 0)
	{
		/* the answer is right of guess: gallop right */
		for (step = 1;; step *= 2)
		{
			OffsetNumber probe = guess + step;

			if (probe >= *high)
			{
				*low = guess + 1;
				return;
			}
			if (compare_int(state, key, ITEM_AT(page, probe)) <= 0)
			{
				*low = guess + 1;
				*high = probe + 1;
				return;
			}
			guess = probe;
		}
	}
	/* the answer is at or left of guess: gallop left */
	*high = guess + 1;
	for (step = 1;; step *= 2)
	{
		OffsetNumber probe;

		if (guess - lo <= step)
			return;
		probe = guess - step;
		if (compare_int(state, key, ITEM_AT(page, probe)) > 0)
		{
			*low = probe + 1;
			return;
		}
		*high = probe + 1;
		guess = probe;
	}
}

/* First item >= key on a leaf (maxoff + 1 if none) */
OffsetNumber
forein_binsearch_leaf(ForeinState *state, Page page, const ForeinSearchKey *key)
{
	OffsetNumber low = FOREIN_FIRST_ITEM;
	OffsetNumber high = PageGetMaxOffsetNumber(page) + 1;
	bool		fast = can_interpolate(state, key);

	if (high - low > 16 && fast)
		interpolate(state, page, key, &low, &high);
	while (low < high)
	{
		OffsetNumber mid = low + (high - low) / 2;

		if (COMPARE(fast, state, key, ITEM_AT(page, mid)) > 0)
			low = mid + 1;
		else
			high = mid;
	}
	return low;
}

/*
 * Position of child on an inner page (FOREIN_FIRST_CHILD for the first
 * child), or InvalidOffsetNumber
 */
OffsetNumber
forein_inner_find_child(Page page, BlockNumber child)
{
	OffsetNumber maxoff = PageGetMaxOffsetNumber(page);
	OffsetNumber off;

	for (off = FOREIN_FIRST_CHILD; off <= maxoff; off = OffsetNumberNext(off))
		if (forein_inner_child(page, off) == child)
			return off;
	return InvalidOffsetNumber;
}

/*
 * The position to follow on an inner page (forein_inner_child): the last
 * downlink whose separator is <= key, else FOREIN_FIRST_CHILD.
 */
OffsetNumber
forein_binsearch_inner(ForeinState *state, Page page, const ForeinSearchKey *key)
{
	OffsetNumber low = FOREIN_FIRST_ITEM;
	OffsetNumber high = PageGetMaxOffsetNumber(page) + 1;
	bool		fast = can_interpolate(state, key);

	while (low < high)
	{
		OffsetNumber mid = low + (high - low) / 2;
		IndexTuple	itup = (IndexTuple) PageGetItem(page, PageGetItemId(page, mid));

		if (COMPARE(fast, state, key, itup) >= 0)
			low = mid + 1;
		else
			high = mid;
	}
	return low - 1;
}

/*
 * Moves right while the key lies at or beyond the page's high key, or the
 * page was deleted (its right link leads to the page that took its keys).
 */
Buffer
forein_moveright(Relation index, ForeinState *state, Buffer buf,
				 const ForeinSearchKey *key, int access)
{
	for (;;)
	{
		Page		page = BufferGetPage(buf);
		BlockNumber right;

		if (!ForeinPageIsDeleted(page) && !forein_page_hi_le(state, page, key))
			return buf;
		right = ForeinPageGetOpaque(page)->right;
		if (right == InvalidBlockNumber)
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("index \"%s\": deleted or bounded page %u has no right sibling",
							RelationGetRelationName(index), BufferGetBlockNumber(buf))));
		forein_relbuf(buf);
		CHECK_FOR_INTERRUPTS();
		buf = forein_getbuf(index, right, access);
	}
}

void
forein_free_stack(ForeinStack stack)
{
	while (stack != NULL)
	{
		ForeinStack parent = stack->parent;

		pfree(stack);
		stack = parent;
	}
}

/*
 * Is the hinted node, a live node of the hinted level, one that a refresh
 * would no longer name for this key?  An image computed from the current
 * tree maps a word only to a node whose word interval holds it, so a node
 * whose interval has lost the key's word shows that the tree changed since
 * the image (a split, or a deleted page reused).  A node that still holds
 * the word is not: keys sharing a word across a bound (long common text
 * prefixes) are rejected or moved right by the freshest image too, and
 * refreshing would not help them.
 */
static bool
hint_outdated(ForeinState *state, Page page, const ForeinSearchKey *key,
			  OffsetNumber bound)
{
	IndexTuple	b = (IndexTuple) PageGetItem(page, PageGetItemId(page, bound));
	uint64		ceil;
	bool		in_range;

	/*
	 * Only the bound the key failed against: the low key's ceiling (as
	 * forein_page_interval computes it) above the key's word, or the high
	 * key's at or below it.  One word, not two: a key of a long shared
	 * prefix may fail here at every lookup, and its word may cost a
	 * strxfrm.
	 */
	in_range = forein_word_ceil(forein_tuple_word(state, b),
								state->nkeys == 1 && ForeinTidIsMinimal(&b->t_tid),
								&ceil);
	if (bound == FOREIN_LOKEY)
		return !in_range || key->word < ceil;
	return in_range && key->word >= ceil;
}

/*
 * Validates a hinted node; returns it locked, or InvalidBuffer.  A hint
 * that the tree has outgrown (rejected, or moved right off a node that no
 * longer holds the key) flags the index's image as stale, so the offload
 * worker refreshes it.  Page splits flag it too, but only where they
 * happen: on a hot standby they are replayed by the startup process, and
 * this is how a standby's image learns of them (forein_offload_hint_stale).
 */
static Buffer
try_hint(Relation index, ForeinState *state, BlockNumber blkno, uint16 level,
		 uint32 target_level, const ForeinSearchKey *key, int access,
		 int *moves)
{
	Buffer		buf;
	Page		page;
	ForeinPageOpaque opaque;

	if (blkno == InvalidBlockNumber || blkno == FOREIN_METAPAGE_BLKNO ||
		level < target_level)
		return InvalidBuffer;
	buf = forein_read_hinted(index, blkno);
	LockBuffer(buf, level == target_level ? access : BUFFER_LOCK_SHARE);
	page = BufferGetPage(buf);
	opaque = ForeinPageGetOpaque(page);
	*moves = 0;
	if (PageIsNew(page) ||
		PageGetSpecialSize(page) != MAXALIGN(sizeof(ForeinPageOpaqueData)) ||
		opaque->page_id != FOREIN_PAGE_ID ||
		(opaque->flags & (FOREIN_META | FOREIN_DELETED)) != 0 ||
		opaque->level != level)
	{
		/* no longer a node of that level: the image predates the tree */
		forein_relbuf(buf);
		forein_offload_hint_stale(index);
		return InvalidBuffer;
	}
	if (!forein_page_lo_le(state, page, key))
	{
		bool		outdated = hint_outdated(state, page, key, FOREIN_LOKEY);

		forein_relbuf(buf);
		if (outdated)
			forein_offload_hint_stale(index);
		return InvalidBuffer;
	}
	if (!forein_page_hi_le(state, page, key))
		return buf;
	if (hint_outdated(state, page, key, FOREIN_HIKEY))
		forein_offload_hint_stale(index);
	/* move right within the hint's budget */
	do
	{
		BlockNumber right = opaque->right;

		forein_relbuf(buf);
		if (++(*moves) > FOREIN_MAX_HINT_MOVE_RIGHTS)
			return InvalidBuffer;
		buf = ReadBuffer(index, right);
		LockBuffer(buf, level == target_level ? access : BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		forein_check_page(index, page, right);
		opaque = ForeinPageGetOpaque(page);
	} while (ForeinPageIsDeleted(page) || forein_page_hi_le(state, page, key));
	return buf;
}

/*
 * Locks the root for a descent.  The cached root may be a former root: it is
 * still a correct start (leftmost of its level, never deleted; descents move
 * right), so it is used once more and the cache refreshed next time.
 */
static Buffer
get_root_buf(Relation index, ForeinState *state, uint32 target_level,
			 int access)
{
	for (;;)
	{
		Buffer		buf;
		ForeinPageOpaque opaque;
		uint32		level;

		if (state->root == InvalidBlockNumber || state->root_level < target_level)
		{
			forein_get_root(index, &state->root, &state->root_level);
			if (state->root_level < target_level)
				return InvalidBuffer;
		}
		level = state->root_level;
		buf = forein_getbuf(index, state->root,
							level == target_level ? access : BUFFER_LOCK_SHARE);
		opaque = ForeinPageGetOpaque(BufferGetPage(buf));
		if (opaque->level == level && !(opaque->flags & FOREIN_DELETED))
		{
			if (!(opaque->flags & FOREIN_ROOT))
				state->root = InvalidBlockNumber;
			return buf;
		}
		forein_relbuf(buf);
		state->root = InvalidBlockNumber;
	}
}

/*
 * Descends to the node of target_level whose range holds key and returns
 * it locked with `access` (inner levels are read with share locks).  With a
 * stack pointer, records the path (from the start node down) for parent
 * insertion.  Returns InvalidBuffer only if the tree has no such level.
 */
Buffer
forein_descend(Relation index, ForeinState *state, const ForeinSearchKey *key,
			   uint32 target_level, int access, ForeinStack *stack,
			   bool use_hints)
{
	return forein_descend_counted(index, state, key, target_level, access,
								  stack, use_hints, NULL);
}

/*
 * forein_descend that also adds a leaf descent to a scan's counters (the
 * same event forein_offload_count records for forein_stats).
 */
Buffer
forein_descend_counted(Relation index, ForeinState *state,
					   const ForeinSearchKey *key, uint32 target_level,
					   int access, ForeinStack *stack, bool use_hints,
					   ForeinScanCounts *counts)
{
	Buffer		buf = InvalidBuffer;
	ForeinStart start = FOREIN_START_ROOT;
	int			moves = 0;

	if (stack)
		*stack = NULL;

	if (use_hints && key->has_word)
	{
		ForeinHint hint;

		if (forein_offload_hint(index, key->word, &hint))
		{
			buf = try_hint(index, state, hint.primary, hint.primary_level,
						   target_level, key, access, &moves);
			if (BufferIsValid(buf))
				start = FOREIN_START_HINT;
			else
			{
				buf = try_hint(index, state, hint.secondary,
							   hint.secondary_level, target_level, key,
							   access, &moves);
				start = BufferIsValid(buf) ? FOREIN_START_SECONDARY : FOREIN_START_FALLBACK;
			}
		}
	}
	if (!BufferIsValid(buf))
	{
		moves = 0;
		buf = get_root_buf(index, state, target_level, access);
		if (!BufferIsValid(buf))
			return InvalidBuffer;
	}

	for (;;)
	{
		Page		page;
		ForeinPageOpaque opaque;
		OffsetNumber off;
		BlockNumber child;
		uint32		level;

		buf = forein_moveright(index, state, buf, key,
							   ForeinPageGetOpaque(BufferGetPage(buf))->level == target_level ?
							   access : BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		opaque = ForeinPageGetOpaque(page);
		level = opaque->level;
		if (level == target_level)
			break;
		if (level < target_level)
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("index \"%s\": descent reached level %u above the target %u",
							RelationGetRelationName(index), level, target_level)));
		off = forein_binsearch_inner(state, page, key);
		child = forein_inner_child(page, off);
		if (child == InvalidBlockNumber)
			ereport(ERROR,
					(errcode(ERRCODE_INDEX_CORRUPTED),
					 errmsg("index \"%s\": inner page %u has no first child",
							RelationGetRelationName(index), BufferGetBlockNumber(buf))));
		if (stack)
		{
			ForeinStack entry = palloc(sizeof(ForeinStackData));

			entry->blkno = BufferGetBlockNumber(buf);
			entry->parent = *stack;
			*stack = entry;
		}
		forein_relbuf(buf);
		buf = forein_getbuf(index, child,
							level - 1 == target_level ? access : BUFFER_LOCK_SHARE);

		/*
		 * A child's low key never rises, so a child whose low key exceeds
		 * the key was reused after deletion behind our back (a hot standby
		 * gets no recovery conflict for that): start over from the root.
		 */
		if (ForeinPageGetOpaque(BufferGetPage(buf))->level != level - 1 ||
			(!ForeinPageIsDeleted(BufferGetPage(buf)) &&
			 !forein_page_lo_le(state, BufferGetPage(buf), key)))
		{
			forein_relbuf(buf);
			forein_free_stack(stack ? *stack : NULL);
			if (stack)
				*stack = NULL;
			start = FOREIN_START_ROOT;
			moves = 0;
			buf = get_root_buf(index, state, target_level, access);
			if (!BufferIsValid(buf))
				return InvalidBuffer;
		}
	}

	if (target_level == 0)
	{
		forein_offload_count(index, start, moves, BufferGetBlockNumber(buf));
		if (counts)
		{
			counts->lookups++;
			if (start == FOREIN_START_HINT || start == FOREIN_START_SECONDARY)
				counts->hint_hits++;
			if (start == FOREIN_START_FALLBACK)
				counts->fallbacks++;
			counts->move_rights += moves;
		}
	}
	return buf;
}

/*
 * The leftmost or rightmost leaf, share-locked.  Walks the leftmost path
 * (first children); for the rightmost, descends with a key above every
 * position (a NULL key after every TID).
 */
Buffer
forein_get_endpoint(Relation index, ForeinState *state, bool rightmost)
{
	return forein_get_endpoint_counted(index, state, rightmost, NULL);
}

Buffer
forein_get_endpoint_counted(Relation index, ForeinState *state, bool rightmost,
							ForeinScanCounts *counts)
{
	ForeinSearchKey key;

	memset(&key, 0, offsetof(ForeinSearchKey, vals));
	if (rightmost)
	{
		/* a prefix of no values, after everything */
		key.nvals = 0;
		key.tidmode = FOREIN_TID_AFTER;
	}
	else
	{
		key.unbounded = true;
		key.tidmode = FOREIN_TID_BEFORE;
	}
	return forein_descend_counted(index, state, &key, 0, BUFFER_LOCK_SHARE,
								  NULL, false, counts);
}
