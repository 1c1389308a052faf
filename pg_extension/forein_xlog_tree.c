/*-------------------------------------------------------------------------
 *
 * forein_xlog_tree.c
 *	  forein's WAL records for changes to the tree's shape: page splits,
 *	  new roots, posting list merges and cuts, page deletion and the reuse
 *	  of deleted pages (downlink insertions: forein_xlog.c's INSERT_UPPER).
 *
 * These were generic WAL records, which log a changed page as the bytes
 * that differ from its old image: a split logged both halves whole (a
 * fresh page differs everywhere), a posting list merge the whole leaf.
 * Here, as in nbtree (nbtxlog.c), a record carries what replay cannot
 * derive from the pages it already has:
 *
 *	SPLIT		the new right page's tuples (about half a page), the new
 *				items and where they went; the left half is rebuilt from
 *				the standby's own copy of the old page.  Optional blocks:
 *				the old right sibling (its left link) and the child whose
 *				INCOMPLETE_SPLIT the split's insertion completes.
 *	NEWROOT		the new root's two tuples, the metapage's new root.
 *	REPLACE		a posting tuple that took a TID or was cut around one:
 *				the offset and the (at most three) new tuples.
 *	DEDUP		a leaf's runs of duplicates merged: per output tuple the
 *				number of entries it holds; replay merges the same runs
 *				without comparing keys.
 *	UNLINK		an empty leaf deleted (forein_vacuum.c): the low key its
 *				right sibling takes, the target's deletion stamp.
 *	REUSE_PAGE	a deleted page recycled: its stamp, so that a hot standby
 *				first cancels the queries that might still reach it (as
 *				nbtree's XLOG_BTREE_REUSE_PAGE).
 *
 * Every record's redo leaves exactly the primary's page but for LP_DEAD
 * marks (forein_xlog.c's mask), which wal_consistency_checking = 'forein'
 * checks after every record (regress/t/017_wal_consistency.pl).
 *
 * forein deletes a page in one record over its four pages (left sibling,
 * target, right sibling, parent), so unlike nbtree it needs no half-dead
 * stage: a crash leaves the old tree or the new one.
 *
 * pg_extension/forein_xlog_tree.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/xlog_internal.h"
#include "access/xloginsert.h"
#include "access/xlogutils.h"
#include "forein.h"
#include "forein_offload_int.h"
#include "forein_xlog.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/standby.h"

/* SPLIT: block 0 the left (old) page, 1 the new right page */
#define SPLIT_OLD_RIGHT		2	/* optional: its left link */
#define SPLIT_CHILD			3	/* optional: INCOMPLETE_SPLIT cleared */

typedef struct xl_forein_split
{
	OffsetNumber off;			/* where the new items went in the old page */
	uint16		nnew;			/* new items (block 0's data) */
	uint16		nleft;			/* items (after the bounds) left on the left */
	uint16		replace;		/* the new items replaced the item at off */
	uint16		level;
	uint32		rversion;		/* the right page's version */
	BlockNumber rright;			/* the right page's right link */
	BlockNumber rfirst_child;	/* inner: the right page's first child */
} xl_forein_split;

#define SizeOfForeinSplit	(offsetof(xl_forein_split, rfirst_child) + sizeof(BlockNumber))

/* NEWROOT: block 0 the root (its bounds and downlink as data), 1 meta, 2 old root */
typedef struct xl_forein_newroot
{
	uint16		level;
	BlockNumber first_child;
} xl_forein_newroot;

#define SizeOfForeinNewroot	(offsetof(xl_forein_newroot, first_child) + sizeof(BlockNumber))

typedef struct xl_forein_replace
{
	OffsetNumber off;
	uint16		nnew;			/* tuples in block 0's data */
} xl_forein_replace;

#define SizeOfForeinReplace	(offsetof(xl_forein_replace, nnew) + sizeof(uint16))

typedef struct xl_forein_dedup
{
	uint16		nruns;			/* uint16 run lengths in block 0's data */
} xl_forein_dedup;

#define SizeOfForeinDedup	sizeof(uint16)

/* UNLINK's blocks */
#define UNLINK_LEFT		0		/* optional: its right link */
#define UNLINK_TARGET	1
#define UNLINK_RIGHT	2		/* its new low key is the data */
#define UNLINK_PARENT	3

typedef struct xl_forein_unlink
{
	FullTransactionId stamp;	/* the target's deletion stamp */
	BlockNumber left;			/* the right sibling's new left link */
	OffsetNumber toff;			/* the target's downlink on the parent */
} xl_forein_unlink;

#define SizeOfForeinUnlink	(offsetof(xl_forein_unlink, toff) + sizeof(OffsetNumber))

