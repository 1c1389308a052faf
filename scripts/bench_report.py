#!/usr/bin/env python3
"""bench_report.py: the report of scripts/bench-all.sh (docs/BENCHMARKS.md).

    python3 scripts/bench_report.py OUT [--docs DOCS]

Reads the CSVs the stages left under OUT (engine/backend_compare.csv,
pg-backends/pg_offload_bench.csv, testbed/summary.csv, sysbench/sysbench.csv,
pgbench-s*/pg_bench.csv, machine.txt, durations.csv; a stage that did not run
is reported as such), writes OUT/report/: one Markdown file per generated
block (<name>.md), the plots (gnuplot, PNG) and their data files. With --docs
it also copies the CSVs and plots to DOCS/bench/all/ and replaces every block
of DOCS/BENCHMARKS.md that sits between
    <!-- bench-all:<name> begin --> and <!-- bench-all:<name> end -->
with the new one; the prose around the blocks is left as it is.

Every number here is computed from the CSVs: medians of repetitions and
ratios of runs made in the same repetition; nothing is typed in except each
paper's headline result, quoted from shared/papers/DIGESTS.md.
"""

import csv
import glob
import math
import os
import re
import shutil
import statistics
import subprocess
import sys
from collections import defaultdict


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def med(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def fmt(x, digits=3):
    if x is None:
        return "-"
    # from 999.5 on, 3 significant digits would print 1e+03
    if abs(x) >= 1000 or abs(x) >= 10 ** digits - 0.5:
        return f"{x:,.0f}"
    return f"{x:.{digits}g}"


def ratio_cell(values):
    """'1.05 (0.98-1.10)': the median of per-repetition ratios and their spread."""
    values = [v for v in values if v is not None]
    if not values:
        return "-"
    if len(values) == 1:
        return f"{values[0]:.3f}"
    # the spread rounded outward, so that it always holds the median
    # (1.017 of 1.017..1.102 reads "1.017 (1.01-1.11)", not "(1.02-1.10)")
    lo = math.floor(min(values) * 100 + 1e-9) / 100
    hi = math.ceil(max(values) * 100 - 1e-9) / 100
    return f"{med(values):.3f} ({lo:.2f}-{hi:.2f})"


def keys_label(n):
    """1000000 -> '1M', 20000 -> '20k'."""
    for div, unit in ((1000000, "M"), (1000, "k")):
        if n >= div and n % div == 0:
            return f"{n // div}{unit}"
    return f"{n:,}"


def table(header, rows):
    out = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    out += ["| " + " | ".join(str(c) for c in row) + " |" for row in rows]
    return "\n".join(out) + "\n"


def not_run(stage):
    return f"*Stage `{stage}` did not run in this report's run (`scripts/bench-all.sh --stages {stage}`).*\n"


# --- engine -----------------------------------------------------------------

def engine_blocks(out):
    rows = read_csv(os.path.join(out, "engine", "backend_compare.csv"))
    if not rows:
        return {"engine": not_run("engine"), "engine-usage": not_run("engine")}, rows
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    points = list(dict.fromkeys((int(r["keys"]), float(r["zipf"])) for r in rows))
    by = {(int(r["keys"]), float(r["zipf"]), r["mode"]): r for r in rows}
    header = ["mode"] + [f"{keys_label(k)} keys, zipf {z:g}" for k, z in points]
    body = []
    for m in modes:
        cells = [f"`{m}`"]
        for k, z in points:
            r = by.get((k, z, m))
            if r is None:
                cells.append("-")
                continue
            cells.append(f"{float(r['mlookups']):.2f} M/s, x{float(r['speedup']):.2f} "
                         f"({float(r['speedup_min']):.2f}-{float(r['speedup_max']):.2f}), "
                         f"{float(r['nodes_per_op']):.2f} nodes")
        body.append(cells)
    first = rows[0]
    engine = (f"{first['ops']} lookups per run, {first['reps']} repetitions, the order of the modes rotating; "
              "per cell: median lookups/s, median of the per-repetition ratios to `none` (min-max), "
              "nodes visited per lookup.\n\n" + table(header, body))

    usage_header = ["backend", "keys", "used / capacity (unit)", "share", "hardware bytes",
                    "hint lookup (software model)", "oracle share, zipf " + f"{points[-1][1]:g}",
                    "nodes, same-bytes oracle"]
    usage_body = []
    for m in modes:
        if m in ("none", "oracle"):
            continue
        for k in dict.fromkeys(p[0] for p in points):
            zs = [z for kk, z in points if kk == k]
            r = by.get((k, zs[-1], m))
            if r is None:
                continue
            used, cap = int(r["used"]), int(r["capacity"])
            share = f"{100.0 * used / cap:.2g}%" if cap else "-"
            usage_body.append([f"`{m}`", keys_label(k), f"{used:,} / {cap:,} ({r['unit']})", share,
                               f"{int(r['hardware_bytes']):,}", f"{float(r['hint_ns']):.0f} ns",
                               f"{float(r['oracle_share']):.2f}", f"{float(r['same_bytes_nodes']):.2f}"])
    usage = table(usage_header, usage_body)
    return {"engine": engine, "engine-usage": usage}, rows


# --- PostgreSQL per backend ---------------------------------------------------

def per_rep(rows, metric, index):
    return {r["rep"]: float(r["value"]) for r in rows
            if r["metric"] == metric and r["index"] == index and r["value"]}


def rep_ratios(rows, metric, index, base, higher_better):
    a, b = per_rep(rows, metric, index), per_rep(rows, metric, base)
    return [(a[k] / b[k]) if higher_better else (b[k] / a[k]) for k in a if k in b and a[k] and b[k]]


def pg_backends_block(out):
    rows = read_csv(os.path.join(out, "pg-backends", "pg_offload_bench.csv"))
    if not rows:
        return not_run("pg-backends"), rows
    indexes = list(dict.fromkeys(r["index"] for r in rows))
    body = []
    for i in indexes:
        probe = med(list(per_rep(rows, "probe_ms", i).values()))
        tps = med(list(per_rep(rows, "pgbench_S_tps", i).values()))
        body.append([f"`{i}`" if i != "btree" else "btree",
                     fmt(probe), ratio_cell(rep_ratios(rows, "probe_ms", i, "btree", False)),
                     ratio_cell(rep_ratios(rows, "probe_ms", i, "none", False)) if i not in ("btree", "none") else "-",
                     fmt(tps), ratio_cell(rep_ratios(rows, "pgbench_S_tps", i, "btree", True)),
                     ratio_cell(rep_ratios(rows, "pgbench_S_tps", i, "none", True)) if i not in ("btree", "none") else "-"])
    header = ["index (offload)", "probes: median ms", "vs btree", "vs forein none",
              "pgbench -S: median tps", "vs btree", "vs forein none"]
    return ("Ratios: speed relative to the base, >1 faster, median of the per-repetition ratios "
            "(min-max).\n\n" + table(header, body)), rows


# --- testbed --------------------------------------------------------------------

def testbed_block(out):
    rows = read_csv(os.path.join(out, "testbed", "summary.csv"))
    if not rows:
        return not_run("testbed"), rows
    body = []
    for r in rows:
        body.append([f"`{r['backend']}`", fmt(float(r["ops_per_s_hinted"])), fmt(float(r["ops_per_s_plain"])),
                     f"{float(r['ratio']):.3f}", f"{r['p50_us_hinted']} / {r['p99_us_hinted']}",
                     f"{r['p50_us_plain']} / {r['p99_us_plain']}",
                     f"{r['hint_hits']} / {r['hinted_requests']}", r["wrong"]])
    r0 = rows[0]
    head = (f"{r0['servers']} forein-kv-server processes, {int(r0['keys']):,} keys, workload {r0['workload']}, "
            f"zipf {r0['zipf']}, {r0['rounds']} rounds of {r0['seconds']} s with hints and without "
            "(forein-switch --hints off), medians.\n\n")
    header = ["backend", "ops/s, hints", "ops/s, no hints", "ratio", "p50/p99 us, hints",
              "p50/p99 us, no hints", "hint hits / hinted requests", "wrong answers"]
    return head + table(header, body), rows


# --- sysbench and pgbench -------------------------------------------------------

def sysbench_tests(rows):
    """Per test: btree's and forein's tps by repetition, and the
    per-repetition ratios forein / btree."""
    for test in dict.fromkeys(r["test"] for r in rows):
        def tps(index):
            return {r["rep"]: float(r["tps"]) for r in rows if r["test"] == test and r["index"] == index}
        b, f = tps("btree"), tps("forein")
        yield test, b, f, [f[k] / b[k] for k in f if k in b and b[k]]


def buffer_reads(rows, test, index):
    """Median blocks read from outside shared_buffers per run (pg_stat_database),
    or "-" for CSVs from before the column."""
    vals = [float(r["blks_read"]) for r in rows
            if r["test"] == test and r["index"] == index and r.get("blks_read") not in (None, "")]
    return fmt(med(vals)) if vals else "-"


def id_index_mb(rows, test, index):
    """The id indexes' median size after a run, in MB, or "-" for CSVs from
    before the column."""
    vals = [float(r["id_index_bytes"]) / 1e6 for r in rows
            if r["test"] == test and r["index"] == index and r.get("id_index_bytes") not in (None, "")]
    return fmt(med(vals)) if vals else "-"


def sysbench_table(rows):
    body = [[test, fmt(med(list(b.values()))), fmt(med(list(f.values()))), ratio_cell(ratios), str(len(ratios)),
             f"{buffer_reads(rows, test, 'btree')} / {buffer_reads(rows, test, 'forein')}",
             f"{id_index_mb(rows, test, 'btree')} / {id_index_mb(rows, test, 'forein')}"]
            for test, b, f, ratios in sysbench_tests(rows)]
    return table(["test", "btree tps", "forein tps", "forein / btree", "repetitions",
                  "blocks read past shared_buffers per run, btree / forein",
                  "id indexes after the run, MB, btree / forein"], body)


def sysbench_block(out):
    rows = read_csv(os.path.join(out, "sysbench", "sysbench.csv"))
    if not rows:
        return not_run("sysbench"), rows, []
    text = "Separate runs, alternating:\n\n" + sysbench_table(rows)
    concurrent = read_csv(os.path.join(out, "sysbench", "sysbench_concurrent.csv"))
    if concurrent:
        text += ("\nBoth databases at once, half the threads each (the machine's other load falls on both "
                 "alike):\n\n" + sysbench_table(concurrent))
    return text, rows, concurrent


PGBENCH_METRICS = [
    ("pgbench_S_tps", "pgbench -S (select only), tps", True),
    ("pgbench_S_mixed_us", "pgbench -S interleaved in one run, mean transaction us", False),
    ("pgbench_tpcb_tps", "pgbench TPC-B-like, tps", True),
    ("pgbench_tpcb_mixed_us", "pgbench TPC-B-like interleaved in one run, mean transaction us", False),
    ("pgbench_N_tps", "pgbench -N, tps", True),
    ("probe_heap_ms", "nested-loop probes with heap, ms", False),
    ("probe_ios_ms", "nested-loop probes, index only, ms", False),
    ("build_ms", "CREATE INDEX, ms", False),
    ("size_pages", "index size, pages", False),
    ("insert_ms", "random inserts (unlogged), ms", False),
    ("insert_logged_ms", "random inserts (logged), ms", False),
]


def pgbench_block(out):
    dirs = sorted(glob.glob(os.path.join(out, "pgbench-s*")), key=lambda d: int(re.sub(r"\D", "", os.path.basename(d)) or 0))
    all_rows = {}
    body = []
    for d in dirs:
        rows = read_csv(os.path.join(d, "pg_bench.csv"))
        if not rows:
            continue
        scale = os.path.basename(d)[len("pgbench-s"):]
        all_rows[scale] = rows
        for metric, label, higher in PGBENCH_METRICS:
            b = med(list(per_rep(rows, metric, "btree").values()))
            f = med(list(per_rep(rows, metric, "forein").values()))
            if b is None or f is None:
                continue
            ratios = rep_ratios(rows, metric, "forein", "btree", higher)
            if metric == "size_pages":
                ratios = [f / b]
            body.append([scale, label, fmt(b), fmt(f), ratio_cell(ratios)])
            bound = per_rep(rows, metric, "tid")
            if metric == "pgbench_S_mixed_us" and bound:
                # the same run's heap fetch by ctid with no index: no index
                # can make -S cheaper, so btree / it bounds forein / btree
                body.append([scale, "-S interleaved, the bound: the heap fetch by ctid, no index", fmt(b),
                             fmt(med(list(bound.values()))), ratio_cell(rep_ratios(rows, metric, "tid", "btree", False))])
    if not body:
        return not_run("pgbench"), all_rows
    return ("Ratio: forein's speed relative to btree (>1 faster), median of the per-repetition ratios "
            "(min-max); for the index size, forein's pages over btree's.\n\n"
            + table(["scale", "measure", "btree", "forein", "forein vs btree"], body)
            + probe_paths_table(all_rows)), all_rows


# the probe measure's paths besides btree and forein (run_pg_bench.sh)
PROBE_PATHS = [("btree", "btree"), ("hash", "hash index"), ("tid", "TID scan"),
               ("forein_nohint", "forein, hints off"), ("forein", "forein")]


def probe_paths_table(all_rows):
    """The nested-loop probes with the heap fetch against every path the
    run measured (hash index, TID scan, forein with its hints off): median
    ms per path, forein's speed relative to each, median of the
    per-repetition ratios (min-max); wall time and the backend's CPU time."""
    body = []
    for scale, rows in all_rows.items():
        for metric, label in (("probe_heap_ms", "wall"), ("probe_heap_cpu_ms", "backend CPU")):
            if not per_rep(rows, metric, "hash") and not per_rep(rows, metric, "tid"):
                continue
            cells = [fmt(med(list(per_rep(rows, metric, p).values()))) for p, _ in PROBE_PATHS]
            ratios = [ratio_cell(rep_ratios(rows, metric, "forein", p, False)) for p, _ in PROBE_PATHS[:-1]]
            body.append([scale, label] + cells + ratios)
    if not body:
        return ""
    return ("\nThe same probes with the heap fetch against the alternatives (each on its own identical copy "
            "of the accounts; the TID scan fetches each probe's row by its ctid, with no index), ms, "
            "and forein's speed relative to each (>1 faster):\n\n"
            + table(["scale", "time"] + [n for _, n in PROBE_PATHS]
                    + [f"forein vs {n}" for _, n in PROBE_PATHS[:-1]], body))


# --- papers ---------------------------------------------------------------------

def papers_block(engine_rows, testbed_rows):
    def engine(mode, zipf=0.99):
        rs = [r for r in engine_rows if r["mode"] == mode and abs(float(r["zipf"]) - zipf) < 1e-9]
        return ", ".join(f"x{float(r['speedup']):.2f} at {keys_label(int(r['keys']))} keys" for r in rs) or "-"

    def testbed(mode):
        rs = [r for r in testbed_rows if r["backend"] == mode]
        return f"testbed x{float(rs[0]['ratio']):.2f}" if rs else "testbed not run"

    rows = [
        ["FOREIN (switch_lpm)", "~1.2x throughput static, 1.05x dynamic (1M keys, Zipf 0.9-0.99)",
         f"engine {engine('switch_lpm')}; {testbed('switch_lpm')}",
         "in-process the walk is the whole request, so skipping inner nodes gives more than the paper's end to end; on our testbed the ~500 us kernel network path hides it"],
        ["Fat-B+Tree (fattree)", "3.93x throughput over RDMA, 1.32-1.35x over Ethernet (Zipf 0.99)",
         f"engine {engine('fattree')}; {testbed('fattree')}",
         "the paper saves an RDMA round trip per tree level; here the saving is node visits on the host, hidden on the testbed by its network path"],
        ["Honeycomb (fpga)", "1.9x (uniform) / 1.8x (Zipf) YCSB B/C/D over eRPC-Masstree",
         f"engine {engine('fpga')}; {testbed('fpga')}",
         "the paper's FPGA serves GET/SCAN without the CPU, against eRPC-Masstree; here the host still walks from the hinted node, so the gain is the skipped inner nodes"],
        ["DPA-Store (dpa)", "33 Mops GET on the DPA, hot cache +30%",
         f"engine {engine('dpa')}; {testbed('dpa')}",
         "the paper reports the DPA serving GETs itself (a throughput, not a speedup); here its learned index only hints the host's leaf"],
        ["Switch-delta (switch_visibility)", "write-only median latency -43% to -50%",
         "not a lookup backend: see docs/switch-delta-experiments.md",
         "measured by tests/bench/run_switch_delta.sh, not by bench-all"],
    ]
    return table(["paper (backend)", "paper's headline", "ours (speedup vs no hints)", "why they differ"], rows)


# --- plots ------------------------------------------------------------------------

def gnuplot(script, report, size="900,520"):
    if shutil.which("gnuplot") is None:
        print("bench_report: gnuplot not found, no plots (apt-get install gnuplot-nox)", file=sys.stderr)
        return False
    term = f"set terminal pngcairo size {size} font 'DejaVu Sans,11'"
    probe = subprocess.run(["gnuplot", "-e", "set terminal pngcairo"], capture_output=True)
    if probe.returncode != 0:
        term = f"set terminal png size {size}"
    res = subprocess.run(["gnuplot"], input=term + "\nset termoption noenhanced\n" + script,
                         text=True, capture_output=True, cwd=report)
    if res.returncode != 0:
        print("bench_report: gnuplot failed:\n" + res.stderr, file=sys.stderr)
        return False
    return True


def series_plot(rows, report, name, keep, x, y, settings):
    """One line per mode through the rows `keep` accepts: x against the
    column y with its _min/_max as error bars; name.png, or None."""
    modes = list(dict.fromkeys(r["mode"] for r in rows))
    with open(os.path.join(report, name + ".dat"), "w") as f:
        for m in modes:
            f.write(f'"{m}"\n')
            for r in rows:
                if r["mode"] == m and keep(r):
                    f.write(f"{r[x]} {r[y]} {r[y + '_min']} {r[y + '_max']}\n")
            f.write("\n\n")
    plots = ", ".join(f"'{name}.dat' index {i} using 1:2:3:4 with yerrorlines title '{m}'"
                      for i, m in enumerate(modes))
    ok = gnuplot(f"set output '{name}.png'\n{settings}\nset grid\nset key outside right\nplot {plots}\n", report)
    return name + ".png" if ok else None


def plot_engine(rows, report):
    if not rows:
        return []
    big = max(int(r["keys"]) for r in rows)
    hot = max(float(r["zipf"]) for r in rows)
    made = [
        series_plot(rows, report, "speedup_vs_skew", lambda r: int(r["keys"]) == big, "zipf", "speedup",
                    f"""set title "Engine lookups, {keys_label(big)} keys: speedup over no hints vs skew (median, min-max)"
set xlabel 'Zipf theta (0 = uniform)'
set ylabel 'lookups/s relative to none'
set yrange [0.9:*]"""),
        series_plot(rows, report, "throughput_vs_keys", lambda r: abs(float(r["zipf"]) - hot) < 1e-9, "keys",
                    "mlookups", f"""set title "Engine lookups, zipf {hot:g}: throughput per backend vs keys (median, min-max)"
set xlabel 'keys'
set logscale x
set ylabel 'million lookups/s'
set yrange [0:*]"""),
    ]
    return [m for m in made if m]


def plot_sql(pg_rows, sysbench_rows, sysbench_concurrent, pgbench_rows, report):
    """Bars of forein / btree: sysbench and pgbench, each measure run
    separately and under the same load (sysbench's databases at once,
    pgbench's interleaved runs), then the per-backend probes and -S."""
    bars = []  # (label, median ratio, min, max)
    for rows, how in ((sysbench_rows, ""), (sysbench_concurrent, " (at once)")):
        for test, _, _, rs in sysbench_tests(rows):
            if rs:
                bars.append((f"sysbench {test}{how}", med(rs), min(rs), max(rs)))
    for scale, rows in pgbench_rows.items():
        for metric, name, higher in (("pgbench_S_tps", "-S", True), ("pgbench_S_mixed_us", "-S interleaved", False),
                                     ("pgbench_tpcb_tps", "TPC-B", True),
                                     ("pgbench_tpcb_mixed_us", "TPC-B interleaved", False),
                                     ("pgbench_N_tps", "-N", True)):
            rs = rep_ratios(rows, metric, "forein", "btree", higher)
            if rs:
                bars.append((f"pgbench {name} s{scale}", med(rs), min(rs), max(rs)))
    for i in dict.fromkeys(r["index"] for r in pg_rows):
        if i == "btree":
            continue
        for metric, name, higher in (("probe_ms", "probes", False), ("pgbench_S_tps", "-S", True)):
            rs = rep_ratios(pg_rows, metric, i, "btree", higher)
            if rs:
                bars.append((f"{name} {i}", med(rs), min(rs), max(rs)))
    if not bars:
        return []
    with open(os.path.join(report, "sql_vs_btree.dat"), "w") as f:
        for label, m, lo, hi in bars:
            f.write(f'"{label}" {m} {lo} {hi}\n')
    if gnuplot("""set output 'sql_vs_btree.png'
set title "PostgreSQL: forein relative to btree (median, min-max; >1 = forein faster)"
set ylabel 'forein / btree'
set yrange [0:*]
set grid ytics
set style data histograms
set style histogram errorbars gap 1 lw 1
set style fill solid 0.7 border -1
set xtics rotate by -35
set key off
set arrow from graph 0, first 1 to graph 1, first 1 nohead dt 2
plot 'sql_vs_btree.dat' using 2:3:4:xtic(1)
""", report, size="1200,640"):
        return ["sql_vs_btree.png"]
    return []


# --- main -------------------------------------------------------------------------

def machine_block(out):
    lines = []
    path = os.path.join(out, "machine.txt")
    if os.path.exists(path):
        lines += [l.rstrip("\n") for l in open(path)]
    last = {}
    for r in read_csv(os.path.join(out, "durations.csv")):
        last[r["stage"]] = r  # the last run of each stage
    text = "```\n" + "\n".join(lines) + "\n```\n"
    if last:
        text += "\n" + table(["stage", "minutes", "commit", "finished"],
                              [[s, f"{int(r['seconds']) / 60:.1f}", r.get("commit") or "-", r.get("finished") or "-"]
                               for s, r in last.items()])
        text += f"\nIn all {sum(int(r['seconds']) for r in last.values()) / 60:.0f} minutes.\n"
    return text


def replace_blocks(doc_path, blocks):
    text = open(doc_path).read()
    for name, body in blocks.items():
        pattern = re.compile(r"(<!-- bench-all:%s begin -->\n).*?(<!-- bench-all:%s end -->)" %
                             (re.escape(name), re.escape(name)), re.S)
        if not pattern.search(text):
            print(f"bench_report: {doc_path} has no block '{name}'; left out", file=sys.stderr)
            continue
        text = pattern.sub(lambda m: m.group(1) + body + m.group(2), text)
    with open(doc_path, "w") as f:
        f.write(text)


def main(argv):
    if len(argv) not in (2, 4) or (len(argv) == 4 and argv[2] != "--docs"):
        print("usage: bench_report.py OUT [--docs DOCS]", file=sys.stderr)
        return 2
    out = argv[1]
    docs = argv[3] if len(argv) == 4 else None
    report = os.path.join(out, "report")
    os.makedirs(report, exist_ok=True)

    blocks, engine_rows = engine_blocks(out)
    blocks["pg-backends"], pg_rows = pg_backends_block(out)
    blocks["testbed"], testbed_rows = testbed_block(out)
    blocks["sysbench"], sysbench_rows, sysbench_concurrent = sysbench_block(out)
    blocks["pgbench"], pgbench_rows = pgbench_block(out)
    blocks["papers"] = papers_block(engine_rows, testbed_rows)
    blocks["machine"] = machine_block(out)
    plots = plot_engine(engine_rows, report) + plot_sql(pg_rows, sysbench_rows, sysbench_concurrent, pgbench_rows, report)
    testbed_png = os.path.join(out, "testbed", "testbed.png")
    if os.path.exists(testbed_png):
        shutil.copy(testbed_png, report)
        plots.append("testbed.png")
    for name, body in blocks.items():
        with open(os.path.join(report, name + ".md"), "w") as f:
            f.write(body)
    print(f"bench_report: {len(blocks)} blocks and {len(plots)} plots in {report}")

    if docs:
        dest = os.path.join(docs, "bench", "all")
        os.makedirs(dest, exist_ok=True)
        sources = [os.path.join(out, p) for p in ("engine/backend_compare.csv", "pg-backends/pg_offload_bench.csv",
                                                  "testbed/summary.csv", "sysbench/sysbench.csv",
                                                  "sysbench/sysbench_concurrent.csv",
                                                  "machine.txt", "durations.csv")]
        for path in sources:
            if os.path.exists(path):
                shutil.copy(path, dest)
        for d in glob.glob(os.path.join(out, "pgbench-s*")):
            path = os.path.join(d, "pg_bench.csv")
            if os.path.exists(path):
                shutil.copy(path, os.path.join(dest, f"pg_bench_{os.path.basename(d)}.csv"))
        for p in plots:
            shutil.copy(os.path.join(report, p), dest)
        replace_blocks(os.path.join(docs, "BENCHMARKS.md"), blocks)
        print(f"bench_report: {docs}/BENCHMARKS.md and {dest} updated")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
