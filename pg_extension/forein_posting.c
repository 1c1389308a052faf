/*-------------------------------------------------------------------------
 *
 * forein_posting.c
 *	  Posting lists: one leaf tuple for many heap TIDs of the same key.
 *
 * Like nbtree's deduplication, a run of leaf tuples whose keys are
 * byte-for-byte identical becomes one posting tuple: the key once, then
 * the run's heap TIDs in ascending order.  Only identical images merge, so
 * equal keys with different images (numeric 1.0 and 1.00, -0 and +0) stay
 * apart and nothing about equality is assumed; and only adjacent tuples
 * merge, so (key, TID) order holds across tuples: a posting tuple sorts at
 * its first TID and covers the TIDs up to its last.
 *
 * Layout (leaf pages only; the AM bit means "downlink" on inner pages):
 *
 *	 [key tuple: header, t_tid = first TID, key data; MAXALIGN'd = base]
 *	 [ItemPointerData tids[n], ascending]  [padding]
 *	 [uint16 base][uint16 n]			   <- the tuple's last 4 bytes
 *
 * Indexes with INCLUDE columns, unique indexes and indexes with
 * deduplicate_items = off keep one tuple per TID, as btree does.
 *
 * Portions Copyright (c) 2026, forein developers
 *
 * pg_extension/forein_posting.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "forein.h"

#define TRAILER_SIZE (2 * sizeof(uint16))

static inline uint16 *
trailer(IndexTuple itup)
{
	return (uint16 *) ((char *) itup + IndexTupleSize(itup) - TRAILER_SIZE);
}

/*
 * The number of heap TIDs of a leaf tuple.  A posting tuple whose trailer
 * does not describe its own size is corruption, reported before anything
 * reads its TIDs.
 */
int
forein_posting_count(IndexTuple itup)
{
	uint16	   *tr;

	if (!ForeinTupleIsPosting(itup))
		return 1;
	tr = trailer(itup);
	if (tr[1] < 2 || tr[0] < sizeof(IndexTupleData) || tr[0] != MAXALIGN(tr[0]) ||
		forein_posting_size(tr[0], tr[1]) != IndexTupleSize(itup))
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("forein posting tuple of %zu bytes has a bad trailer (key %u bytes, %u TIDs)",
						(Size) IndexTupleSize(itup), tr[0], tr[1]),
				 errhint("Please REINDEX it.")));
	return tr[1];
}

/* The i-th heap TID of a leaf tuple (plain: its only one) */
ItemPointer
forein_posting_tid(IndexTuple itup, int i)
{
	if (!ForeinTupleIsPosting(itup))
		return &itup->t_tid;
	return (ItemPointer) ((char *) itup + trailer(itup)[0]) + i;
}

/* The last (largest) heap TID of a leaf tuple */
ItemPointer
forein_posting_last_tid(IndexTuple itup)
{
	return forein_posting_tid(itup, forein_posting_count(itup) - 1);
}

/* Bytes of a posting tuple with n TIDs over a key tuple of base bytes */
Size
forein_posting_size(Size base, int n)
{
	return MAXALIGN(base + n * sizeof(ItemPointerData) + TRAILER_SIZE);
}

/* Size of the key part of a leaf tuple */
static Size
base_size(IndexTuple itup)
{
	return ForeinTupleIsPosting(itup) ? trailer(itup)[0] : IndexTupleSize(itup);
}

Size
forein_tuple_key_size(IndexTuple itup)
{
	return base_size(itup);
}

/*
 * A leaf tuple with the key of `key` and the n ascending TIDs: a plain
 * tuple when n is 1.
 */
IndexTuple
forein_form_posting(IndexTuple key, const ItemPointerData *tids, int n)
{
	Size		base = base_size(key);
	IndexTuple	itup;

	Assert(n >= 1);
	if (n == 1)
	{
		itup = palloc(base);
		memcpy(itup, key, base);
		itup->t_info = (key->t_info & ~(INDEX_SIZE_MASK | FOREIN_POSTING_BIT)) | base;
		itup->t_tid = tids[0];
		return itup;
	}
	else
	{
		Size		size = forein_posting_size(base, n);
		uint16	   *tr;

		itup = palloc0(size);
		memcpy(itup, key, base);
		itup->t_info = (key->t_info & ~INDEX_SIZE_MASK) | size | FOREIN_POSTING_BIT;
		itup->t_tid = tids[0];
		memcpy((char *) itup + base, tids, n * sizeof(ItemPointerData));
		tr = trailer(itup);
		tr[0] = (uint16) base;
		tr[1] = (uint16) n;
		return itup;
	}
}

/* A copy of a leaf tuple's key at its first TID, without the posting list */
IndexTuple
forein_posting_key(IndexTuple itup)
{
	return forein_form_posting(itup, &itup->t_tid, 1);
}

/*
 * Copies a leaf tuple's key at its first TID (a plain tuple) to dst;
 * returns its size.
 */
