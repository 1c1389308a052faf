/*-------------------------------------------------------------------------
 *
 * forein_xlog.c
 *	  forein's own WAL resource manager: its registration, and the records
 *	  of leaf inserts, deletions of dead entries and VACUUM's changes to a
 *	  leaf.
 *
 * Generic WAL logs a change as the bytes that differ, and an insert into
 * the middle of a leaf shifts every line pointer after it: the record held
 * half the line pointer array (about 690 bytes on a leaf of int8 keys,
 * against nbtree's 70), and WAL volume made logged inserts slower than
 * btree's.  This resource manager logs an insert as nbtree does: the
 * offset and the tuple, replayed with PageAddItem.  It also logs the
 * deletion of entries scans marked dead (forein_insert.c's simple
 * deletion) with the recovery-conflict horizon nbtree's record carries, so
 * a hot standby cancels the queries that could still see their rows; a
 * generic record cannot carry one.  And it logs VACUUM's changes to a
 * leaf (posting tuples shrunk in place, entries deleted) as the offsets
 * and the shrunk tuples, as nbtree's xl_btree_vacuum does: a generic
 * record of a compacted leaf carried most of the page.  Its replay takes
 * a cleanup lock on the leaf, as nbtree's does, so a standby's scan still
 * pinning the leaf with TIDs it has not returned holds it off.  Bottom-up
 * deletion (forein_insert.c), which may also shrink posting tuples, logs
 * its changes as VACUUM's are logged, with the deletion's horizon and an
 * ordinary exclusive lock for replay, as nbtree's xl_btree_delete.  The
 * records of changes to the tree's shape (splits, new roots, downlinks,
 * posting list merges and cuts, page deletion and reuse) are in
 * forein_xlog_tree.c.
 *
 * A custom resource manager can only be registered while
 * shared_preload_libraries is processed, so these records are written only
 * when forein is preloaded (forein_wal_rmgr_ready); a library loaded later
 * writes generic records, which any server replays.  A server that replays
 * forein's records (crash recovery, a standby, point-in-time recovery) must
 * preload forein too; otherwise recovery stops with PostgreSQL's
 * "resource manager with ID 161 not registered" and its hint to add the
 * module to shared_preload_libraries.
 *
 * Replay leaves the standby's page equal to the primary's except for the
 * LP_DEAD marks that scans set on the primary without WAL (forein's records
 * never carry them; generic ones do: forein_xlog_finish), so the mask used
 * by wal_consistency_checking ignores line pointer flags on leaves, as
 * btree_mask does.
 *
 * pg_extension/forein_xlog.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/bufmask.h"
#include "access/xlog_internal.h"
#include "access/xloginsert.h"
#include "access/xlogutils.h"
#include "forein.h"
#include "forein_xlog.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/standby.h"
#include "utils/memutils.h"

/* An insert: the offset; the tuple is block 0's data */
typedef struct xl_forein_insert
{
	OffsetNumber offnum;
} xl_forein_insert;

#define SizeOfForeinInsert	(offsetof(xl_forein_insert, offnum) + sizeof(OffsetNumber))

/*
 * A deletion: the newest XID a standby query must not still see (invalid:
 * none); the offsets are block 0's data.
 */
typedef struct xl_forein_delete
{
	TransactionId horizon;
	uint16		ndeleted;
} xl_forein_delete;

#define SizeOfForeinDelete	(offsetof(xl_forein_delete, ndeleted) + sizeof(uint16))

/*
 * VACUUM's changes to a leaf.  Block 0's data: the deleted offsets
 * (OffsetNumber[ndeleted], sorted), then per shrunk posting tuple its
 * offset, its new size (uint16) and the tuple.  Replay overwrites the
 * shrunk tuples first (offsets do not move), then deletes, as VACUUM did.
 */
typedef struct xl_forein_vacuum
{
	uint16		ndeleted;
	uint16		nupdated;
} xl_forein_vacuum;

