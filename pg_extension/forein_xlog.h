/*-------------------------------------------------------------------------
 *
 * forein_xlog.h
 *	  forein's WAL records: their types and the functions that write them.
 *
 * forein_xlog.c registers the resource manager and holds the records of
 * entries added to and removed from leaves; forein_xlog_tree.c those that
 * change the tree's shape.  All are written only when forein is preloaded
 * (forein_wal_rmgr_ready); otherwise the callers write generic WAL.
 *
 * pg_extension/forein_xlog.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef FOREIN_XLOG_H
#define FOREIN_XLOG_H

#include "access/xlogreader.h"
#include "lib/stringinfo.h"

/* XLogRecord info bits (the high nibble is the resource manager's) */
#define XLOG_FOREIN_INSERT			0x00
#define XLOG_FOREIN_DELETE			0x10
#define XLOG_FOREIN_VACUUM			0x20
#define XLOG_FOREIN_DELETE_UPDATE	0x30
#define XLOG_FOREIN_SPLIT			0x40
#define XLOG_FOREIN_INSERT_UPPER	0x50
#define XLOG_FOREIN_NEWROOT			0x60
#define XLOG_FOREIN_REPLACE			0x70
#define XLOG_FOREIN_DEDUP			0x80
#define XLOG_FOREIN_UNLINK			0x90
#define XLOG_FOREIN_REUSE_PAGE		0xA0

/* forein_xlog.c (forein_log_insert: forein.h) */
extern XLogRecPtr forein_log_insert_upper(Buffer buf, OffsetNumber off,
										  Buffer childbuf);

/* forein_xlog_tree.c */
extern void forein_redo_clear_incomplete(XLogReaderState *record,
										 uint8 block_id);
extern bool forein_fill_page(Page page, IndexTuple hikey, IndexTuple lokey,
							 IndexTuple *items, int n);
extern bool forein_replace_items(Page page, OffsetNumber off,
								 IndexTuple *items, int n);
extern char *forein_split_pack_new(IndexTuple *newitems, int nnew, Size *len);
extern XLogRecPtr forein_log_split(Buffer lbuf, Buffer rbuf, Buffer obuf,
								   Buffer childbuf, OffsetNumber off,
								   bool replace, int nnew, int nleft,
								   char *packed_new, Size packed_len);
extern XLogRecPtr forein_log_new_root(Buffer rootbuf, Buffer metabuf,
									  Buffer lbuf);
extern void forein_replace_logged(Relation index, Buffer buf, OffsetNumber off,
								  IndexTuple *newitems, int nnew);
extern bool forein_dedup_logged(Relation index, Buffer buf, IndexTuple *items,
								int n);
extern bool forein_mark_deleted(Page page, FullTransactionId stamp);
extern XLogRecPtr forein_log_unlink(Buffer lbuf, Buffer tbuf, Buffer rbuf,
									Buffer pbuf, BlockNumber left,
									OffsetNumber toff, FullTransactionId stamp);
extern void forein_log_reuse_page(Relation index, BlockNumber blkno,
								  FullTransactionId stamp);
extern void forein_redo_tree(XLogReaderState *record, uint8 info);
extern void forein_desc_tree(StringInfo buf, XLogReaderState *record,
							 uint8 info);

#endif							/* FOREIN_XLOG_H */
