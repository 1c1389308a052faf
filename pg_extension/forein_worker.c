/*-------------------------------------------------------------------------
 *
 * forein_worker.c
 *	  The offload manager's background workers.
 *
 * The leader ("forein offload manager", registered at preload) wakes every
 * second, or when a backend takes a new slot, and looks for dirty slots:
 * never computed, page splits or deletions since the last refresh, enough
 * new access samples, or a table a reader found stale (REINDEX, TRUNCATE,
 * offload switched back on, or a hint the tree has outgrown: on a hot
 * standby, where splits are replayed by the startup process, that is how
 * a slot learns of them; see forein_offload_hint_stale).  A refresh must
 * read the index, and a backend can only connect to one database, so, as
 * contrib/pg_prewarm's autoprewarm does, the leader stays unconnected and
 * starts a dynamic worker per database with dirty slots, one at a time,
 * waiting for it to finish.  Both start on a hot standby too, once it is
 * consistent (BgWorkerStart_ConsistentState), and a refresh only reads
 * the index (share locks, no WAL), so a standby keeps its own images.
 *
 * A refresh is rate limited per slot (at least a second apart, and about a
 * twentieth of the time spent refreshing: see forein_refresh_publish) and
 * backs off after failures.  A
 * slot whose worker never gets to it (its database is gone) is freed after
 * a few tries; an index found dropped frees its slot at once.
 *
 * Portions Copyright (c) 2026, forein developers
 *
 * pg_extension/forein_worker.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "access/relation.h"
#include "access/xact.h"
#include "miscadmin.h"
#include "pgstat.h"
#include "postmaster/bgworker.h"
#include "postmaster/interrupt.h"
#include "storage/ipc.h"
#include "storage/latch.h"
#include "storage/lwlock.h"
#include "storage/proc.h"
#include "tcop/tcopprot.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "forein.h"
#include "forein_offload_int.h"

#define FOREIN_LEADER_NAP_MS		1000
#define FOREIN_MAX_LAUNCH_FAILURES	3
#define FOREIN_WORKER_POLL_MS		100

void
forein_worker_register(void)
{
	BackgroundWorker worker;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = 10;
	strcpy(worker.bgw_library_name, "forein");
	strcpy(worker.bgw_function_name, "forein_leader_main");
	strcpy(worker.bgw_name, "forein offload manager");
	strcpy(worker.bgw_type, "forein offload manager");
	RegisterBackgroundWorker(&worker);
}

static void
leader_detach(int code, Datum arg)
{
	LWLockAcquire(FOREIN_ALLOC_LOCK(), LW_EXCLUSIVE);
	if (forein_off_shared->leader_latch == MyLatch)
		forein_off_shared->leader_latch = NULL;
	LWLockRelease(FOREIN_ALLOC_LOCK());
}

/*
 * Marks the slot for a refresh if it is dirty and due.  Also keeps the
 * slot's last activity time (diagnostics; slots are never taken over).
 */
static bool
claim_if_dirty(int slotno, TimestampTz now)
{
	ForeinOffSlot *slot = forein_off_slot(slotno);
	bool		dirty = false;

	LWLockAcquire(FOREIN_SLOT_LOCK(slotno), LW_EXCLUSIVE);
	if (slot->in_use)
	{
		uint64		counts[4];

		forein_off_slot_counts(slotno, counts);
		if (counts[0] != slot->lookups_seen)
		{
			slot->lookups_seen = counts[0];
			slot->last_active = now;
		}

		if (forein_offload_enabled && !slot->refresh_requested &&
			now >= slot->next_refresh)
		{
			if (pg_atomic_read_u32(&slot->stale) != 0 ||
				slot->backend == FOREIN_SLOT_NEVER)
				dirty = true;
			else if (slot->backend == FOREIN_SLOT_IMAGE)
				dirty = pg_atomic_read_u64(&slot->events) != slot->events_at_refresh ||
					pg_atomic_read_u64(&slot->samples) - slot->samples_at_refresh >=
					FOREIN_RESAMPLE_THRESHOLD;
		}
		if (dirty)
			slot->refresh_requested = true;
	}
	LWLockRelease(FOREIN_SLOT_LOCK(slotno));
	return dirty;
}

/*
 * After a database's worker exited: slots it did not get to count a launch
 * failure (after a few, the database is presumably gone: free them); with
 * `retry`, the worker could not even be started, so just try again later.
 */