#define SizeOfForeinVacuum	(offsetof(xl_forein_vacuum, nupdated) + sizeof(uint16))

/*
 * A deletion that also shrinks posting tuples (bottom-up deletion): the
 * horizon as in xl_forein_delete; block 0's data as in xl_forein_vacuum.
 */
typedef struct xl_forein_delete_update
{
	TransactionId horizon;
	uint16		ndeleted;
	uint16		nupdated;
} xl_forein_delete_update;

#define SizeOfForeinDeleteUpdate	(offsetof(xl_forein_delete_update, nupdated) + sizeof(uint16))

bool		forein_wal_rmgr_ready = false;

/*
 * An entry added: to a leaf (INSERT), or a downlink to an inner page that
 * completes its child's split (INSERT_UPPER: the child's INCOMPLETE_SPLIT
 * is cleared first, as nbtree's redo does, so replay never holds a parent
 * while it locks a child; readers that see the flag gone before the
 * downlink is in move right, as during any split).
 */
static void
forein_redo_insert(XLogReaderState *record, bool upper)
{
	xl_forein_insert *xlrec = (xl_forein_insert *) XLogRecGetData(record);
	Buffer		buf;

	if (upper)
		forein_redo_clear_incomplete(record, 1);
	if (XLogReadBufferForRedo(record, 0, &buf) == BLK_NEEDS_REDO)
	{
		Page		page = BufferGetPage(buf);
		Size		len;
		char	   *tuple = XLogRecGetBlockData(record, 0, &len);

		if (PageAddItem(page, (Item) tuple, len, xlrec->offnum, false,
						false) == InvalidOffsetNumber)
			elog(PANIC, "forein_redo: failed to add an entry at offset %u",
				 xlrec->offnum);
		PageSetLSN(page, record->EndRecPtr);
		MarkBufferDirty(buf);
	}
	if (BufferIsValid(buf))
		UnlockReleaseBuffer(buf);
}

/* Before the entries go, queries that may see their rows are cancelled */
static void
resolve_conflict(XLogReaderState *record, TransactionId horizon)
{
	if (InHotStandby && TransactionIdIsValid(horizon))
	{
		RelFileNode rnode;

		XLogRecGetBlockTag(record, 0, &rnode, NULL, NULL);
		ResolveRecoveryConflictWithSnapshot(horizon, rnode);
	}
}

static void
forein_redo_delete(XLogReaderState *record)
{
	xl_forein_delete *xlrec = (xl_forein_delete *) XLogRecGetData(record);
	Buffer		buf;

	resolve_conflict(record, xlrec->horizon);
	if (XLogReadBufferForRedo(record, 0, &buf) == BLK_NEEDS_REDO)
	{
		Page		page = BufferGetPage(buf);
		Size		len;
		OffsetNumber *offs = (OffsetNumber *) XLogRecGetBlockData(record, 0, &len);

		if (len != xlrec->ndeleted * sizeof(OffsetNumber))
			elog(PANIC, "forein_redo: deletion of %u entries carries %zu bytes of offsets",
				 xlrec->ndeleted, len);
		PageIndexMultiDelete(page, offs, xlrec->ndeleted);
		PageSetLSN(page, record->EndRecPtr);
		MarkBufferDirty(buf);
	}
	if (BufferIsValid(buf))
		UnlockReleaseBuffer(buf);
}

/*
 * Applies block 0's data of a VACUUM or DELETE_UPDATE record to page: the
 * shrunk posting tuples overwritten first (offsets do not move), then the
 * deletions.
 */
