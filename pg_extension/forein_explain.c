/*-------------------------------------------------------------------------
 *
 * forein_explain.c
 *	  EXPLAIN ANALYZE shows each forein index scan's hint counters.
 *
 * PostgreSQL 15 has no index-AM callback in EXPLAIN, so three hooks work
 * together:
 *
 *	 ProcessUtility	  an EXPLAIN with ANALYZE gets a capture and its output
 *					  receiver is wrapped, so that the finished output can be
 *					  rewritten before the client sees it;
 *	 ExecutorStart	  claims the query the EXPLAIN runs (instrumented, sent to
 *					  None_Receiver or CREATE TABLE AS's receiver);
 *	 ExecutorEnd	  before the scans end, walks its PlanState tree in the
 *					  order ExplainNode prints it and keeps every index scan
 *					  node (any access method) with, for forein ones, the
 *					  counters of its scan (ForeinScanOpaqueData.counts).
 *
 * The receiver then pairs the k-th index scan node printed with the k-th
 * one kept and adds its counters: in text a "Hints:" line after the node's
 * own detail lines, in JSON/YAML/XML four properties after "Index Name".  If
 * the nodes printed are not the ones kept (their number or index names
 * differ: something else rewrote the output) the output is left as it was.
 *
 * The counters are totals over the node's loops; under a Gather with
 * workers they are the leader's only, and say so (a worker's scans end in
 * the worker).  The hooks exist once forein.so is loaded: always with
 * shared_preload_libraries, else from the statement after the one that
 * first opened a forein index in the session.
 *
 * pg_extension/forein_explain.c
 *
 *-------------------------------------------------------------------------
 */
#include "postgres.h"

#include "commands/defrem.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "forein.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "tcop/utility.h"
#include "utils/builtins.h"
#include "utils/json.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/xml.h"

/* One index scan node as EXPLAIN prints it */
typedef struct HintNode
{
	Oid			indexid;
	bool		forein;			/* a forein index whose scan ran */
	bool		leader_only;	/* under a Gather whose workers ran too */
	ForeinScanCounts counts;
} HintNode;

/* One EXPLAIN ANALYZE being run */
typedef struct HintCapture
{
	ExplainFormat format;
	MemoryContext cxt;
	QueryDesc  *active;			/* the explained query now running */
	List	   *nodes;			/* HintNode *, in output order */
	struct HintCapture *outer;	/* an EXPLAIN running this one */
} HintCapture;

/* Buffers EXPLAIN's output lines to add the counters to them */
typedef struct HintDest
{
	DestReceiver pub;
	DestReceiver *target;
	HintCapture *capture;
	int			operation;
	TupleDesc	typeinfo;
	List	   *lines;			/* char *, one per tuple received */
} HintDest;

bool		forein_explain_hints = true;	/* GUC forein.explain_hints */
static HintCapture *current_capture = NULL;

static ProcessUtility_hook_type prev_ProcessUtility = NULL;
static ExecutorStart_hook_type prev_ExecutorStart = NULL;
static ExecutorEnd_hook_type prev_ExecutorEnd = NULL;

/* As explain.c's explain_get_index_name: the name EXPLAIN prints */
static const char *
index_name(Oid indexId)
{
	const char *result = NULL;

	if (explain_get_index_name_hook)
		result = (*explain_get_index_name_hook) (indexId);
	if (result == NULL)
		result = get_rel_name(indexId);
	return result;
}

static void
keep_node(HintCapture *cap, PlanState *ps, Oid indexid, IndexScanDesc desc,
		  bool leader_only)
{
	MemoryContext old = MemoryContextSwitchTo(cap->cxt);
	HintNode   *node = palloc0(sizeof(HintNode));

	node->indexid = indexid;
	node->leader_only = leader_only;

	/*
	 * EXPLAIN printed the node already (InstrEndLoop done): one it calls
	 * "never executed" gets no counters.
	 */
	if (desc != NULL &&
		(ps->instrument == NULL || ps->instrument->nloops > 0) &&
		desc->indexRelation->rd_indam->ambeginscan == forein_beginscan &&
		desc->opaque != NULL)
	{
		node->forein = true;
		node->counts = ((ForeinScanOpaque) desc->opaque)->counts;
	}
	cap->nodes = lappend(cap->nodes, node);
	MemoryContextSwitchTo(old);
}

static void walk_node(HintCapture *cap, PlanState *ps, Bitmapset **printed,
					  bool leader_only);