Size
forein_copy_key(char *dst, IndexTuple itup)
{
	Size		base = base_size(itup);
	IndexTuple	copy = (IndexTuple) dst;

	memcpy(dst, itup, base);
	copy->t_info = (itup->t_info & ~(INDEX_SIZE_MASK | FOREIN_POSTING_BIT)) | base;
	return base;
}

/* Do two leaf tuples hold byte-identical keys? */
bool
forein_same_key_image(IndexTuple a, IndexTuple b)
{
	Size		sa = base_size(a);
	Size		off = offsetof(IndexTupleData, t_info) + sizeof(unsigned short);

	if (sa != base_size(b) ||
		(a->t_info & ~(INDEX_SIZE_MASK | FOREIN_POSTING_BIT)) !=
		(b->t_info & ~(INDEX_SIZE_MASK | FOREIN_POSTING_BIT)))
		return false;
	return memcmp((char *) a + off, (char *) b + off, sa - off) == 0;
}

/*
 * The most TIDs one posting tuple holds for a key of base bytes: about an
 * eighth of a page, so leaves still fill to their target in small steps
 * (btree allows up to a sixth).
 */
int
forein_posting_max_tids(Size base)
{
	Size		limit = Min((Size) FOREIN_MAX_POSTING_SIZE, (Size) FOREIN_MAX_ITEM_SIZE);

	if (forein_posting_size(base, 2) > limit)
		return 1;
	return (int) ((limit - TRAILER_SIZE - base) / sizeof(ItemPointerData));
}

/*
 * The posting tuple of the run items[0..n) (n >= 2, equal keys, ascending
 * TIDs), palloc'd, with the key image of the run's last tuple.
 */
IndexTuple
forein_merge_run(IndexTuple *items, int n)
{
	ItemPointerData *tids;
	IndexTuple	merged;
	int			total = 0;
	int			i;

	for (i = 0; i < n; i++)
		total += forein_posting_count(items[i]);
	tids = palloc(total * sizeof(ItemPointerData));
	total = 0;
	for (i = 0; i < n; i++)
	{
		int			k;

		for (k = 0; k < forein_posting_count(items[i]); k++)
			tids[total++] = *forein_posting_tid(items[i], k);
	}
	merged = forein_form_posting(items[n - 1], tids, total);
	pfree(tids);
	return merged;
}

/*
 * Merges runs of adjacent tuples with identical keys in items[0..n) into
 * posting tuples (palloc'd; others are passed through).  Returns the new
 * count; out must have room for n.  With runs (room for n), runs[i] is the
 * number of items out[i] holds: what a WAL record needs to redo the merge
 * (forein_xlog_tree.c) without comparing keys.
 */
int
forein_dedup_items(IndexTuple *items, int n, IndexTuple *out, uint16 *runs)
{
	int			m = 0;
	int			i = 0;

	while (i < n)
	{
		int			j = i + 1;
		int			total = forein_posting_count(items[i]);
		int			limit = forein_posting_max_tids(base_size(items[i]));

		while (j < n && forein_same_key_image(items[i], items[j]) &&
			   total + forein_posting_count(items[j]) <= limit)
			total += forein_posting_count(items[j++]);
		if (runs)
			runs[m] = j - i;
		out[m++] = j == i + 1 ? items[i] : forein_merge_run(items + i, j - i);
		i = j;
	}
	return m;
}

/*
 * The tuples that replace the posting tuple `post` when `itup` (a plain
 * tuple whose TID falls strictly inside post's TID range) is inserted: one
 * posting with the TID added when the keys are identical (two when that
 * outgrows the size limit), else post's TIDs below itup's, itup, and post's
 * TIDs above it.  Returns the count (at most 3).
 */
int
forein_posting_insert(IndexTuple post, IndexTuple itup, IndexTuple *out)
{
	int			n = forein_posting_count(post);
	ItemPointerData *tids = palloc((n + 1) * sizeof(ItemPointerData));
	int			below = 0;
	int			m = 0;
	int			k;

	while (below < n &&
		   ItemPointerCompare(forein_posting_tid(post, below), &itup->t_tid) < 0)
		below++;
	if (forein_same_key_image(post, itup))
	{
		int			limit = forein_posting_max_tids(base_size(post));

		for (k = 0; k < below; k++)
			tids[k] = *forein_posting_tid(post, k);
		tids[below] = itup->t_tid;
		for (k = below; k < n; k++)
			tids[k + 1] = *forein_posting_tid(post, k);
		if (n + 1 <= limit)
			out[m++] = forein_form_posting(post, tids, n + 1);
		else
		{
			int			half = (n + 1) / 2;

			out[m++] = forein_form_posting(post, tids, half);
			out[m++] = forein_form_posting(post, tids + half, n + 1 - half);
		}
	}
	else
	{
		for (k = 0; k < n; k++)
			tids[k] = *forein_posting_tid(post, k);
		if (below > 0)
			out[m++] = forein_form_posting(post, tids, below);
		out[m++] = itup;
		if (below < n)
			out[m++] = forein_form_posting(post, tids + below, n - below);
	}
	pfree(tids);
	return m;
}