static void
redo_leaf_changes(Page page, char *data, Size len, uint16 ndeleted,
				  uint16 nupdated)
{
	char	   *end = data + len;
	OffsetNumber *deleted = (OffsetNumber *) data;
	char	   *p = data + ndeleted * sizeof(OffsetNumber);
	int			i;

	if (p > end)
		elog(PANIC, "forein_redo: truncated record of %u deletions", ndeleted);
	for (i = 0; i < nupdated; i++)
	{
		OffsetNumber off;
		uint16		size;

		if (end - p < (ptrdiff_t) (sizeof(off) + sizeof(size)))
			elog(PANIC, "forein_redo: truncated record of %u updates", nupdated);
		memcpy(&off, p, sizeof(off));
		memcpy(&size, p + sizeof(off), sizeof(size));
		p += sizeof(off) + sizeof(size);
		if (end - p < size ||
			!PageIndexTupleOverwrite(page, off, (Item) p, size))
			elog(PANIC, "forein_redo: failed to shrink the posting tuple at offset %u",
				 off);
		p += size;
	}
	if (p != end)
		elog(PANIC, "forein_redo: record has %zu bytes past its %u updates",
			 (size_t) (end - p), nupdated);
	if (ndeleted > 0)
		PageIndexMultiDelete(page, deleted, ndeleted);
}

/*
 * Replays a VACUUM record (cleanup: the lock waits out scans pinning the
 * leaf, as on the primary) or a DELETE_UPDATE one (an exclusive lock, as
 * the primary's insert held).
 */
static void
redo_leaf_record(XLogReaderState *record, uint16 ndeleted, uint16 nupdated,
				 bool cleanup)
{
	Buffer		buf;

	if (XLogReadBufferForRedoExtended(record, 0, RBM_NORMAL, cleanup, &buf) == BLK_NEEDS_REDO)
	{
		Page		page = BufferGetPage(buf);
		Size		len;
		char	   *data = XLogRecGetBlockData(record, 0, &len);

		redo_leaf_changes(page, data, len, ndeleted, nupdated);
		PageSetLSN(page, record->EndRecPtr);
		MarkBufferDirty(buf);
	}
	if (BufferIsValid(buf))
		UnlockReleaseBuffer(buf);
}

static void
forein_redo_vacuum(XLogReaderState *record)
{
	xl_forein_vacuum *xlrec = (xl_forein_vacuum *) XLogRecGetData(record);

	redo_leaf_record(record, xlrec->ndeleted, xlrec->nupdated, true);
}

static void
forein_redo_delete_update(XLogReaderState *record)
{
	xl_forein_delete_update *xlrec = (xl_forein_delete_update *) XLogRecGetData(record);

	resolve_conflict(record, xlrec->horizon);
	redo_leaf_record(record, xlrec->ndeleted, xlrec->nupdated, false);
}

/*
 * Replay allocates (tuples copied to aligned memory): in a context reset
 * after every record, as nbtree's opCtx.
 */
static MemoryContext forein_redo_cxt = NULL;

static void
forein_redo_startup(void)
{
	forein_redo_cxt = AllocSetContextCreate(CurrentMemoryContext,
											"forein redo",
											ALLOCSET_DEFAULT_SIZES);
}

static void
forein_redo_cleanup(void)
{
	if (forein_redo_cxt)
		MemoryContextDelete(forein_redo_cxt);
	forein_redo_cxt = NULL;
}

static void
forein_redo(XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;
	MemoryContext oldcxt = forein_redo_cxt ?
		MemoryContextSwitchTo(forein_redo_cxt) : CurrentMemoryContext;

	switch (info)
	{
		case XLOG_FOREIN_INSERT:
		case XLOG_FOREIN_INSERT_UPPER:
			forein_redo_insert(record, info == XLOG_FOREIN_INSERT_UPPER);
			break;
		case XLOG_FOREIN_DELETE:
			forein_redo_delete(record);
			break;
		case XLOG_FOREIN_VACUUM:
			forein_redo_vacuum(record);
			break;
		case XLOG_FOREIN_DELETE_UPDATE:
			forein_redo_delete_update(record);
			break;
		default:
			forein_redo_tree(record, info);
	}
	if (forein_redo_cxt)
	{
		MemoryContextSwitchTo(oldcxt);
		MemoryContextReset(forein_redo_cxt);
	}
}