typedef struct xl_forein_reuse_page
{
	RelFileNode node;
	BlockNumber blkno;
	FullTransactionId stamp;
} xl_forein_reuse_page;

#define SizeOfForeinReusePage	(offsetof(xl_forein_reuse_page, stamp) + sizeof(FullTransactionId))

/*
 * Fills the initialized page with its bounds and the n items, as a split
 * lays out both halves on the primary and in replay.  Returns false if an
 * item does not fit.
 */
bool
forein_fill_page(Page page, IndexTuple hikey, IndexTuple lokey,
				 IndexTuple *items, int n)
{
	int			i;

	if (PageAddItem(page, (Item) hikey, IndexTupleSize(hikey), FOREIN_HIKEY,
					false, false) == InvalidOffsetNumber ||
		PageAddItem(page, (Item) lokey, IndexTupleSize(lokey), FOREIN_LOKEY,
					false, false) == InvalidOffsetNumber)
		return false;
	for (i = 0; i < n; i++)
		if (PageAddItem(page, (Item) items[i], IndexTupleSize(items[i]),
						InvalidOffsetNumber, false, false) == InvalidOffsetNumber)
			return false;
	return true;
}

/*
 * Replay changed the tree's shape as a node event does on the primary
 * (forein_offload_node_event): a hot standby's worker refreshes the image.
 */
static void
note_replayed_change(XLogReaderState *record, uint8 block_id)
{
	RelFileNode node;

	XLogRecGetBlockTag(record, block_id, &node, NULL, NULL);
	forein_slots_note_replayed_change(node);
}

/* n tuples packed at MAXALIGN'd offsets: the data of several records */
static char *
pack_tuples(IndexTuple *items, int n, Size *len)
{
	Size		total = 0;
	char	   *buf;
	int			i;

	for (i = 0; i < n; i++)
		total += MAXALIGN(IndexTupleSize(items[i]));
	buf = palloc0(Max(total, 1));
	*len = 0;
	for (i = 0; i < n; i++)
	{
		memcpy(buf + *len, items[i], IndexTupleSize(items[i]));
		*len += MAXALIGN(IndexTupleSize(items[i]));
	}
	return buf;
}

/*
 * The n tuples of pack_tuples's data (or of a page's tuple area when
 * `reversed`: PageAddItem fills a fresh page downward), copied to aligned
 * memory.  PANICs on a record whose data does not parse.
 */
static IndexTuple *
unpack_tuples(const char *data, Size len, int *n, bool reversed)
{
	char	   *copy = palloc(Max(len, 1));
	IndexTuple *items = palloc(sizeof(IndexTuple) * (len / MAXALIGN(sizeof(IndexTupleData)) + 1));
	Size		pos = 0;
	int			count = 0;
	int			i;

	memcpy(copy, data, len);
	while (pos < len)
	{
		IndexTuple	itup = (IndexTuple) (copy + pos);
		Size		size;

		if (len - pos < sizeof(IndexTupleData) ||
			(size = MAXALIGN(IndexTupleSize(itup))) == 0 || size > len - pos)
			elog(PANIC, "forein_redo: malformed tuple data at byte %zu of %zu",
				 (size_t) pos, (size_t) len);
		items[count++] = itup;
		pos += size;
	}
	if (reversed)
		for (i = 0; i < count / 2; i++)
		{
			IndexTuple	t = items[i];

			items[i] = items[count - 1 - i];
			items[count - 1 - i] = t;
		}
	*n = count;
	return items;
}

/*
 * Logs a split made inside the caller's critical section: lbuf holds the
 * left half, rbuf the new right page; obuf (the old right sibling) and
 * childbuf are optional.  The old page had nnew new items (packed_new,
 * from forein_split_pack_new) put at off, replacing the item there when
 * `replace`; the first nleft of its items stay on the left.
 */
