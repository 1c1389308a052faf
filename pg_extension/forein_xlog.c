/*-------------------------------------------------------------------------
 *
 * forein_xlog.c
 *	  forein's own WAL resource manager: leaf inserts and deletions of
 *	  dead entries.
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
 * generic record cannot carry one.  Everything else (splits, vacuum,
 * posting changes) stays generic WAL.
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
 * LP_DEAD marks that scans set on the primary without WAL (the next generic
 * record over the leaf carries them: forein_xlog_finish), so the mask used
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
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/standby.h"

/* XLogRecord info bits (the high nibble is the resource manager's) */
#define XLOG_FOREIN_INSERT		0x00
#define XLOG_FOREIN_DELETE		0x10

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

bool		forein_wal_rmgr_ready = false;

static void
forein_redo_insert(XLogReaderState *record)
{
	xl_forein_insert *xlrec = (xl_forein_insert *) XLogRecGetData(record);
	Buffer		buf;

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

static void
forein_redo_delete(XLogReaderState *record)
{
	xl_forein_delete *xlrec = (xl_forein_delete *) XLogRecGetData(record);
	Buffer		buf;

	/* before the entries go: queries that may see their rows are cancelled */
	if (InHotStandby && TransactionIdIsValid(xlrec->horizon))
	{
		RelFileNode rnode;

		XLogRecGetBlockTag(record, 0, &rnode, NULL, NULL);
		ResolveRecoveryConflictWithSnapshot(xlrec->horizon, rnode);
	}
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

static void
forein_redo(XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;

	switch (info)
	{
		case XLOG_FOREIN_INSERT:
			forein_redo_insert(record);
			break;
		case XLOG_FOREIN_DELETE:
			forein_redo_delete(record);
			break;
		default:
			elog(PANIC, "forein_redo: unknown record type %u", info);
	}
}

static void
forein_desc(StringInfo buf, XLogReaderState *record)
{
	uint8		info = XLogRecGetInfo(record) & ~XLR_INFO_MASK;

	if (info == XLOG_FOREIN_INSERT)
		appendStringInfo(buf, "off %u",
						 ((xl_forein_insert *) XLogRecGetData(record))->offnum);
	else if (info == XLOG_FOREIN_DELETE)
	{
		xl_forein_delete *xlrec = (xl_forein_delete *) XLogRecGetData(record);

		appendStringInfo(buf, "ndeleted %u; horizon %u", xlrec->ndeleted,
						 xlrec->horizon);
	}
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
 * Logs the entry just added at off of leaf buf (inside the caller's
 * critical section, the buffer dirty and locked exclusively).
 */
XLogRecPtr
forein_log_insert(Buffer buf, OffsetNumber off)
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
	return XLogInsert(FOREIN_RMGR_ID, XLOG_FOREIN_INSERT);
}

/*
 * Logs the deletion of the n entries at offs of leaf buf (sorted; the
 * caller deleted them inside its critical section), with horizon the
 * newest XID whose rows they pointed to (InvalidTransactionId: none).
 */
XLogRecPtr
forein_log_delete(Buffer buf, OffsetNumber *offs, int n, TransactionId horizon)
{
	xl_forein_delete xlrec;

	Assert(forein_wal_rmgr_ready);
	xlrec.horizon = horizon;
	xlrec.ndeleted = n;
	XLogBeginInsert();
	XLogRegisterData((char *) &xlrec, SizeOfForeinDelete);
	XLogRegisterBuffer(0, buf, REGBUF_STANDARD);
	XLogRegisterBufData(0, (char *) offs, n * sizeof(OffsetNumber));
	return XLogInsert(FOREIN_RMGR_ID, XLOG_FOREIN_DELETE);
}
