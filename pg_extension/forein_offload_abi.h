/*-------------------------------------------------------------------------
 *
 * forein_offload_abi.h
 *	  C ABI over the C++ offload layer (offload/): FOREIN's layered entry
 *	  selection and the switch_lpm flattening into disjoint word segments.
 *
 * The PostgreSQL side never sees C++: it hands over a node table and the
 * index's key words and gets back plain arrays.  No exception and no
 * PostgreSQL error crosses this boundary: a failure returns NULL with a
 * message in the caller's buffer, and the C++ side never calls back into
 * PostgreSQL (so no longjmp ever unwinds C++ frames).
 *
 * Portions Copyright (c) 2026, forein developers
 *
 * pg_extension/forein_offload_abi.h
 *
 *-------------------------------------------------------------------------
 */
#ifndef FOREIN_OFFLOAD_ABI_H
#define FOREIN_OFFLOAD_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C"
{
#endif

/* One node of the tree as the refresh read it */
typedef struct ForeinAbiNode
{
	uint64_t	lo;				/* word interval [lo, hi) */
	uint64_t	hi;
	uint64_t	version;
	double		weight;			/* sampled accesses (leaves) */
	uint32_t	block;			/* 0: a virtual root, never installed */
	int32_t		parent;			/* index into the node array; -1: root */
	uint16_t	level;			/* 0 = leaf */
	uint8_t		hi_inf;			/* hi is past 2^64 - 1 */
	uint8_t		pad;
} ForeinAbiNode;

typedef struct ForeinAbiOptions
{
	uint64_t	budget;			/* LPM entries for all layers together */
	uint16_t	bottom_line_level;	/* default 1: the lowest inner level */
	uint32_t	hot_leaves;		/* heaviest leaves pinned before the greedy */
} ForeinAbiOptions;

/* Layers of an entry, as offload::Layer */
#define FOREIN_ABI_LAYER_BOTTOM_LINE	0
#define FOREIN_ABI_LAYER_MAIN			1
#define FOREIN_ABI_LAYER_HOT_LEAF		2

/* An installed LPM entry: prefix value/len -> node */
typedef struct ForeinAbiEntry
{
	uint64_t	value;			/* high `len` bits; the rest zero */
	uint32_t	block;
	uint16_t	level;
	uint8_t		len;
	uint8_t		layer;
} ForeinAbiEntry;

/*
 * A maximal run of words with one longest-prefix-match answer: every word
 * from start up to the next segment's start (or 2^64 - 1) maps to block
 * (0: no entry matches).  Segments are ascending and the first starts at 0.
 */
typedef struct ForeinAbiSegment
{
	uint64_t	start;
	uint32_t	block;
	uint16_t	level;
	uint16_t	version_tag;	/* low 16 bits of the node's version */
} ForeinAbiSegment;

typedef struct ForeinAbiResult ForeinAbiResult;

typedef struct ForeinAbiSummary
{
	size_t		entries;
	size_t		main_segments;	/* LPM over all entries */
	size_t		bottom_segments;	/* LPM over the bottom-line layer alone */
	size_t		nodes;			/* distinct nodes with an entry */
	size_t		bottom_line_entries;
	size_t		main_entries;
	size_t		hot_leaf_entries;
	uint16_t	bottom_line_level;
	double		modelled_ama;
} ForeinAbiSummary;

/*
 * Runs FOREIN's layered selection over the node table (exactly one node
 * with parent -1; see offload/include/forein/offload/layers.h) and flattens
 * the result.  words[] (the keys' words, any order) is sorted in place.
 * Returns NULL on failure with a NUL-terminated message in errbuf.
 */
extern ForeinAbiResult *forein_abi_build(const ForeinAbiNode *nodes,
										 size_t nnodes,
										 uint64_t *words, size_t nwords,
										 const ForeinAbiOptions *options,
										 char *errbuf, size_t errlen);

extern void forein_abi_summary(const ForeinAbiResult *result,
							   ForeinAbiSummary *summary);
extern const ForeinAbiEntry *forein_abi_entries(const ForeinAbiResult *r);
extern const ForeinAbiSegment *forein_abi_main_segments(const ForeinAbiResult *r);
extern const ForeinAbiSegment *forein_abi_bottom_segments(const ForeinAbiResult *r);
extern void forein_abi_free(ForeinAbiResult *result);

#ifdef __cplusplus
}
#endif

#endif							/* FOREIN_OFFLOAD_ABI_H */