XLogRecPtr
forein_log_split(Buffer lbuf, Buffer rbuf, Buffer obuf, Buffer childbuf,
				 OffsetNumber off, bool replace, int nnew, int nleft,
				 char *packed_new, Size packed_len)
{
	Page		rpage = BufferGetPage(rbuf);
	PageHeader	rhdr = (PageHeader) rpage;
	ForeinPageOpaque ropaque = ForeinPageGetOpaque(rpage);
	xl_forein_split xlrec;

	xlrec.off = off;
	xlrec.nnew = nnew;
	xlrec.nleft = nleft;
	xlrec.replace = replace;
	xlrec.level = ropaque->level;
	xlrec.rversion = ropaque->version;
	xlrec.rright = ropaque->right;
	xlrec.rfirst_child = ropaque->first_child;

	XLogBeginInsert();
	XLogRegisterData((char *) &xlrec, SizeOfForeinSplit);
	XLogRegisterBuffer(0, lbuf, REGBUF_STANDARD);
	if (packed_len > 0)
		XLogRegisterBufData(0, packed_new, packed_len);
	/* the right page's tuple area, as nbtree logs it */
	XLogRegisterBuffer(1, rbuf, REGBUF_WILL_INIT);
	XLogRegisterBufData(1, (char *) rpage + rhdr->pd_upper,
						rhdr->pd_special - rhdr->pd_upper);
	if (BufferIsValid(obuf))
		XLogRegisterBuffer(SPLIT_OLD_RIGHT, obuf, REGBUF_STANDARD);
	if (BufferIsValid(childbuf))
		XLogRegisterBuffer(SPLIT_CHILD, childbuf, REGBUF_STANDARD);
	return XLogInsert(FOREIN_RMGR_ID, XLOG_FOREIN_SPLIT);
}

/* The new items of a split, packed before its critical section */
char *
forein_split_pack_new(IndexTuple *newitems, int nnew, Size *len)
{
	if (nnew == 0)
	{
		*len = 0;
		return NULL;
	}
	return pack_tuples(newitems, nnew, len);
}

/* Clears INCOMPLETE_SPLIT on the child of a record's block_id, if logged */
void
forein_redo_clear_incomplete(XLogReaderState *record, uint8 block_id)
{
	Buffer		buf;

	if (!XLogRecHasBlockRef(record, block_id))
		return;
	if (XLogReadBufferForRedo(record, block_id, &buf) == BLK_NEEDS_REDO)
	{
		Page		page = BufferGetPage(buf);

		ForeinPageGetOpaque(page)->flags &= ~FOREIN_INCOMPLETE_SPLIT;
		PageSetLSN(page, record->EndRecPtr);
		MarkBufferDirty(buf);
	}
	if (BufferIsValid(buf))
		UnlockReleaseBuffer(buf);
}