static void
forein_desc(StringInfo buf, XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;

	if (info == XLOG_FOREIN_INSERT || info == XLOG_FOREIN_INSERT_UPPER)
		appendStringInfo(buf, "off %u",
						 ((xl_forein_insert *) XLogRecGetData(record))->offnum);
	else if (info == XLOG_FOREIN_DELETE)
	{
		xl_forein_delete *xlrec = (xl_forein_delete *) XLogRecGetData(record);

		appendStringInfo(buf, "ndeleted %u; horizon %u", xlrec->ndeleted,
						 xlrec->horizon);
	}
	else if (info == XLOG_FOREIN_VACUUM)
	{
		xl_forein_vacuum *xlrec = (xl_forein_vacuum *) XLogRecGetData(record);

		appendStringInfo(buf, "ndeleted %u; nupdated %u", xlrec->ndeleted,
						 xlrec->nupdated);
	}
	else if (info == XLOG_FOREIN_DELETE_UPDATE)
	{
		xl_forein_delete_update *xlrec = (xl_forein_delete_update *) XLogRecGetData(record);

		appendStringInfo(buf, "ndeleted %u; nupdated %u; horizon %u",
						 xlrec->ndeleted, xlrec->nupdated, xlrec->horizon);
	}
	else
		forein_desc_tree(buf, record, info);
}

static const char *
forein_identify(uint8 info)
{
	switch (info & ~XLR_INFO_MASK)
	{
		case XLOG_FOREIN_INSERT:
			return "INSERT";
		case XLOG_FOREIN_DELETE:
			return "DELETE";
		case XLOG_FOREIN_VACUUM:
			return "VACUUM";
		case XLOG_FOREIN_DELETE_UPDATE:
			return "DELETE_UPDATE";
		case XLOG_FOREIN_SPLIT:
			return "SPLIT";
		case XLOG_FOREIN_INSERT_UPPER:
			return "INSERT_UPPER";
		case XLOG_FOREIN_NEWROOT:
			return "NEWROOT";
		case XLOG_FOREIN_REPLACE:
			return "REPLACE";
		case XLOG_FOREIN_DEDUP:
			return "DEDUP";
		case XLOG_FOREIN_UNLINK:
			return "UNLINK";
		case XLOG_FOREIN_REUSE_PAGE:
			return "REUSE_PAGE";
	}
	return NULL;
}

/* What may differ between a primary's page and its replay */
static void
forein_mask(char *pagedata, BlockNumber blkno)
{
	Page		page = (Page) pagedata;

	mask_page_lsn_and_checksum(page);
	mask_page_hint_bits(page);
	mask_unused_space(page);
	if (forein_page_is_leaf_image(page))
		mask_lp_flags(page);	/* scans' LP_DEAD marks */
}

static RmgrData forein_rmgr = {
	.rm_name = "forein",
	.rm_redo = forein_redo,
	.rm_desc = forein_desc,
	.rm_identify = forein_identify,
	.rm_startup = forein_redo_startup,
	.rm_cleanup = forein_redo_cleanup,
	.rm_mask = forein_mask,
};

/* From _PG_init while shared_preload_libraries is processed */
void
forein_register_wal_rmgr(void)
{
	Assert(process_shared_preload_libraries_in_progress);
	RegisterCustomRmgr(FOREIN_RMGR_ID, &forein_rmgr);
	forein_wal_rmgr_ready = true;
}

/*
 * Logs the entry just added at off of buf (inside the caller's critical
 * section, the buffer dirty and locked exclusively): a leaf entry, or with
 * childbuf a downlink whose child's INCOMPLETE_SPLIT the same critical
 * section cleared.
 */
