#!/usr/bin/env python3
"""Tests of scripts/bench_report.py (make bench-all's report) on small
hand-made CSVs: the numbers it computes (medians of per-repetition ratios,
usage shares), the blocks it writes into a copy of docs/BENCHMARKS.md
(prose kept, markers kept, a second run changes nothing), and a stage that
did not run.

    python3 tests/bench/test_bench_report.py
"""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
REPORT = os.path.join(ROOT, "scripts", "bench_report.py")

ENGINE_HEADER = ("keys,height,leaves,zipf,ops,reps,mode,unit,used,capacity,hardware_bytes,hint_ns,"
                 "mlookups,mlookups_min,mlookups_max,speedup,speedup_min,speedup_max,nodes_per_op,"
                 "hint_hits_per_op,fallbacks_per_op,oracle_share,same_bytes_nodes\n")


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


class BenchReportTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="bench-report-test.")
        self.out = os.path.join(self.dir, "out")
        self.docs = os.path.join(self.dir, "docs")
        write(os.path.join(self.out, "engine", "backend_compare.csv"), ENGINE_HEADER +
              "1000000,3,3290,0.99,1000,3,none,entries,0,0,0,15,2,1.9,2.1,1,1,1,3,0,0,0,3\n"
              "1000000,3,3290,0.99,1000,3,switch_lpm,LPM entries,36500,73000,584000,30,3,2.8,3.2,"
              "1.5,1.4,1.6,1.5,1,0,0.75,1\n"
              "1000000,3,3290,0.99,1000,3,oracle,,0,0,0,0,4,3.9,4.1,2,1.9,2.1,1,1,0,1,3\n")
        # probe_ms: lower is better; btree 10/20/30 ms, switch_lpm 5/10/30 ms:
        # per-repetition speed ratios 2, 2, 1 -> median 2.000 (1.00-2.00)
        write(os.path.join(self.out, "pg-backends", "pg_offload_bench.csv"),
              "metric,index,rep,value\n"
              "probe_ms,btree,1,10\nprobe_ms,switch_lpm,1,5\n"
              "probe_ms,btree,2,20\nprobe_ms,switch_lpm,2,10\n"
              "probe_ms,btree,3,30\nprobe_ms,switch_lpm,3,30\n")
        # tps: higher is better; ratios 0.9, 1.1, 1.0 -> 1.000 (0.90-1.10)
        write(os.path.join(self.out, "sysbench", "sysbench.csv"),
              "test,index,rep,tps,qps,seq_scans,id_index_scans\n"
              "oltp_point_select,btree,1,100,100,0,0\noltp_point_select,forein,1,90,90,0,5\n"
              "oltp_point_select,btree,2,100,100,0,0\noltp_point_select,forein,2,110,110,0,5\n"
              "oltp_point_select,btree,3,100,100,0,0\noltp_point_select,forein,3,100,100,0,5\n")
        # both databases at once: ratios 1.05, 1.02 -> 1.035 (1.02-1.05)
        write(os.path.join(self.out, "sysbench", "sysbench_concurrent.csv"),
              "test,index,rep,tps,qps,seq_scans,id_index_scans,blks_read,blks_hit,id_index_bytes\n"
              "oltp_point_select,btree,1,100,100,0,0,4,9,2000000\noltp_point_select,forein,1,105,105,0,5,30,9,1500000\n"
              "oltp_point_select,forein,2,102,102,0,5,10,9,1700000\noltp_point_select,btree,2,100,100,0,0,6,9,2200000\n")
        write(os.path.join(self.out, "machine.txt"), "machine: test box\n")
        write(os.path.join(self.out, "durations.csv"), "stage,seconds,commit,finished\nengine,120,aaa,t1\nengine,60,bbb,t2\n")
        names = ["machine", "engine", "engine-usage", "pg-backends", "testbed", "sysbench", "pgbench", "papers"]
        self.prose = "# Benchmarks\n\nHand-written words that must stay.\n"
        doc = self.prose
        for n in names:
            doc += f"\n## {n}\n\n<!-- bench-all:{n} begin -->\nold text\n<!-- bench-all:{n} end -->\n\nAfter {n}.\n"
        write(os.path.join(self.docs, "BENCHMARKS.md"), doc)

    def tearDown(self):
        shutil.rmtree(self.dir)

    def run_report(self):
        res = subprocess.run([sys.executable, REPORT, self.out, "--docs", self.docs],
                             capture_output=True, text=True)
        self.assertEqual(res.returncode, 0, res.stderr)
        with open(os.path.join(self.docs, "BENCHMARKS.md")) as f:
            return f.read()

    def test_blocks_numbers_and_prose(self):
        doc = self.run_report()
        self.assertTrue(doc.startswith(self.prose))
        self.assertNotIn("old text", doc)
        for n in ["engine", "sysbench", "papers"]:
            self.assertIn(f"<!-- bench-all:{n} begin -->", doc)
            self.assertIn(f"After {n}.", doc)
        # engine: lookups/s, ratio with spread, nodes per lookup, usage share
        self.assertIn("3.00 M/s, x1.50 (1.40-1.60), 1.50 nodes", doc)
        self.assertIn("36,500 / 73,000 (LPM entries) | 50%", doc)
        self.assertIn("| 0.75 | 1.00 |", doc)
        # PostgreSQL per backend: medians of per-repetition ratios
        self.assertIn("2.000 (1.00-2.00)", doc)
        # without the buffer and size columns (older CSVs) "-"; with them, median
        # reads per run and median id index size in MB
        self.assertIn("| oltp_point_select | 100 | 100 | 1.000 (0.90-1.10) | 3 | - / - | - / - |", doc)
        self.assertIn("| oltp_point_select | 100 | 104 | 1.035 (1.02-1.05) | 2 | 5 / 20 | 2.1 / 1.6 |", doc)
        # the last duration of a stage counts
        self.assertIn("| engine | 1.0 | bbb | t2 |", doc)
        # stages that did not run say so
        self.assertIn("Stage `testbed` did not run", doc)
        self.assertIn("Stage `pgbench` did not run", doc)
        # the CSVs and plots are copied next to the page
        copied = os.listdir(os.path.join(self.docs, "bench", "all"))
        self.assertIn("backend_compare.csv", copied)
        self.assertIn("sysbench.csv", copied)
        self.assertIn("sysbench_concurrent.csv", copied)
        if shutil.which("gnuplot"):
            self.assertIn("speedup_vs_skew.png", copied)
            self.assertIn("sql_vs_btree.png", copied)

    def test_pgbench_probe_paths(self):
        # probe_heap_ms: forein 10/20 ms; hash 12/30 -> ratios 1.2, 1.5;
        # tid 11/20 -> 1.1, 1.0; btree 20/40 -> 2, 2
        rows = "metric,index,rep,value\n"
        for rep, vals in ((1, dict(btree=20, hash=12, tid=11, forein_nohint=15, forein=10)),
                          (2, dict(btree=40, hash=30, tid=20, forein_nohint=30, forein=20))):
            for path, v in vals.items():
                rows += f"probe_heap_ms,{path},{rep},{v}\n"
        write(os.path.join(self.out, "pgbench-s20", "pg_bench.csv"), rows)
        doc = self.run_report()
        self.assertIn("| 20 | nested-loop probes with heap, ms | 30 | 15 | 2.000 (2.00-2.00) |", doc)
        self.assertIn("| 20 | wall | 30 | 21 | 15.5 | 22.5 | 15 | 2.000 (2.00-2.00) | 1.350 (1.20-1.50) | "
                      "1.050 (1.00-1.10) | 1.500 (1.50-1.50) |", doc)
        self.assertNotIn("backend CPU", doc)

    def test_pgbench_select_bound(self):
        # -S interleaved with its references: btree 50/60 us, forein 46/55,
        # the TID fetch 45/50 -> the bound 1.111, 1.2 (median 1.156)
        rows = "metric,index,rep,value\n"
        for rep, vals in ((1, dict(btree=50, forein=46, tid=45, noindex=30)),
                          (2, dict(btree=60, forein=55, tid=50, noindex=40))):
            for kind, v in vals.items():
                rows += f"pgbench_S_mixed_us,{kind},{rep},{v}\n"
        write(os.path.join(self.out, "pgbench-s20", "pg_bench.csv"), rows)
        doc = self.run_report()
        self.assertIn("| 20 | pgbench -S interleaved in one run, mean transaction us | 55 | 50.5 | 1.089 (1.08-1.10) |", doc)
        self.assertIn("| 20 | -S interleaved, the bound: the heap fetch by ctid, no index | 55 | 47.5 | "
                      "1.156 (1.11-1.20) |", doc)

    def test_second_run_changes_nothing(self):
        first = self.run_report()
        self.assertEqual(self.run_report(), first)

    def test_number_format(self):
        sys.path.insert(0, os.path.dirname(REPORT))
        import bench_report
        # 3 significant digits below 1,000, thousands separators from there
        # on, never an exponent (999.5 rounds up to 1,000)
        self.assertEqual([bench_report.fmt(x) for x in (0.5, 25.34, 177.2, 999.4, 999.5, 1234.5)],
                         ["0.5", "25.3", "177", "999", "1,000", "1,234"])
        # a ratio's spread is rounded outward, so it holds the median
        self.assertEqual(bench_report.ratio_cell([1.1017, 1.017, 1.0172]), "1.017 (1.01-1.11)")
        self.assertEqual(bench_report.ratio_cell([0.9, 1.1, 1.0]), "1.000 (0.90-1.10)")

    def test_bad_arguments(self):
        res = subprocess.run([sys.executable, REPORT, self.out, "--doc", self.docs],
                             capture_output=True, text=True)
        self.assertEqual(res.returncode, 2)
        self.assertIn("usage", res.stderr)


if __name__ == "__main__":
    unittest.main()