static void
redo_split(XLogReaderState *record)
{
	xl_forein_split *xlrec = (xl_forein_split *) XLogRecGetData(record);
	BlockNumber lblkno;
	BlockNumber rblkno;
	Buffer		lbuf;
	Buffer		rbuf;
	Buffer		obuf;
	Page		rpage;
	ForeinPageOpaque ropaque;
	Size		rlen;
	char	   *rdata = XLogRecGetBlockData(record, 1, &rlen);
	IndexTuple *rtuples;
	int			nrtuples;

	XLogRecGetBlockTag(record, 0, NULL, NULL, &lblkno);
	XLogRecGetBlockTag(record, 1, NULL, NULL, &rblkno);
	rtuples = unpack_tuples(rdata, rlen, &nrtuples, true);
	if (nrtuples < 2)
		elog(PANIC, "forein_redo: split of block %u logs a right page without bounds",
			 lblkno);

	if (XLogReadBufferForRedo(record, 0, &lbuf) == BLK_NEEDS_REDO)
	{
		/* rebuild the left half from the old page, as split_page did */
		Page		lpage = BufferGetPage(lbuf);
		PGAlignedBlock old;
		PGAlignedBlock left;
		Page		opage = old.data;
		ForeinPageOpaque oopaque;
		ForeinPageOpaque lopaque;
		OffsetNumber maxoff;
		OffsetNumber o;
		IndexTuple *newitems = NULL;
		IndexTuple *items;
		int			nnew = 0;
		int			n = 0;
		int			i;

		memcpy(opage, lpage, BLCKSZ);
		oopaque = ForeinPageGetOpaque(opage);
		maxoff = PageGetMaxOffsetNumber(opage);
		if (xlrec->nnew > 0)
		{
			Size		len;
			char	   *data = XLogRecGetBlockData(record, 0, &len);

			newitems = unpack_tuples(data, len, &nnew, false);
		}
		if (nnew != xlrec->nnew || xlrec->nleft > maxoff + nnew)
			elog(PANIC, "forein_redo: split of block %u logs %d new items, %u expected",
				 lblkno, nnew, xlrec->nnew);
		items = palloc(sizeof(IndexTuple) * (maxoff + nnew + 1));
		for (o = FOREIN_FIRST_ITEM; o <= maxoff && n < xlrec->nleft; o++)
		{
			if (o == xlrec->off)
				for (i = 0; i < nnew; i++)
					items[n++] = newitems[i];
			if (!(xlrec->replace && o == xlrec->off))
				items[n++] = (IndexTuple) PageGetItem(opage, PageGetItemId(opage, o));
		}
		for (i = 0; xlrec->off > maxoff && i < nnew; i++)
			items[n++] = newitems[i];
		if (n < xlrec->nleft)
			elog(PANIC, "forein_redo: split of block %u keeps %u items on the left of %d",
				 lblkno, xlrec->nleft, n);

		forein_init_page(left.data, oopaque->flags | FOREIN_INCOMPLETE_SPLIT,
						 oopaque->level);
		if (!forein_fill_page(left.data, rtuples[FOREIN_LOKEY - 1],
							  (IndexTuple) PageGetItem(opage, PageGetItemId(opage, FOREIN_LOKEY)),
							  items, xlrec->nleft))
			elog(PANIC, "forein_redo: the left half of block %u does not fit", lblkno);
		lopaque = ForeinPageGetOpaque(left.data);
		lopaque->first_child = oopaque->first_child;
		lopaque->left = oopaque->left;
		lopaque->right = rblkno;
		lopaque->version = oopaque->version + 1;
		memcpy(lpage, left.data, BLCKSZ);
		PageSetLSN(lpage, record->EndRecPtr);
		MarkBufferDirty(lbuf);
	}

	/* the right page from its logged tuples */
	rbuf = XLogInitBufferForRedo(record, 1);
	rpage = BufferGetPage(rbuf);
	forein_init_page(rpage, 0, xlrec->level);
	if (!forein_fill_page(rpage, rtuples[FOREIN_HIKEY - 1], rtuples[FOREIN_LOKEY - 1],
						  rtuples + 2, nrtuples - 2))
		elog(PANIC, "forein_redo: the right half of block %u does not fit", lblkno);
	ropaque = ForeinPageGetOpaque(rpage);
	ropaque->first_child = xlrec->rfirst_child;
	ropaque->left = lblkno;
	ropaque->right = xlrec->rright;
	ropaque->version = xlrec->rversion;
	PageSetLSN(rpage, record->EndRecPtr);
	MarkBufferDirty(rbuf);

	/* readers move right from the left page: both stay locked till here */
	if (XLogRecHasBlockRef(record, SPLIT_OLD_RIGHT))
	{
		if (XLogReadBufferForRedo(record, SPLIT_OLD_RIGHT, &obuf) == BLK_NEEDS_REDO)
		{
			Page		opage = BufferGetPage(obuf);

			ForeinPageGetOpaque(opage)->left = rblkno;
			PageSetLSN(opage, record->EndRecPtr);
			MarkBufferDirty(obuf);
		}
		if (BufferIsValid(obuf))
			UnlockReleaseBuffer(obuf);
	}
	if (BufferIsValid(lbuf))
		UnlockReleaseBuffer(lbuf);
	UnlockReleaseBuffer(rbuf);
	forein_redo_clear_incomplete(record, SPLIT_CHILD);
	note_replayed_change(record, 0);
}

/*
 * Logs a new root rootbuf (made inside the caller's critical section over
 * the old root lbuf, whose ROOT and INCOMPLETE_SPLIT flags went, and the
 * metapage).
 */
XLogRecPtr
forein_log_new_root(Buffer rootbuf, Buffer metabuf, Buffer lbuf)
{
	Page		page = BufferGetPage(rootbuf);
	PageHeader	hdr = (PageHeader) page;
	xl_forein_newroot xlrec;

	xlrec.level = ForeinPageGetOpaque(page)->level;
	xlrec.first_child = ForeinPageGetOpaque(page)->first_child;
	XLogBeginInsert();
	XLogRegisterData((char *) &xlrec, SizeOfForeinNewroot);
	XLogRegisterBuffer(0, rootbuf, REGBUF_WILL_INIT);
	XLogRegisterBufData(0, (char *) page + hdr->pd_upper,
						hdr->pd_special - hdr->pd_upper);
	XLogRegisterBuffer(1, metabuf, REGBUF_STANDARD);
	XLogRegisterBuffer(2, lbuf, REGBUF_STANDARD);
	return XLogInsert(FOREIN_RMGR_ID, XLOG_FOREIN_NEWROOT);
}