static void
settle_unserved(Oid dboid, bool retry)
{
	int			i;

	for (i = 0; i < forein_off_shared->max_indexes; i++)
	{
		ForeinOffSlot *slot = forein_off_slot(i);
		bool		give_up = false;
		Oid			relid = InvalidOid;

		LWLockAcquire(FOREIN_SLOT_LOCK(i), LW_EXCLUSIVE);
		if (slot->in_use && slot->dboid == dboid && slot->refresh_requested)
		{
			slot->refresh_requested = false;
			if (!retry && ++slot->launch_failures >= FOREIN_MAX_LAUNCH_FAILURES)
			{
				give_up = true;
				relid = slot->relid;
			}
			slot->next_refresh =
				TimestampTzPlusMilliseconds(GetCurrentTimestamp(),
											retry ? FOREIN_LEADER_NAP_MS :
											10 * FOREIN_LEADER_NAP_MS);
		}
		LWLockRelease(FOREIN_SLOT_LOCK(i));

		if (give_up)
		{
			elog(LOG, "forein: giving up offload slot of index %u in database %u: no refresh worker could serve it",
				 relid, dboid);
			forein_off_free_slot(i, dboid, relid);
		}
	}
}

/* Starts a refresh worker for the database and waits until it exits */
static void
run_database_worker(Oid dboid)
{
	BackgroundWorker worker;
	BackgroundWorkerHandle *handle;
	BgwHandleStatus status;
	pid_t		pid;

	memset(&worker, 0, sizeof(worker));
	worker.bgw_flags = BGWORKER_SHMEM_ACCESS | BGWORKER_BACKEND_DATABASE_CONNECTION;
	worker.bgw_start_time = BgWorkerStart_ConsistentState;
	worker.bgw_restart_time = BGW_NEVER_RESTART;
	strcpy(worker.bgw_library_name, "forein");
	strcpy(worker.bgw_function_name, "forein_refresh_worker_main");
	snprintf(worker.bgw_name, BGW_MAXLEN, "forein offload refresh for database %u", dboid);
	strcpy(worker.bgw_type, "forein offload refresh");
	worker.bgw_main_arg = ObjectIdGetDatum(dboid);
	worker.bgw_notify_pid = MyProcPid;

	if (!RegisterDynamicBackgroundWorker(&worker, &handle))
	{
		ereport(DEBUG1,
				(errmsg("forein: could not start an offload refresh worker"),
				 errhint("Consider raising max_worker_processes.")));
		settle_unserved(dboid, true);
		return;
	}

	/*
	 * Poll rather than rely on WaitForBackgroundWorkerShutdown(): its wait
	 * has no timeout, and a lost wakeup would stall every refresh.
	 */
	for (;;)
	{
		status = GetBackgroundWorkerPid(handle, &pid);
		if (status == BGWH_STOPPED || status == BGWH_POSTMASTER_DIED)
			break;
		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 FOREIN_WORKER_POLL_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
		CHECK_FOR_INTERRUPTS();
	}
	pfree(handle);
	settle_unserved(dboid, false);
}

/* One pass over the slots: refresh every dirty one, database by database */
static void
leader_pass(void)
{
	TimestampTz now = GetCurrentTimestamp();
	int			n = forein_off_shared->max_indexes;
	Oid		   *dbs = palloc(sizeof(Oid) * n);
	int			ndbs = 0;
	int			i;

	for (i = 0; i < n; i++)
	{
		if (claim_if_dirty(i, now))
		{
			Oid			dboid = forein_off_slot(i)->dboid;
			int			j;

			for (j = 0; j < ndbs && dbs[j] != dboid; j++)
				;
			if (j == ndbs)
				dbs[ndbs++] = dboid;
		}
	}

	for (i = 0; i < ndbs; i++)
	{
		CHECK_FOR_INTERRUPTS();
		run_database_worker(dbs[i]);
	}
	pfree(dbs);
}

