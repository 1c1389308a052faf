/*
 * test_capi.c: the offload C ABI used from C, as PostgreSQL uses it.
 * Compiled as C (so the header stays C) and linked with only the
 * forein_offload_capi library (so its source list is complete).
 *
 * A two-level index of 16 leaves under one root, each leaf owning 1/16 of
 * word space: after a refresh, every key word's primary hint is its leaf;
 * after a sync without leaf 3 (merged away), no hint names it; the image
 * survives any truncation and random bytes; bad arguments give errors.
 * The image's usage is one row of its records, in the backend's unit.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "forein_offload.h"

static int failures = 0;

#define CHECK(cond) \
	do { \
		if (!(cond)) { \
			fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); \
			failures++; \
		} \
	} while (0)

#define NLEAVES 16

static uint64_t
leaf_lo(int i)
{
	return (uint64_t) i << 60;
}

static size_t
make_nodes(forein_offload_node *nodes, int skip_leaf)
{
	size_t		n = 0;
	int			i;

	memset(&nodes[n], 0, sizeof(nodes[n]));
	nodes[n].node = 1;			/* the root */
	nodes[n].level = 1;
	nodes[n].lo = 0;
	nodes[n].hi_inf = 1;
	nodes[n].version = 1;
	n++;
	for (i = 0; i < NLEAVES; i++)
	{
		if (i == skip_leaf)
			continue;
		memset(&nodes[n], 0, sizeof(nodes[n]));
		nodes[n].node = (uint32_t) (10 + i);
		nodes[n].level = 0;
		nodes[n].lo = leaf_lo(i);
		/* a merged-away leaf's range goes to its right neighbour's... left one */
		nodes[n].hi = (i == skip_leaf - 1) ? leaf_lo(i + 2) : leaf_lo(i + 1);
		nodes[n].hi_inf = (i == NLEAVES - 1 || (i == skip_leaf - 1 && i + 2 >= NLEAVES));
		nodes[n].version = 2;
		n++;
	}
	return n;
}