static void
redo_new_root(XLogReaderState *record)
{
	xl_forein_newroot *xlrec = (xl_forein_newroot *) XLogRecGetData(record);
	Buffer		rootbuf;
	Buffer		buf;
	Page		page;
	BlockNumber rootblk;
	Size		len;
	char	   *data = XLogRecGetBlockData(record, 0, &len);
	IndexTuple *tuples;
	int			ntuples;

	XLogRecGetBlockTag(record, 0, NULL, NULL, &rootblk);
	tuples = unpack_tuples(data, len, &ntuples, true);
	rootbuf = XLogInitBufferForRedo(record, 0);
	page = BufferGetPage(rootbuf);
	forein_init_page(page, FOREIN_ROOT, xlrec->level);
	ForeinPageGetOpaque(page)->version = 1;
	if (ntuples < 2 ||
		!forein_fill_page(page, tuples[0], tuples[1], tuples + 2, ntuples - 2))
		elog(PANIC, "forein_redo: malformed new root %u", rootblk);
	ForeinPageGetOpaque(page)->first_child = xlrec->first_child;
	PageSetLSN(page, record->EndRecPtr);
	MarkBufferDirty(rootbuf);

	if (XLogReadBufferForRedo(record, 1, &buf) == BLK_NEEDS_REDO)
	{
		ForeinMetaPageData *meta = ForeinPageGetMeta(BufferGetPage(buf));

		meta->root = rootblk;
		meta->root_level = xlrec->level;
		PageSetLSN(BufferGetPage(buf), record->EndRecPtr);
		MarkBufferDirty(buf);
	}
	if (BufferIsValid(buf))
		UnlockReleaseBuffer(buf);
	if (XLogReadBufferForRedo(record, 2, &buf) == BLK_NEEDS_REDO)
	{
		ForeinPageGetOpaque(BufferGetPage(buf))->flags &=
			~(FOREIN_ROOT | FOREIN_INCOMPLETE_SPLIT);
		PageSetLSN(BufferGetPage(buf), record->EndRecPtr);
		MarkBufferDirty(buf);
	}
	if (BufferIsValid(buf))
		UnlockReleaseBuffer(buf);
	UnlockReleaseBuffer(rootbuf);
	note_replayed_change(record, 0);
}

/*
 * Replaces the item at off of page by the n items (a posting tuple that took
 * a TID or was cut around one): the primary's change, generic or not, and
 * REPLACE's replay.  Returns false if an item does not fit.
 */
bool
forein_replace_items(Page page, OffsetNumber off, IndexTuple *items, int n)
{
	int			i;

	PageIndexTupleDelete(page, off);
	for (i = 0; i < n; i++)
		if (PageAddItem(page, (Item) items[i], IndexTupleSize(items[i]),
						off + i, false, false) == InvalidOffsetNumber)
			return false;
	return true;
}

/*
 * Replaces the item at off of the exclusively locked leaf buf (room
 * checked) by the nnew items, in a critical section, and logs it.
 */
void
forein_replace_logged(Relation index, Buffer buf, OffsetNumber off,
					  IndexTuple *newitems, int nnew)
{
	Page		page = BufferGetPage(buf);
	bool		logged = RelationNeedsWAL(index);
	Size		len = 0;
	char	   *packed = logged ? pack_tuples(newitems, nnew, &len) : NULL;

	START_CRIT_SECTION();
	if (!forein_replace_items(page, off, newitems, nnew))
		elog(PANIC, "forein: failed to replace a posting tuple in index \"%s\"",
			 RelationGetRelationName(index));
	MarkBufferDirty(buf);
	if (logged)
	{
		xl_forein_replace xlrec;
		XLogRecPtr	lsn;

		xlrec.off = off;
		xlrec.nnew = nnew;
		XLogBeginInsert();
		XLogRegisterData((char *) &xlrec, SizeOfForeinReplace);
		XLogRegisterBuffer(0, buf, REGBUF_STANDARD);
		XLogRegisterBufData(0, packed, len);
		lsn = XLogInsert(FOREIN_RMGR_ID, XLOG_FOREIN_REPLACE);
		PageSetLSN(page, lsn);
	}
	END_CRIT_SECTION();
	if (packed)
		pfree(packed);
}

static void
redo_replace(XLogReaderState *record)
{
	xl_forein_replace *xlrec = (xl_forein_replace *) XLogRecGetData(record);
	Buffer		buf;

	if (XLogReadBufferForRedo(record, 0, &buf) == BLK_NEEDS_REDO)
	{
		Page		page = BufferGetPage(buf);
		Size		len;
		char	   *data = XLogRecGetBlockData(record, 0, &len);
		int			n;
		IndexTuple *items = unpack_tuples(data, len, &n, false);

		if (n != xlrec->nnew || xlrec->off > PageGetMaxOffsetNumber(page))
			elog(PANIC, "forein_redo: malformed replacement at offset %u", xlrec->off);
		if (!forein_replace_items(page, xlrec->off, items, n))
			elog(PANIC, "forein_redo: failed to replace the tuple at offset %u",
				 xlrec->off);
		PageSetLSN(page, record->EndRecPtr);
		MarkBufferDirty(buf);
	}
	if (BufferIsValid(buf))
		UnlockReleaseBuffer(buf);
}