/* As ExplainSubPlans: a SubPlan referenced twice is printed once */
static void
walk_subplans(HintCapture *cap, List *plans, Bitmapset **printed,
			  bool leader_only)
{
	ListCell   *lc;

	foreach(lc, plans)
	{
		SubPlanState *sps = (SubPlanState *) lfirst(lc);
		SubPlan    *sp = sps->subplan;

		if (bms_is_member(sp->plan_id, *printed))
			continue;
		*printed = bms_add_member(*printed, sp->plan_id);
		walk_node(cap, sps->planstate, printed, leader_only);
	}
}

static void
walk_members(HintCapture *cap, PlanState **plans, int n, Bitmapset **printed,
			 bool leader_only)
{
	for (int i = 0; i < n; i++)
		walk_node(cap, plans[i], printed, leader_only);
}

/* ExplainNode's order: the node, initplans, outer, inner, members, subplans */
static void
walk_node(HintCapture *cap, PlanState *ps, Bitmapset **printed,
		  bool leader_only)
{
	ListCell   *lc;

	if (ps == NULL)
		return;
	check_stack_depth();

	/* workers' scans end in the workers: only the leader's are seen */
	if ((IsA(ps, GatherState) &&
		 ((GatherState *) ps)->nworkers_launched > 0) ||
		(IsA(ps, GatherMergeState) &&
		 ((GatherMergeState *) ps)->nworkers_launched > 0))
		leader_only = true;

	switch (nodeTag(ps))
	{
		case T_IndexScanState:
			keep_node(cap, ps, ((IndexScan *) ps->plan)->indexid,
					  ((IndexScanState *) ps)->iss_ScanDesc, leader_only);
			break;
		case T_IndexOnlyScanState:
			keep_node(cap, ps, ((IndexOnlyScan *) ps->plan)->indexid,
					  ((IndexOnlyScanState *) ps)->ioss_ScanDesc, leader_only);
			break;
		case T_BitmapIndexScanState:
			keep_node(cap, ps, ((BitmapIndexScan *) ps->plan)->indexid,
					  ((BitmapIndexScanState *) ps)->biss_ScanDesc, leader_only);
			break;
		default:
			break;
	}

	walk_subplans(cap, ps->initPlan, printed, leader_only);
	walk_node(cap, outerPlanState(ps), printed, leader_only);
	walk_node(cap, innerPlanState(ps), printed, leader_only);
	switch (nodeTag(ps))
	{
		case T_AppendState:
			walk_members(cap, ((AppendState *) ps)->appendplans,
						 ((AppendState *) ps)->as_nplans, printed, leader_only);
			break;
		case T_MergeAppendState:
			walk_members(cap, ((MergeAppendState *) ps)->mergeplans,
						 ((MergeAppendState *) ps)->ms_nplans, printed,
						 leader_only);
			break;
		case T_BitmapAndState:
			walk_members(cap, ((BitmapAndState *) ps)->bitmapplans,
						 ((BitmapAndState *) ps)->nplans, printed, leader_only);
			break;
		case T_BitmapOrState:
			walk_members(cap, ((BitmapOrState *) ps)->bitmapplans,
						 ((BitmapOrState *) ps)->nplans, printed, leader_only);
			break;
		case T_SubqueryScanState:
			walk_node(cap, ((SubqueryScanState *) ps)->subplan, printed,
					  leader_only);
			break;
		case T_CustomScanState:
			foreach(lc, ((CustomScanState *) ps)->custom_ps)
				walk_node(cap, (PlanState *) lfirst(lc), printed,
						  leader_only);
			break;
		default:
			break;
	}
	walk_subplans(cap, ps->subPlan, printed, leader_only);
}