static XLogRecPtr
log_insert(Buffer buf, OffsetNumber off, Buffer childbuf)
{
	Page		page = BufferGetPage(buf);
	ItemId		iid = PageGetItemId(page, off);
	xl_forein_insert xlrec;

	Assert(forein_wal_rmgr_ready);
	xlrec.offnum = off;
	XLogBeginInsert();
	XLogRegisterData((char *) &xlrec, SizeOfForeinInsert);
	XLogRegisterBuffer(0, buf, REGBUF_STANDARD);
	XLogRegisterBufData(0, (char *) PageGetItem(page, iid), ItemIdGetLength(iid));
	if (BufferIsValid(childbuf))
		XLogRegisterBuffer(1, childbuf, REGBUF_STANDARD);
	return XLogInsert(FOREIN_RMGR_ID, BufferIsValid(childbuf) ?
					  XLOG_FOREIN_INSERT_UPPER : XLOG_FOREIN_INSERT);
}

XLogRecPtr
forein_log_insert(Buffer buf, OffsetNumber off)
{
	return log_insert(buf, off, InvalidBuffer);
}

XLogRecPtr
forein_log_insert_upper(Buffer buf, OffsetNumber off, Buffer childbuf)
{
	return log_insert(buf, off, childbuf);
}

/*
 * The update part of a VACUUM or DELETE_UPDATE record: per shrunk posting
 * tuple its offset, size and bytes, in one buffer (a record takes few data
 * chunks).  Built before the critical section, which may not allocate.
 */
static char *
leaf_updates(OffsetNumber *updated_off, IndexTuple *updated, int n_updated,
			 Size *len)
{
	Size		total = 0;
	char	   *buf;
	char	   *p;
	int			i;

	for (i = 0; i < n_updated; i++)
		total += sizeof(OffsetNumber) + sizeof(uint16) + IndexTupleSize(updated[i]);
	buf = p = palloc(Max(total, 1));
	for (i = 0; i < n_updated; i++)
	{
		uint16		size = IndexTupleSize(updated[i]);

		memcpy(p, &updated_off[i], sizeof(OffsetNumber));
		memcpy(p + sizeof(OffsetNumber), &size, sizeof(size));
		p += sizeof(OffsetNumber) + sizeof(size);
		memcpy(p, updated[i], size);
		p += size;
	}
	*len = total;
	return buf;
}

/*
 * One record of changes to leaf buf: the header hdr (hdrsize bytes), then
 * as block 0's data the deleted offsets and the shrunk posting tuples
 * (updates, from leaf_updates; none in a DELETE record).
 */
static XLogRecPtr
log_leaf_changes(Buffer buf, uint8 info, char *hdr, Size hdrsize,
				 OffsetNumber *deleted, int n_deleted, char *updates,
				 Size updates_len)
{
	Assert(forein_wal_rmgr_ready);
	XLogBeginInsert();
	XLogRegisterData(hdr, hdrsize);
	XLogRegisterBuffer(0, buf, REGBUF_STANDARD);
	if (n_deleted > 0)
		XLogRegisterBufData(0, (char *) deleted, n_deleted * sizeof(OffsetNumber));
	if (updates_len > 0)
		XLogRegisterBufData(0, updates, updates_len);
	return XLogInsert(FOREIN_RMGR_ID, info);
}

/*
 * Logs the deletion of the n entries at offs of leaf buf (sorted; the
 * caller deleted them inside its critical section), with horizon the
 * newest XID whose rows they pointed to (InvalidTransactionId: none).
 */
static XLogRecPtr
log_delete(Buffer buf, OffsetNumber *offs, int n, TransactionId horizon)
{
	xl_forein_delete xlrec;

	xlrec.horizon = horizon;
	xlrec.ndeleted = n;
	return log_leaf_changes(buf, XLOG_FOREIN_DELETE, (char *) &xlrec,
							SizeOfForeinDelete, offs, n, NULL, 0);
}

/*
 * Logs VACUUM's changes to leaf buf (made inside the caller's critical
 * section): n_updated posting tuples shrunk in place (updates, from
 * leaf_updates), then the n_deleted entries at deleted (sorted) removed.
 */