/*
 * Replaces the n entries of leaf page (from FOREIN_FIRST_ITEM on) by the m
 * tuples out, built from them.
 */
static bool
rewrite_leaf(Page page, int n, IndexTuple *out, int m)
{
	OffsetNumber offs[MaxIndexTuplesPerPage];	/* no palloc: a critical section */
	int			i;

	Assert(n <= MaxIndexTuplesPerPage);
	for (i = 0; i < n; i++)
		offs[i] = FOREIN_FIRST_ITEM + i;
	PageIndexMultiDelete(page, offs, n);
	for (i = 0; i < m; i++)
		if (PageAddItem(page, (Item) out[i], IndexTupleSize(out[i]),
						InvalidOffsetNumber, false, false) == InvalidOffsetNumber)
			return false;
	return true;
}

/*
 * Merges the runs of duplicates of the exclusively locked leaf buf whose n
 * entries are items (copies), in one critical section, and logs the run
 * lengths.  Returns whether it changed the page.
 */
bool
forein_dedup_logged(Relation index, Buffer buf, IndexTuple *items, int n)
{
	Page		page = BufferGetPage(buf);
	IndexTuple *out = palloc(sizeof(IndexTuple) * Max(n, 1));
	uint16	   *runs = palloc(sizeof(uint16) * Max(n, 1));
	int			m = forein_dedup_items(items, n, out, runs);

	if (m == n)
		return false;
	START_CRIT_SECTION();
	if (!rewrite_leaf(page, n, out, m))
		elog(PANIC, "forein: merged duplicates do not fit their leaf in index \"%s\"",
			 RelationGetRelationName(index));
	MarkBufferDirty(buf);
	if (RelationNeedsWAL(index))
	{
		xl_forein_dedup xlrec;
		XLogRecPtr	lsn;

		xlrec.nruns = m;
		XLogBeginInsert();
		XLogRegisterData((char *) &xlrec, SizeOfForeinDedup);
		XLogRegisterBuffer(0, buf, REGBUF_STANDARD);
		XLogRegisterBufData(0, (char *) runs, m * sizeof(uint16));
		lsn = XLogInsert(FOREIN_RMGR_ID, XLOG_FOREIN_DEDUP);
		PageSetLSN(page, lsn);
	}
	END_CRIT_SECTION();
	return true;
}

static void
redo_dedup(XLogReaderState *record)
{
	xl_forein_dedup *xlrec = (xl_forein_dedup *) XLogRecGetData(record);
	Buffer		buf;

	if (XLogReadBufferForRedo(record, 0, &buf) == BLK_NEEDS_REDO)
	{
		Page		page = BufferGetPage(buf);
		PGAlignedBlock copy;
		Size		len;
		uint16	   *runs = (uint16 *) XLogRecGetBlockData(record, 0, &len);
		OffsetNumber maxoff = PageGetMaxOffsetNumber(page);
		int			n = maxoff >= FOREIN_FIRST_ITEM ? maxoff - FOREIN_FIRST_ITEM + 1 : 0;
		IndexTuple *out = palloc(sizeof(IndexTuple) * (xlrec->nruns + 1));
		IndexTuple *items = palloc(sizeof(IndexTuple) * (n + 1));
		int			pos = 0;
		int			i;

		if (len != xlrec->nruns * sizeof(uint16))
			elog(PANIC, "forein_redo: merge of %u runs carries %zu bytes", xlrec->nruns, len);
		memcpy(copy.data, page, BLCKSZ);
		for (i = 0; i < n; i++)
			items[i] = (IndexTuple) PageGetItem(copy.data,
												PageGetItemId(copy.data, FOREIN_FIRST_ITEM + i));
		for (i = 0; i < xlrec->nruns; i++)
		{
			uint16		run;

			memcpy(&run, runs + i, sizeof(run));
			if (run == 0 || pos + run > n)
				elog(PANIC, "forein_redo: merge runs exceed the leaf's %d entries", n);
			out[i] = run == 1 ? items[pos] : forein_merge_run(items + pos, run);
			pos += run;
		}
		if (pos != n || !rewrite_leaf(page, n, out, xlrec->nruns))
			elog(PANIC, "forein_redo: merge runs do not cover the leaf's %d entries", n);
		PageSetLSN(page, record->EndRecPtr);
		MarkBufferDirty(buf);
	}
	if (BufferIsValid(buf))
		UnlockReleaseBuffer(buf);
}

/*
 * Logs the deletion of an empty leaf (made inside forein_vacuum.c's
 * critical section): lbuf (optional) now links right to rbuf, rbuf took
 * the target's low key and left link `left`, tbuf is flagged deleted with
 * stamp, and the parent pbuf's downlink at toff points to rbuf, the one
 * after it gone.
 */