static uint64_t
xorshift(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

int
main(void)
{
	char		err[256];
	int			lpm = forein_offload_backend_id("switch_lpm");
	int			none = forein_offload_backend_id("none");
	forein_offload_config config;
	forein_offload_manager *m;
	forein_offload_node nodes[NLEAVES + 1];
	uint64_t	words[NLEAVES * 4];
	size_t		nwords = 0;
	size_t		n, len, i;
	uint64_t	version = 0;
	unsigned char *image;
	forein_offload_hints h;
	forein_offload_stats st;
	forein_offload_record *records;
	uint64_t	seed = 0x9e3779b97f4a7c15ULL;
	int			k;

	/* registry */
	CHECK(forein_offload_backend_count() >= 2);
	CHECK(lpm >= 0 && none >= 0 && lpm != none);
	CHECK(strcmp(forein_offload_backend_name(lpm), "switch_lpm") == 0);
	CHECK(forein_offload_backend_name(-1) == NULL);
	CHECK(forein_offload_backend_name(forein_offload_backend_count()) == NULL);
	CHECK(forein_offload_backend_id("bogus") == -1);
	CHECK(forein_offload_backend_id(NULL) == -1);
	CHECK(strstr(forein_offload_backend_names(), "switch_lpm") != NULL);
	CHECK(strstr(forein_offload_backend_names(), "none") != NULL);
	CHECK(strcmp(forein_offload_backend_unit(lpm), "LPM entries") == 0);
	CHECK(forein_offload_default_capacity(lpm) == 73000);
	CHECK(forein_offload_max_image_bytes(lpm, 0) > 73000);
	CHECK(forein_offload_max_image_bytes(lpm, 10) < forein_offload_max_image_bytes(lpm, 1000));
	CHECK(forein_offload_max_image_bytes(-7, 10) == 0);

	/* backends an index can use: start hints, or none */
	CHECK(forein_offload_backend_serves_lookups(lpm) == 1);
	CHECK(forein_offload_backend_serves_lookups(none) == 1);
	CHECK(forein_offload_backend_serves_lookups(-1) == 0);
	CHECK(strstr(forein_offload_lookup_backend_names(), "switch_lpm") != NULL);
	CHECK(forein_offload_lookup_backend_id("switch_lpm", err, sizeof(err)) == lpm);
	err[0] = '\0';
	CHECK(forein_offload_lookup_backend_id("bogus", err, sizeof(err)) == -1);
	CHECK(strstr(err, "registered backends") != NULL);
	CHECK(forein_offload_lookup_backend_id(NULL, err, sizeof(err)) == -1);
	k = forein_offload_backend_id("switch_visibility");
	if (k >= 0)
	{
		/* write visibility on the network path: no start hints */
		CHECK(forein_offload_backend_serves_lookups(k) == 0);
		CHECK(strstr(forein_offload_lookup_backend_names(), "switch_visibility") == NULL);
		err[0] = '\0';
		CHECK(forein_offload_lookup_backend_id("switch_visibility", err, sizeof(err)) == -1);
		CHECK(strstr(err, "gives no start hints") != NULL);
	}

	/* errors */
	err[0] = '\0';
	CHECK(forein_offload_manager_create(99, NULL, err, sizeof(err)) == NULL);
	CHECK(strstr(err, "registered backends") != NULL);

	/* the backend's own settings: validated by the backend */
	CHECK(strcmp(forein_offload_default_backend_name(), forein_offload_backend_name(lpm)) == 0);
	CHECK(strstr(forein_offload_backend_settings(lpm), "hot_leaves 64 0 ") != NULL);
	CHECK(strcmp(forein_offload_backend_settings(forein_offload_backend_id("none")), "") == 0);
	CHECK(forein_offload_backend_settings(99) == NULL);
	CHECK(forein_offload_check_settings(lpm, "hot_leaves=3, bottom_line_level = 2", err, sizeof(err)) == 0);
	CHECK(forein_offload_check_settings(lpm, NULL, err, sizeof(err)) == 0);
	CHECK(forein_offload_check_settings(lpm, "layer_nodes=3", err, sizeof(err)) == -1);
	CHECK(strstr(err, "no setting \"layer_nodes\"") != NULL);
	CHECK(forein_offload_check_settings(lpm, "hot_leaves=x", err, sizeof(err)) == -1);
	CHECK(strstr(err, "takes an integer") != NULL);
	CHECK(strcmp(forein_offload_backend_capacity_alias(lpm), "lpm_entries") == 0);
	CHECK(forein_offload_backend_capacity_alias(forein_offload_backend_id("none")) == NULL);
	forein_offload_config_init(&config);
	CHECK(config.settings == NULL);
	config.settings = "hot_leaves=-1";
	CHECK(forein_offload_manager_create(lpm, &config, err, sizeof(err)) == NULL);
	CHECK(strstr(err, "hot_leaves") != NULL);
	config.settings = "hot_leaves=1";
	m = forein_offload_manager_create(lpm, &config, err, sizeof(err));
	CHECK(m != NULL);
	forein_offload_manager_destroy(m);
	forein_offload_config_init(&config);
	config.capacity = 1000;
	m = forein_offload_manager_create(lpm, &config, err, sizeof(err));
	CHECK(m != NULL);
	if (m == NULL)
		return 1;
	CHECK(forein_offload_manager_sync_nodes(m, NULL, 3, err, sizeof(err)) == -1);

	/* a refresh over the node table and key words */
	n = make_nodes(nodes, -1);
	CHECK(forein_offload_manager_sync_nodes(m, nodes, n, err, sizeof(err)) == 0);
	for (i = 0; i < NLEAVES; i++)
		for (k = 0; k < 4; k++)
			words[nwords++] = leaf_lo((int) i) + ((uint64_t) k << 40);
	{
		uint64_t	unsorted[2] = {5, 1};

		CHECK(forein_offload_manager_refresh(m, unsorted, 2, err, sizeof(err)) == -1);
		CHECK(strstr(err, "ascending") != NULL);
	}
	for (k = 0; k < 100; k++)
		forein_offload_manager_record_access(m, words[3]);
	CHECK(forein_offload_manager_refresh(m, words, nwords, err, sizeof(err)) == 0);

	forein_offload_manager_stats(m, &st);
	CHECK(st.capacity == 1000);
	CHECK(st.used > 0 && st.used <= st.capacity);
	CHECK(st.used == st.target_records);
	CHECK(st.live_nodes == NLEAVES + 1);
	CHECK(st.refreshes == 1);

	len = forein_offload_manager_image(m, NULL, 0, &version);
	CHECK(len > 0 && len == st.image_bytes);
	CHECK(version == st.image_version && version > 0);
	image = malloc(len);
	CHECK(forein_offload_manager_image(m, image, len, NULL) == len);

	for (i = 0; i < nwords; i++)
	{
		forein_offload_hints direct;

		forein_offload_hint_lookup(lpm, image, len, words[i], &h);
		CHECK(h.primary.node == 10 + i / 4);
		CHECK(h.primary.level == 0);
		forein_offload_manager_hint(m, words[i], &direct);
		CHECK(direct.primary.node == h.primary.node);
	}
	/* the none backend and bad ids never hint */
	forein_offload_hint_lookup(none, image, len, words[0], &h);
	CHECK(h.primary.node == 0 && h.secondary.node == 0);
	forein_offload_hint_lookup(1000, image, len, words[0], &h);
	CHECK(h.primary.node == 0);

	/* records list the installed nodes */
	n = forein_offload_image_records(lpm, image, len, NULL, 0);
	CHECK(n == st.used);
	records = calloc(n + 1, sizeof(*records));
	CHECK(forein_offload_image_records(lpm, image, len, records, n) == n);
	for (i = 0; i < n; i++)
		CHECK(records[i].node == 1 || (records[i].node >= 10 && records[i].node < 10 + NLEAVES));
	free(records);

	/* usage by part: switch_lpm has one table, its records in its unit */
	{
		forein_offload_usage_row rows[4];

		memset(rows, 0x7f, sizeof(rows));
		CHECK(forein_offload_image_usage(lpm, image, len, 0, NULL, 0) == 1);
		CHECK(forein_offload_image_usage(lpm, image, len, 0, rows, 4) == 1);
		CHECK(strcmp(rows[0].unit, forein_offload_backend_unit(lpm)) == 0);
		CHECK(strcmp(rows[0].resource, "LPM entries") == 0);
		CHECK(strlen(rows[0].device) > 0 && strlen(rows[0].device) < sizeof(rows[0].device));
		CHECK(rows[0].used == n && rows[0].used == st.used);
		CHECK(rows[0].capacity == forein_offload_default_capacity(lpm));
		CHECK(rows[1].used == UINT64_C(0x7f7f7f7f7f7f7f7f));	/* only max rows written */
		CHECK(forein_offload_image_usage(lpm, image, len, 1000, rows, 1) == 1);
		CHECK(rows[0].capacity == 1000 && rows[0].used == n);
		/* not an image: an empty device; bad ids: nothing */
		CHECK(forein_offload_image_usage(lpm, image, 3, 0, rows, 4) == 1);
		CHECK(rows[0].used == 0 && rows[0].capacity == 73000);
		CHECK(forein_offload_image_usage(lpm, NULL, 100, 0, rows, 4) == 1);
		CHECK(rows[0].used == 0);
		CHECK(forein_offload_image_usage(none, image, len, 0, rows, 4) == 1);
		CHECK(rows[0].used == 0 && rows[0].capacity == 0);
		/* every registered backend: NUL-terminated strings on any bytes */
		for (k = 0; k < forein_offload_backend_count(); k++)
		{
			size_t		r,
						got;

			memset(rows, 0x7f, sizeof(rows));
			got = forein_offload_image_usage(k, image, len, 0, rows, 4);
			for (r = 0; r < got && r < 4; r++)
			{
				CHECK(memchr(rows[r].device, 0, sizeof(rows[r].device)) != NULL);
				CHECK(memchr(rows[r].resource, 0, sizeof(rows[r].resource)) != NULL);
				CHECK(memchr(rows[r].unit, 0, sizeof(rows[r].unit)) != NULL);
			}
			(void) forein_offload_image_usage(k, NULL, 0, 0, rows, 4);
		}
		CHECK(forein_offload_image_usage(-1, image, len, 0, rows, 4) == 0);
		CHECK(forein_offload_image_usage(forein_offload_backend_count(), image, len, 0,
										 rows, 4) == 0);
	}

	/* torn and garbage images: any answer, no crash */
	for (i = 0; i <= len; i += (len > 4096 ? 7 : 1))
		forein_offload_hint_lookup(lpm, image, i, words[i % nwords], &h);
	for (k = 0; k < 2000; k++)
	{
		size_t		at = (size_t) (xorshift(&seed) % len);

		image[at] = (unsigned char) xorshift(&seed);
		forein_offload_hint_lookup(lpm, image, len, xorshift(&seed), &h);
	}
	CHECK(forein_offload_image_records(lpm, image, 3, NULL, 0) == 0);
	forein_offload_hint_lookup(lpm, NULL, 100, 42, &h);
	CHECK(h.primary.node == 0);
	free(image);

	/* leaf 3 merged away: no hint names it any more */
	n = make_nodes(nodes, 3);
	CHECK(forein_offload_manager_sync_nodes(m, nodes, n, err, sizeof(err)) == 0);
	CHECK(forein_offload_manager_refresh(m, words, nwords, err, sizeof(err)) == 0);
	for (i = 0; i < nwords; i++)
	{
		forein_offload_manager_hint(m, words[i], &h);
		CHECK(h.primary.node != 13 && h.secondary.node != 13);
		if (i / 4 == 2 || i / 4 == 3)
			CHECK(h.primary.node == 12 || h.primary.node == 1);
	}
	forein_offload_manager_stats(m, &st);
	CHECK(st.live_nodes == NLEAVES);
	CHECK(st.invalid_nodes == 0);	/* confirmed: the new image is applied */

	/*
	 * Nothing changed: once the samples' weight has faded (100 halves below
	 * 2^-20 in 27 refreshes) a refresh with the same node table and the
	 * same words asks no planner; other words do.
	 */
	for (k = 0; k < 40; k++)
		CHECK(forein_offload_manager_refresh(m, words, nwords, err, sizeof(err)) == 0);
	forein_offload_manager_stats(m, &st);
	{
		uint64_t	plans = st.plans,
					skipped = st.skipped_refreshes,
					image_version = st.image_version;

		CHECK(skipped > 0);
		CHECK(st.plans + st.skipped_refreshes == st.refreshes);
		CHECK(forein_offload_manager_sync_nodes(m, nodes, n, err, sizeof(err)) == 0);
		CHECK(forein_offload_manager_refresh(m, words, nwords, err, sizeof(err)) == 0);
		forein_offload_manager_stats(m, &st);
		CHECK(st.plans == plans);
		CHECK(st.skipped_refreshes == skipped + 1);
		CHECK(st.image_version == image_version);
		/* a word gone (the last leaf's last key): the next refresh plans */
		CHECK(forein_offload_manager_refresh(m, words, nwords - 1, err, sizeof(err)) == 0);
		forein_offload_manager_stats(m, &st);
		CHECK(st.plans == plans + 1);
	}

	forein_offload_manager_destroy(m);
	forein_offload_manager_destroy(NULL);

	if (failures != 0)
	{
		fprintf(stderr, "test_capi: %d checks failed\n", failures);
		return 1;
	}
	printf("test_capi: all checks passed\n");
	return 0;
}