static XLogRecPtr
log_vacuum(Buffer buf, OffsetNumber *deleted, int n_deleted,
		   int n_updated, char *updates, Size updates_len)
{
	xl_forein_vacuum xlrec;

	xlrec.ndeleted = n_deleted;
	xlrec.nupdated = n_updated;
	return log_leaf_changes(buf, XLOG_FOREIN_VACUUM, (char *) &xlrec,
							SizeOfForeinVacuum, deleted, n_deleted, updates,
							updates_len);
}

/*
 * Logs a deletion from leaf buf that also shrank n_updated posting tuples
 * (made inside the caller's critical section): the horizon as
 * log_delete's, the changes as log_vacuum's.
 */
static XLogRecPtr
log_delete_update(Buffer buf, OffsetNumber *deleted, int n_deleted,
				  int n_updated, char *updates, Size updates_len,
				  TransactionId horizon)
{
	xl_forein_delete_update xlrec;

	xlrec.horizon = horizon;
	xlrec.ndeleted = n_deleted;
	xlrec.nupdated = n_updated;
	return log_leaf_changes(buf, XLOG_FOREIN_DELETE_UPDATE, (char *) &xlrec,
							SizeOfForeinDeleteUpdate, deleted, n_deleted,
							updates, updates_len);
}

/*
 * Shrinks the n_updated posting tuples of the exclusively locked leaf buf
 * in place (offsets do not move), then deletes its n_deleted entries at
 * deleted (sorted), and logs both in one record.  With forein's resource
 * manager that is VACUUM's record (vacuum) or a deletion's carrying the
 * recovery-conflict horizon; without it a generic record of the page,
 * which cannot carry a horizon, so callers then pass none.  An unlogged
 * index logs nothing.
 */
void
forein_change_leaf(Relation index, Buffer buf, OffsetNumber *deleted, int n_deleted,
				   OffsetNumber *updated_off, IndexTuple *updated, int n_updated,
				   bool vacuum, TransactionId horizon)
{
	bool		own_record = forein_wal_rmgr_ready && RelationNeedsWAL(index);
	GenericXLogState *gxstate = NULL;
	Size		updates_len = 0;
	char	   *updates = NULL;
	Page		page;
	int			i;

	Assert(own_record || !TransactionIdIsValid(horizon));
	if (own_record && n_updated > 0)	/* the critical section may not allocate */
		updates = leaf_updates(updated_off, updated, n_updated, &updates_len);
	if (own_record || !RelationNeedsWAL(index))
	{
		START_CRIT_SECTION();
		page = BufferGetPage(buf);
	}
	else
	{
		gxstate = forein_xlog_start(index);
		page = forein_register_page(gxstate, buf, 0);
	}
	for (i = 0; i < n_updated; i++)
		if (!PageIndexTupleOverwrite(page, updated_off[i], (Item) updated[i],
									 IndexTupleSize(updated[i])))
			elog(gxstate ? ERROR : PANIC,
				 "forein: failed to shrink a posting tuple in index \"%s\"",
				 RelationGetRelationName(index));
	if (n_deleted > 0)
		PageIndexMultiDelete(page, deleted, n_deleted);
	if (gxstate)
	{
		forein_xlog_finish(gxstate);
		return;
	}
	MarkBufferDirty(buf);
	if (own_record)
	{
		XLogRecPtr	lsn;

		if (vacuum)
			lsn = log_vacuum(buf, deleted, n_deleted, n_updated, updates, updates_len);
		else if (n_updated > 0)
			lsn = log_delete_update(buf, deleted, n_deleted, n_updated, updates,
									updates_len, horizon);
		else
			lsn = log_delete(buf, deleted, n_deleted, horizon);
		PageSetLSN(page, lsn);
	}
	END_CRIT_SECTION();
	if (updates)
		pfree(updates);
}