XLogRecPtr
forein_log_unlink(Buffer lbuf, Buffer tbuf, Buffer rbuf, Buffer pbuf,
				  BlockNumber left, OffsetNumber toff, FullTransactionId stamp)
{
	Page		rpage = BufferGetPage(rbuf);
	ItemId		lokey = PageGetItemId(rpage, FOREIN_LOKEY);
	xl_forein_unlink xlrec;

	xlrec.stamp = stamp;
	xlrec.left = left;
	xlrec.toff = toff;
	XLogBeginInsert();
	XLogRegisterData((char *) &xlrec, SizeOfForeinUnlink);
	if (BufferIsValid(lbuf))
		XLogRegisterBuffer(UNLINK_LEFT, lbuf, REGBUF_STANDARD);
	XLogRegisterBuffer(UNLINK_TARGET, tbuf, REGBUF_STANDARD);
	XLogRegisterBuffer(UNLINK_RIGHT, rbuf, REGBUF_STANDARD);
	XLogRegisterBufData(UNLINK_RIGHT, (char *) PageGetItem(rpage, lokey),
						ItemIdGetLength(lokey));
	XLogRegisterBuffer(UNLINK_PARENT, pbuf, REGBUF_STANDARD);
	return XLogInsert(FOREIN_RMGR_ID, XLOG_FOREIN_UNLINK);
}

/*
 * The target's part of a deletion: flagged, stamped, its version bumped;
 * its right link stays (stale readers move right).  Shared with
 * forein_vacuum.c.
 */
bool
forein_mark_deleted(Page page, FullTransactionId stamp)
{
	ForeinPageOpaque opaque = ForeinPageGetOpaque(page);

	opaque->flags |= FOREIN_DELETED;
	opaque->version++;
	return PageAddItem(page, (Item) &stamp, sizeof(stamp), FOREIN_DELETED_STAMP,
					   false, false) != InvalidOffsetNumber;
}

static void
redo_unlink(XLogReaderState *record)
{
	xl_forein_unlink *xlrec = (xl_forein_unlink *) XLogRecGetData(record);
	Buffer		lbuf = InvalidBuffer;
	Buffer		tbuf;
	Buffer		rbuf;
	Buffer		pbuf;
	BlockNumber rblkno;
	BlockNumber tblkno;

	XLogRecGetBlockTag(record, UNLINK_TARGET, NULL, NULL, &tblkno);
	XLogRecGetBlockTag(record, UNLINK_RIGHT, NULL, NULL, &rblkno);

	/* left to right, then the parent, as the primary locked them */
	if (XLogRecHasBlockRef(record, UNLINK_LEFT) &&
		XLogReadBufferForRedo(record, UNLINK_LEFT, &lbuf) == BLK_NEEDS_REDO)
	{
		ForeinPageGetOpaque(BufferGetPage(lbuf))->right = rblkno;
		PageSetLSN(BufferGetPage(lbuf), record->EndRecPtr);
		MarkBufferDirty(lbuf);
	}
	if (XLogReadBufferForRedo(record, UNLINK_TARGET, &tbuf) == BLK_NEEDS_REDO)
	{
		if (!forein_mark_deleted(BufferGetPage(tbuf), xlrec->stamp))
			elog(PANIC, "forein_redo: failed to stamp deleted block %u", tblkno);
		PageSetLSN(BufferGetPage(tbuf), record->EndRecPtr);
		MarkBufferDirty(tbuf);
	}
	if (XLogReadBufferForRedo(record, UNLINK_RIGHT, &rbuf) == BLK_NEEDS_REDO)
	{
		Page		rpage = BufferGetPage(rbuf);
		Size		len;
		char	   *data = XLogRecGetBlockData(record, UNLINK_RIGHT, &len);
		char	   *lokey = palloc(Max(len, 1));

		memcpy(lokey, data, len);
		if (!PageIndexTupleOverwrite(rpage, FOREIN_LOKEY, (Item) lokey, len))
			elog(PANIC, "forein_redo: block %u cannot take its new low key", rblkno);
		ForeinPageGetOpaque(rpage)->left = xlrec->left;
		ForeinPageGetOpaque(rpage)->version++;
		PageSetLSN(rpage, record->EndRecPtr);
		MarkBufferDirty(rbuf);
	}
	if (XLogReadBufferForRedo(record, UNLINK_PARENT, &pbuf) == BLK_NEEDS_REDO)
	{
		Page		ppage = BufferGetPage(pbuf);

		if (xlrec->toff >= PageGetMaxOffsetNumber(ppage))
			elog(PANIC, "forein_redo: no downlink after offset %u to remove", xlrec->toff);
		forein_set_downlink(ppage, xlrec->toff, rblkno);
		PageIndexTupleDelete(ppage, xlrec->toff + 1);
		PageSetLSN(ppage, record->EndRecPtr);
		MarkBufferDirty(pbuf);
	}
	if (BufferIsValid(pbuf))
		UnlockReleaseBuffer(pbuf);
	if (BufferIsValid(rbuf))
		UnlockReleaseBuffer(rbuf);
	if (BufferIsValid(tbuf))
		UnlockReleaseBuffer(tbuf);
	if (BufferIsValid(lbuf))
		UnlockReleaseBuffer(lbuf);
	note_replayed_change(record, UNLINK_TARGET);
}