void
forein_leader_main(Datum main_arg)
{
	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	if (forein_off_shared == NULL)
		proc_exit(0);

	LWLockAcquire(FOREIN_ALLOC_LOCK(), LW_EXCLUSIVE);
	forein_off_shared->leader_latch = MyLatch;
	LWLockRelease(FOREIN_ALLOC_LOCK());
	before_shmem_exit(leader_detach, (Datum) 0);

	for (;;)
	{
		CHECK_FOR_INTERRUPTS();
		if (ConfigReloadPending)
		{
			ConfigReloadPending = false;
			ProcessConfigFile(PGC_SIGHUP);
		}

		leader_pass();

		(void) WaitLatch(MyLatch, WL_LATCH_SET | WL_TIMEOUT | WL_EXIT_ON_PM_DEATH,
						 FOREIN_LEADER_NAP_MS, PG_WAIT_EXTENSION);
		ResetLatch(MyLatch);
	}
}

/*
 * Opens the index of a slot in a new transaction; NULL if it was dropped
 * or its OID names something else now (the transaction stays open).
 */
static Relation
open_slot_index(Oid relid)
{
	Relation	index;

	SetCurrentStatementStartTimestamp();
	StartTransactionCommand();
	index = try_relation_open(relid, AccessShareLock);
	if (index != NULL && !forein_is_forein_index(index))
	{
		relation_close(index, AccessShareLock);
		index = NULL;
	}
	return index;
}

/*
 * Refreshes one slot.  With forein.install_delay_ms the image is computed
 * in one transaction and published in another, after the delay: the
 * modelled control plane may take minutes, and DDL on the index (REINDEX,
 * DROP INDEX) must not wait for it behind the worker's lock.  An error is
 * logged and turns into a back-off, so one broken index does not stop the
 * others.
 */
static void
refresh_one(int slotno, Oid relid)
{
	volatile bool dropped = false;
	volatile bool ok = false;

	pgstat_report_activity(STATE_RUNNING, "forein offload refresh");
	PG_TRY();
	{
		Relation	index = open_slot_index(relid);

		if (index == NULL)
			dropped = true;
		else if (forein_install_delay_ms <= 0)
		{
			(void) forein_refresh_index(index, slotno, false);
			relation_close(index, AccessShareLock);
			ok = true;
		}
		else
		{
			/* computed in the transaction's memory, kept past its end */
			ForeinRefreshJob *volatile job = forein_refresh_compute(index, slotno, true);

			MemoryContextSetParent(forein_refresh_job_context(job), TopMemoryContext);
			relation_close(index, AccessShareLock);
			CommitTransactionCommand();

			PG_TRY();
			{
				forein_install_delay(true);
				index = open_slot_index(relid);
				if (index == NULL)
					dropped = true;
				else
				{
					ForeinRefreshJob *publishing = job;

					job = NULL; /* publishing frees it */
					(void) forein_refresh_publish(index, slotno, publishing);
					relation_close(index, AccessShareLock);
					ok = true;
				}
			}
			PG_FINALLY();
			{
				if (job != NULL)
					MemoryContextDelete(forein_refresh_job_context(job));
			}
			PG_END_TRY();
		}
		CommitTransactionCommand();
	}
	PG_CATCH();
	{
		HOLD_INTERRUPTS();
		EmitErrorReport();
		AbortOutOfAnyTransaction();
		FlushErrorState();
		RESUME_INTERRUPTS();
	}
	PG_END_TRY();
	pgstat_report_activity(STATE_IDLE, NULL);

	if (dropped)
		forein_off_free_slot(slotno, MyDatabaseId, relid);
	else if (!ok)
		forein_refresh_failed(slotno);
}

void
forein_refresh_worker_main(Datum main_arg)
{
	Oid			dboid = DatumGetObjectId(main_arg);
	int			i;

	pqsignal(SIGHUP, SignalHandlerForConfigReload);
	pqsignal(SIGTERM, die);
	BackgroundWorkerUnblockSignals();

	if (forein_off_shared == NULL)
		proc_exit(0);

	BackgroundWorkerInitializeConnectionByOid(dboid, InvalidOid, 0);

	for (i = 0; i < forein_off_shared->max_indexes; i++)
	{
		ForeinOffSlot *slot = forein_off_slot(i);
		Oid			relid = InvalidOid;

		CHECK_FOR_INTERRUPTS();

		LWLockAcquire(FOREIN_SLOT_LOCK(i), LW_EXCLUSIVE);
		if (slot->in_use && slot->dboid == dboid && slot->refresh_requested)
		{
			slot->refresh_requested = false;
			slot->launch_failures = 0;
			relid = slot->relid;
		}
		LWLockRelease(FOREIN_SLOT_LOCK(i));

		if (OidIsValid(relid))
			refresh_one(i, relid);
	}
	proc_exit(0);
}