static void
forein_explain_ExecutorStart(QueryDesc *queryDesc, int eflags)
{
	HintCapture *cap = current_capture;

	/*
	 * ExplainOnePlan runs one query at a time, instrumented, into
	 * None_Receiver (CREATE TABLE AS: its relation).  Queries that query
	 * runs in turn start while it is active, so are not claimed;
	 * planning-time queries are not instrumented and go to SPI.
	 */
	if (cap != NULL && cap->active == NULL &&
		queryDesc->instrument_options != 0 &&
		!(eflags & EXEC_FLAG_EXPLAIN_ONLY) &&
		(queryDesc->dest == None_Receiver ||
		 queryDesc->dest->mydest == DestIntoRel))
		cap->active = queryDesc;

	if (prev_ExecutorStart)
		prev_ExecutorStart(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
}

static void
forein_explain_ExecutorEnd(QueryDesc *queryDesc)
{
	HintCapture *cap = current_capture;

	if (cap != NULL && cap->active == queryDesc)
	{
		Bitmapset  *printed = NULL;

		cap->active = NULL;
		walk_node(cap, queryDesc->planstate, &printed, false);
		bms_free(printed);
	}

	if (prev_ExecutorEnd)
		prev_ExecutorEnd(queryDesc);
	else
		standard_ExecutorEnd(queryDesc);
}

/* ---------------------------------------------------------------------
 * Rewriting the output
 * ---------------------------------------------------------------------
 */

static int
leading_spaces(const char *s)
{
	int			n = 0;

	while (s[n] == ' ')
		n++;
	return n;
}

/* A text line that heads an index scan node (after "->  " if a child) */
static bool
text_index_header(const char *line, int *detail_indent)
{
	static const char *const heads[] = {
		"Index Scan using ", "Index Scan Backward using ",
		"Index Only Scan using ", "Index Only Scan Backward using ",
		"Bitmap Index Scan on "
	};
	int			s = leading_spaces(line);
	const char *p = line + s;
	bool		child = false;

	if (strncmp(p, "->  ", 4) == 0)
	{
		p += 4;
		child = true;
	}
	if (strncmp(p, "Parallel ", 9) == 0)
		p += 9;
	for (int i = 0; i < lengthof(heads); i++)
	{
		if (strncmp(p, heads[i], strlen(heads[i])) == 0)
		{
			*detail_indent = s + (child ? 6 : 2);
			return true;
		}
	}
	return false;
}

/* A detail line of the node (not a child, InitPlan/SubPlan/CTE label) */
static bool
text_detail_line(const char *line, int detail_indent)
{
	const char *p = line + detail_indent;

	if (leading_spaces(line) != detail_indent || *p == '\0')
		return false;
	return strncmp(p, "->", 2) != 0 &&
		strncmp(p, "InitPlan ", 9) != 0 &&
		strncmp(p, "SubPlan ", 8) != 0 &&
		strncmp(p, "CTE ", 4) != 0;
}

/* Where the structured formats name a node's index */
static bool
structured_index_name(const char *line, ExplainFormat format)
{
	const char *p = line + leading_spaces(line);

	switch (format)
	{
		case EXPLAIN_FORMAT_JSON:
			return strncmp(p, "\"Index Name\": ", 14) == 0;
		case EXPLAIN_FORMAT_YAML:
			return strncmp(p, "Index Name: ", 12) == 0;
		case EXPLAIN_FORMAT_XML:
			return strncmp(p, "<Index-Name>", 12) == 0;
		default:
			return false;
	}
}

/* Does the line name the node's index as EXPLAIN writes it? */
static bool
names_index(const char *line, ExplainFormat format, Oid indexid)
{
	const char *name = index_name(indexid);
	StringInfoData buf;

	if (name == NULL)
		return false;
	initStringInfo(&buf);
	switch (format)
	{
		case EXPLAIN_FORMAT_TEXT:
			appendStringInfo(&buf, " %s ", quote_identifier(name));
			break;
		case EXPLAIN_FORMAT_XML:
			appendStringInfo(&buf, ">%s<", escape_xml(name));
			break;
		default:
			appendStringInfoChar(&buf, ' ');
			escape_json(&buf, name);
			break;
	}
	return strstr(line, buf.data) != NULL;
}

static char *
structured_property(ExplainFormat format, int indent, const char *name,
					const char *value)
{
	StringInfoData buf;
	char	   *xml;

	initStringInfo(&buf);
	appendStringInfoSpaces(&buf, indent);
	switch (format)
	{
		case EXPLAIN_FORMAT_JSON:
			/* "Index Name" is never a node's last property */
			appendStringInfo(&buf, "\"%s\": %s,", name, value);
			break;
		case EXPLAIN_FORMAT_YAML:
			appendStringInfo(&buf, "%s: %s", name, value);
			break;
		default:
			xml = pstrdup(name);
			for (char *c = xml; *c; c++)
				if (*c == ' ')
					*c = '-';
			appendStringInfo(&buf, "<%s>%s</%s>", xml, value, xml);
			break;
	}
	return buf.data;
}

/*
 * The output lines with the counters added, or NIL if the index scan nodes
 * printed are not the ones kept.
 */
static List *
add_counters(HintCapture *cap, List *lines)
{
	List	   *out = NIL;
	ListCell   *nodecell = list_head(cap->nodes);
	bool		text = (cap->format == EXPLAIN_FORMAT_TEXT);
	int			nlines = list_length(lines);

	for (int i = 0; i < nlines; i++)
	{
		char	   *line = list_nth(lines, i);
		int			detail_indent = 0;
		HintNode   *node;

		out = lappend(out, line);
		if (text ? !text_index_header(line, &detail_indent) :
			!structured_index_name(line, cap->format))
			continue;
		if (nodecell == NULL)
			return NIL;
		node = lfirst(nodecell);
		nodecell = lnext(cap->nodes, nodecell);
		if (!names_index(line, cap->format, node->indexid))
			return NIL;
		if (!node->forein)
			continue;

		if (text)
		{
			while (i + 1 < nlines &&
				   text_detail_line(list_nth(lines, i + 1), detail_indent))
				out = lappend(out, list_nth(lines, ++i));
			out = lappend(out,
						  psprintf("%*sHints: lookups=" UINT64_FORMAT
								   " hits=" UINT64_FORMAT
								   " move_rights=" UINT64_FORMAT
								   " fallbacks=" UINT64_FORMAT "%s",
								   detail_indent, "",
								   node->counts.lookups,
								   node->counts.hint_hits,
								   node->counts.move_rights,
								   node->counts.fallbacks,
								   node->leader_only ? " (leader only)" : ""));
		}
		else
		{
			static const char *const names[] = {
				"Hint Lookups", "Hint Hits", "Hint Move Rights", "Hint Fallbacks"
			};
			uint64		values[4];
			int			indent = leading_spaces(line);

			if (cap->format == EXPLAIN_FORMAT_JSON &&
				line[strlen(line) - 1] != ',')
				return NIL;
			values[0] = node->counts.lookups;
			values[1] = node->counts.hint_hits;
			values[2] = node->counts.move_rights;
			values[3] = node->counts.fallbacks;

			for (int k = 0; k < lengthof(names); k++)
				out = lappend(out,
							  structured_property(cap->format, indent, names[k],
												  psprintf(UINT64_FORMAT,
														   values[k])));
			if (node->leader_only)
				out = lappend(out,
							  structured_property(cap->format, indent,
												  "Hint Counts Leader Only",
												  "true"));
		}
	}
	if (nodecell != NULL)
		return NIL;
	return out;
}

static void
hintdest_startup(DestReceiver *self, int operation, TupleDesc typeinfo)
{
	HintDest   *d = (HintDest *) self;

	d->operation = operation;
	d->typeinfo = typeinfo;
}

static bool
hintdest_receive(TupleTableSlot *slot, DestReceiver *self)
{
	HintDest   *d = (HintDest *) self;
	MemoryContext old = MemoryContextSwitchTo(d->capture->cxt);
	bool		isnull;
	Datum		value = slot_getattr(slot, 1, &isnull);

	d->lines = lappend(d->lines, isnull ? NULL : TextDatumGetCString(value));
	MemoryContextSwitchTo(old);
	return true;
}

/* Sends the output on: split into lines, counters added, joined back */
static void
hintdest_shutdown(DestReceiver *self)
{
	HintDest   *d = (HintDest *) self;
	HintCapture *cap = d->capture;
	DestReceiver *target = d->target;
	MemoryContext old = MemoryContextSwitchTo(cap->cxt);
	List	   *lines = NIL;
	List	   *out = NIL;
	bool		ok = !list_member_ptr(d->lines, NULL);
	TupleTableSlot *slot;
	ListCell   *lc;

	if (ok && cap->nodes != NIL)
	{
		foreach(lc, d->lines)
		{
			char	   *text = pstrdup(lfirst(lc));
			char	   *p = text;
			char	   *nl;

			while ((nl = strchr(p, '\n')) != NULL)
			{
				*nl = '\0';
				lines = lappend(lines, p);
				p = nl + 1;
			}
			lines = lappend(lines, p);
		}
		out = add_counters(cap, lines);
	}
	if (out != NIL && cap->format != EXPLAIN_FORMAT_TEXT)
	{
		StringInfoData buf;

		/* structured formats send one tuple */
		initStringInfo(&buf);
		foreach(lc, out)
		{
			if (buf.len > 0)
				appendStringInfoChar(&buf, '\n');
			appendStringInfoString(&buf, lfirst(lc));
		}
		out = list_make1(buf.data);
	}
	if (out == NIL)
		out = d->lines;

	slot = MakeSingleTupleTableSlot(d->typeinfo, &TTSOpsVirtual);
	target->rStartup(target, d->operation, d->typeinfo);
	foreach(lc, out)
	{
		ExecClearTuple(slot);
		slot->tts_isnull[0] = (lfirst(lc) == NULL);
		slot->tts_values[0] = lfirst(lc) ? CStringGetTextDatum(lfirst(lc)) : (Datum) 0;
		ExecStoreVirtualTuple(slot);
		target->receiveSlot(slot, target);
	}
	target->rShutdown(target);
	ExecDropSingleTupleTableSlot(slot);
	MemoryContextSwitchTo(old);
}

static void
hintdest_destroy(DestReceiver *self)
{
	/* the target belongs to our caller */
}

/* ANALYZE on, and the output format, as ExplainQuery will read them */
static bool
explain_wants_hints(ExplainStmt *stmt, ExplainFormat *format)
{
	bool		analyze = false;
	ListCell   *lc;

	*format = EXPLAIN_FORMAT_TEXT;
	foreach(lc, stmt->options)
	{
		DefElem    *opt = (DefElem *) lfirst(lc);

		if (strcmp(opt->defname, "analyze") == 0)
			analyze = defGetBoolean(opt);
		else if (strcmp(opt->defname, "format") == 0)
		{
			char	   *p = defGetString(opt);

			if (strcmp(p, "text") == 0)
				*format = EXPLAIN_FORMAT_TEXT;
			else if (strcmp(p, "xml") == 0)
				*format = EXPLAIN_FORMAT_XML;
			else if (strcmp(p, "json") == 0)
				*format = EXPLAIN_FORMAT_JSON;
			else if (strcmp(p, "yaml") == 0)
				*format = EXPLAIN_FORMAT_YAML;
			else
				return false;	/* ExplainQuery reports it */
		}
	}
	return analyze;
}

static void
forein_explain_ProcessUtility(PlannedStmt *pstmt, const char *queryString,
							  bool readOnlyTree,
							  ProcessUtilityContext context,
							  ParamListInfo params,
							  QueryEnvironment *queryEnv,
							  DestReceiver *dest, QueryCompletion *qc)
{
	Node	   *parsetree = pstmt->utilityStmt;
	ExplainFormat format;
	HintCapture cap;
	HintDest	hdest;

	if (!forein_explain_hints || dest == NULL ||
		!IsA(parsetree, ExplainStmt) ||
		!explain_wants_hints((ExplainStmt *) parsetree, &format))
	{
		if (prev_ProcessUtility)
			prev_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, dest, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree,
									context, params, queryEnv, dest, qc);
		return;
	}

	memset(&cap, 0, sizeof(cap));
	cap.format = format;
	cap.cxt = AllocSetContextCreate(CurrentMemoryContext, "forein explain",
									ALLOCSET_DEFAULT_SIZES);
	cap.outer = current_capture;

	memset(&hdest, 0, sizeof(hdest));
	hdest.pub.receiveSlot = hintdest_receive;
	hdest.pub.rStartup = hintdest_startup;
	hdest.pub.rShutdown = hintdest_shutdown;
	hdest.pub.rDestroy = hintdest_destroy;
	hdest.pub.mydest = dest->mydest;
	hdest.target = dest;
	hdest.capture = &cap;

	current_capture = &cap;
	PG_TRY();
	{
		if (prev_ProcessUtility)
			prev_ProcessUtility(pstmt, queryString, readOnlyTree, context,
								params, queryEnv, &hdest.pub, qc);
		else
			standard_ProcessUtility(pstmt, queryString, readOnlyTree,
									context, params, queryEnv, &hdest.pub,
									qc);
	}
	PG_FINALLY();
	{
		current_capture = cap.outer;
	}
	PG_END_TRY();
	MemoryContextDelete(cap.cxt);
}

/* Installs the hooks; from forein_hooks_init */
void
forein_explain_init(void)
{
	prev_ProcessUtility = ProcessUtility_hook;
	ProcessUtility_hook = forein_explain_ProcessUtility;
	prev_ExecutorStart = ExecutorStart_hook;
	ExecutorStart_hook = forein_explain_ExecutorStart;
	prev_ExecutorEnd = ExecutorEnd_hook;
	ExecutorEnd_hook = forein_explain_ExecutorEnd;
}