/*
 * Before the deleted page blkno (stamped `stamp`) of index is reused: a
 * hot standby must first cancel the queries whose snapshots predate the
 * stamp, as the primary waited for its own (forein_page_recyclable).  Only
 * when standbys run queries (wal_level replica or higher).
 */
void
forein_log_reuse_page(Relation index, BlockNumber blkno, FullTransactionId stamp)
{
	xl_forein_reuse_page xlrec;

	if (!forein_wal_rmgr_ready || !RelationNeedsWAL(index) || !XLogStandbyInfoActive())
		return;
	xlrec.node = index->rd_node;
	xlrec.blkno = blkno;
	xlrec.stamp = stamp;
	XLogBeginInsert();
	XLogRegisterData((char *) &xlrec, SizeOfForeinReusePage);
	XLogInsert(FOREIN_RMGR_ID, XLOG_FOREIN_REUSE_PAGE);
}

static void
redo_reuse_page(XLogReaderState *record)
{
	xl_forein_reuse_page *xlrec = (xl_forein_reuse_page *) XLogRecGetData(record);

	if (InHotStandby)
		ResolveRecoveryConflictWithSnapshotFullXid(xlrec->stamp, xlrec->node);
}

void
forein_redo_tree(XLogReaderState *record, uint8 info)
{
	switch (info)
	{
		case XLOG_FOREIN_SPLIT:
			redo_split(record);
			break;
		case XLOG_FOREIN_NEWROOT:
			redo_new_root(record);
			break;
		case XLOG_FOREIN_REPLACE:
			redo_replace(record);
			break;
		case XLOG_FOREIN_DEDUP:
			redo_dedup(record);
			break;
		case XLOG_FOREIN_UNLINK:
			redo_unlink(record);
			break;
		case XLOG_FOREIN_REUSE_PAGE:
			redo_reuse_page(record);
			break;
		default:
			elog(PANIC, "forein_redo: unknown record type %u", info);
	}
}

void
forein_desc_tree(StringInfo buf, XLogReaderState *record, uint8 info)
{
	char	   *rec = XLogRecGetData(record);

	switch (info)
	{
		case XLOG_FOREIN_SPLIT:
			{
				xl_forein_split *x = (xl_forein_split *) rec;

				appendStringInfo(buf, "level %u; off %u; nnew %u%s; nleft %u",
								 x->level, x->off, x->nnew,
								 x->replace ? " (replacing)" : "", x->nleft);
				break;
			}
		case XLOG_FOREIN_NEWROOT:
			appendStringInfo(buf, "level %u",
							 ((xl_forein_newroot *) rec)->level);
			break;
		case XLOG_FOREIN_REPLACE:
			appendStringInfo(buf, "off %u; nnew %u",
							 ((xl_forein_replace *) rec)->off,
							 ((xl_forein_replace *) rec)->nnew);
			break;
		case XLOG_FOREIN_DEDUP:
			appendStringInfo(buf, "nruns %u", ((xl_forein_dedup *) rec)->nruns);
			break;
		case XLOG_FOREIN_UNLINK:
			{
				xl_forein_unlink *x = (xl_forein_unlink *) rec;

				appendStringInfo(buf, "toff %u; stamp %u:%u", x->toff,
								 EpochFromFullTransactionId(x->stamp),
								 XidFromFullTransactionId(x->stamp));
				break;
			}
		case XLOG_FOREIN_REUSE_PAGE:
			{
				xl_forein_reuse_page *x = (xl_forein_reuse_page *) rec;

				appendStringInfo(buf, "rel %u/%u/%u; blk %u; stamp %u:%u",
								 x->node.spcNode, x->node.dbNode, x->node.relNode,
								 x->blkno, EpochFromFullTransactionId(x->stamp),
								 XidFromFullTransactionId(x->stamp));
				break;
			}
	}
}
