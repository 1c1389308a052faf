#!/usr/bin/env bash
# Reproduces Honeycomb's section 6 on the fpga backend's store
# (docs/fpga-experiments.md): YCSB A-F (uniform and Zipf), the cloud-storage
# workload (3-item SCANs, 50-100 % reads), the SCAN size sweep, the cache
# ablation (FPGA only), MVCC on/off, key sizes (Fig 14), log block sizes
# (Fig 17) and latency against throughput (Fig 12). Both systems are put on
# the paper's server (10 cores, requests over the network): the CPU
# server's per-request costs are measured over the DPDK memif path by
# run_fpga_cpu_server.sh (cpu_server.csv, cpu_server_latency.csv), the
# engine's and Honeycomb's writes in process, Honeycomb's GET/SCAN rate
# comes from the accelerator model fed with what its requests really did
# (tests/bench/fpga_experiments.cc). Writes CSVs to docs/bench/fpga/ and
# renders PNGs there with gnuplot.
#
#   bash tests/bench/run_fpga_experiments.sh <build-dir> [--quick | --plots-only] [-- extra flags]
#
# Configures <build-dir> (Release) if it has no CMakeCache.txt and builds
# fpga_experiments (and, unless --quick, the network programs; -j2).
# --quick: 100,000 keys (500,000 for the cache ablation), 0.15 s a point,
# no network measurement (reads at their in-process cost): a smoke test.
# Otherwise: the CPU server measured first (run_fpga_cpu_server.sh;
# SERVER=skip reuses the cpu_server.csv already in the output directory;
# SERVER_KEYS, 2,000,000: the server's data set),
# then 20,000,000 keys (the paper's 4-level tree) and 1 s a point.
# --plots-only: redraw the PNGs from the CSVs.
# Flags after -- go to fpga_experiments (e.g. --experiments cache).
# Needs gnuplot (apt-get install -y gnuplot-nox) for the PNGs; without it
# the CSVs are still written and the script exits 1.
# BENCH_OUT=<dir> writes the CSVs and PNGs there instead of docs/bench/fpga.
set -euo pipefail

usage() {
  echo "usage: $0 <build-dir> [--quick | --plots-only] [-- extra fpga_experiments flags]" >&2
  exit 2
}
[ $# -ge 1 ] || usage
build=$1
shift
quick=0
plots_only=0
extra=()
while [ $# -gt 0 ]; do
  case "$1" in
    --quick) quick=1; shift ;;
    --plots-only) plots_only=1; shift ;;
    --) shift; extra=("$@"); break ;;
    *) usage ;;
  esac
done

root=$(cd "$(dirname "$0")/../.." && pwd)
case "$build" in
  /*) ;;
  *) build="$PWD/$build" ;;
esac
if [ ! -f "$build/CMakeCache.txt" ]; then
  echo "run_fpga_experiments: configuring $build (Release)"
  cmake -S "$root" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
fi
cmake --build "$build" -j2 --target fpga_experiments >/dev/null
if [ $quick = 0 ] && [ $plots_only = 0 ] && [ "${SERVER:-}" != skip ]; then
  cmake --build "$build" -j2 --target forein-switch forein-switch-gen forein-kv-server >/dev/null
fi
exp="$build/tests/bench/fpga_experiments"
[ -x "$exp" ] || { echo "run_fpga_experiments: $exp not built" >&2; exit 1; }

have_gnuplot=1
if ! command -v gnuplot >/dev/null 2>&1; then
  have_gnuplot=0
  echo "run_fpga_experiments: gnuplot not found; CSVs will be written but no PNGs." >&2
  echo "  install it with:  apt-get install -y gnuplot-nox" >&2
fi

cd "$root"
out=${BENCH_OUT:-docs/bench/fpga}  # BENCH_OUT: elsewhere (the smoke test)
mkdir -p "$out"
btype=$(sed -n 's/^CMAKE_BUILD_TYPE:[A-Z]*=//p' "$build/CMakeCache.txt")
commit=$(git rev-parse --short HEAD 2>/dev/null || echo "none")
[ -z "$(git status --porcelain 2>/dev/null | head -1)" ] || commit="$commit, working tree modified"

echo "== Honeycomb (fpga backend) section 6 experiments"
echo "date:     $(date -u '+%Y-%m-%d %H:%M:%S UTC')"
echo "machine:  $(uname -srm), $(nproc) cores online"
echo "cpu:      $(lscpu 2>/dev/null | sed -n 's/^Model name:[[:space:]]*//p' | head -1)"
echo "memory:   $(free -g | awk '/^Mem:/ {print $2 " GiB total, " $7 " GiB available"}')"
echo "load:     $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
echo "build:    $build (CMAKE_BUILD_TYPE=${btype:-none})"
echo "commit:   $commit"
echo "command:  $0 $build$([ $quick = 1 ] && echo ' --quick')${extra[*]:+ -- ${extra[*]}}"
echo

if [ $quick = 1 ]; then
  sizing=(--keys 100000 --cache-keys 500000 --seconds 0.15)
else
  sizing=(--keys 20000000 --cache-keys 20000000 --seconds 1)
  server_keys=${SERVER_KEYS:-2000000}
  if [ $plots_only = 0 ] && [ "${SERVER:-}" != skip ]; then
    echo "\$ OUT_DIR=$out KEYS=$server_keys bash tests/bench/run_fpga_cpu_server.sh $build"
    OUT_DIR="$out" KEYS=$server_keys bash "$root/tests/bench/run_fpga_cpu_server.sh" "$build"
  fi
  if [ -f "$out/cpu_server.csv" ]; then sizing+=(--server-csv "$out/cpu_server.csv" --server-keys "$server_keys"); fi
fi
if [ $plots_only = 0 ]; then
  echo "\$ $exp ${sizing[*]} --out $out ${extra[*]}"
  "$exp" "${sizing[@]}" --out "$out" "${extra[@]}"
  echo "load after: $(cut -d' ' -f1-3 /proc/loadavg 2>/dev/null || echo unknown)"
fi

if [ $have_gnuplot = 0 ]; then
  echo "run_fpga_experiments: CSVs are in $out; PNGs skipped (apt-get install -y gnuplot-nox)" >&2
  exit 1
fi

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
term="set terminal pngcairo size 900,600 font 'DejaVu Sans,11'"
gnuplot -e "set terminal pngcairo" >/dev/null 2>&1 || term="set terminal png size 900,600"

# cols CSV NAME... : the named columns (header names) as a whitespace file.
cols() {
  local csv=$1
  shift
  awk -F, -v names="$*" 'NR == 1 {for (i = 1; i <= NF; i++) c[$i] = i; n = split(names, want, " "); next}
    {line = ""; for (j = 1; j <= n; j++) line = line (j > 1 ? " " : "") $(c[want[j]]); print line}' "$csv"
}

# rows CSV COLUMN VALUE NAME... : the named columns of the rows whose
# COLUMN is VALUE.
rows() {
  local csv=$1 key=$2 value=$3
  shift 3
  awk -F, -v key="$key" -v value="$value" -v names="$*" \
    'NR == 1 {for (i = 1; i <= NF; i++) c[$i] = i; n = split(names, want, " "); next}
     $(c[key]) == value {line = ""; for (j = 1; j <= n; j++) line = line (j > 1 ? " " : "") $(c[want[j]]); print line}' "$csv"
}

if [ -f "$out/ycsb.csv" ]; then
  rows "$out/ycsb.csv" distribution uniform workload baseline_ops honeycomb_ops > "$tmp/ycsb_uniform.dat"
  { rows "$out/ycsb.csv" distribution zipf workload baseline_ops honeycomb_ops
    rows "$out/ycsb.csv" distribution latest workload baseline_ops honeycomb_ops; } | sort > "$tmp/ycsb_zipf.dat"
  gnuplot <<EOF
$term
set output '$out/ycsb.png'
set ylabel 'Mops/s'
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.8 border -1
set key inside left top
set grid y
set yrange [0:*]
set multiplot layout 1,2 title "YCSB A-F (paper Fig 10) on the paper's 10-core server: CPU server vs Honeycomb (modelled NIC)"
set title 'uniform'
plot '$tmp/ycsb_uniform.dat' using (\$2/1e6):xtic(1) title 'CPU server' lc rgb '#555555', \
     '' using (\$3/1e6) title 'Honeycomb' lc rgb '#0072b2'
set title 'Zipf 0.99 (D: latest)'
plot '$tmp/ycsb_zipf.dat' using (\$2/1e6):xtic(1) title 'CPU server' lc rgb '#555555', \
     '' using (\$3/1e6) title 'Honeycomb' lc rgb '#0072b2'
unset multiplot
EOF
fi

if [ -f "$out/cloud.csv" ]; then
  for d in uniform zipf; do
    rows "$out/cloud.csv" distribution $d read_percent ratio efficiency_ratio > "$tmp/cloud_$d.dat"
  done
  gnuplot <<EOF
$term
set output '$out/cloud.png'
set title "Cloud storage (paper Fig 11): 3-item SCANs + inserts, Honeycomb / CPU server"
set xlabel 'reads (%)'
set ylabel 'ratio'
set yrange [0:*]
set key outside right top
set grid
plot '$tmp/cloud_uniform.dat' using 1:2 with linespoints lw 2 pt 7 title 'throughput, uniform', \
     '$tmp/cloud_zipf.dat' using 1:2 with linespoints lw 2 pt 5 title 'throughput, Zipf 0.99', \
     '$tmp/cloud_uniform.dat' using 1:3 with linespoints dt 2 pt 7 title 'per watt, uniform', \
     '$tmp/cloud_zipf.dat' using 1:3 with linespoints dt 2 pt 5 title 'per watt, Zipf 0.99', \
     1 with lines dt 3 lc rgb 'black' title 'parity'
EOF
fi

if [ -f "$out/scan_size.csv" ]; then
  cols "$out/scan_size.csv" items baseline_ops honeycomb_ops ratio > "$tmp/scan.dat"
  gnuplot <<EOF
$term
set output '$out/scan_size.png'
set title "SCAN size (paper Fig 13): read-only, the paper's 10-core server"
set xlabel 'items per SCAN'
set ylabel 'Mops/s'
set y2label 'Honeycomb / CPU server'
set y2tics
set yrange [0:*]
set y2range [0:*]
set key outside right top
set grid
plot '$tmp/scan.dat' using 1:(\$2/1e6) with linespoints lw 2 pt 9 lc rgb '#555555' title 'CPU server', \
     '' using 1:(\$3/1e6) with linespoints lw 2 pt 7 lc rgb '#0072b2' title 'Honeycomb', \
     '' using 1:4 axes x1y2 with linespoints dt 2 lc rgb '#d55e00' title 'ratio'
EOF
fi

if [ -f "$out/cache.csv" ]; then
  awk -F, 'NR > 1 {gsub(/"/, "", $1); print "\"" $1 "\"", $4 / 1e6, $6}' "$out/cache.csv" > "$tmp/cache.dat"
  gnuplot <<EOF
$term
set output '$out/cache.png'
set title "Cache and load balancer (paper Fig 16): 1-item SCAN, accelerator only (modelled)"
set ylabel 'Mreqs/s'
set y2label 'interior hit rate'
set y2tics
set y2range [0:1.05]
set yrange [0:*]
set bmargin 7
set style fill solid 0.8 border -1
set boxwidth 0.6
set xtics rotate by -20
set key outside right top
set grid y
plot '$tmp/cache.dat' using 0:2:xtic(1) with boxes lc rgb '#0072b2' title 'throughput', \
     '' using 0:3 axes x1y2 with linespoints lw 2 pt 7 lc rgb '#d55e00' title 'hit rate', \
     9.1 with lines dt 2 lc rgb 'black' title 'paper: 9.1 (LB) and 8.0 (no LB)', \
     8.0 with lines dt 3 lc rgb 'black' notitle
EOF
fi

if [ -f "$out/mvcc.csv" ]; then
  for m in on off; do
    rows "$out/mvcc.csv" mvcc $m read_percent honeycomb_ops > "$tmp/mvcc_$m.dat"
  done
  gnuplot <<EOF
$term
set output '$out/mvcc.png'
set title "MVCC on/off (paper Fig 15): cloud storage, uniform"
set xlabel 'reads (%)'
set ylabel 'Honeycomb Mops/s'
set yrange [0:*]
set key outside right top
set grid
plot '$tmp/mvcc_on.dat' using 1:(\$2/1e6) with linespoints lw 2 pt 7 title 'MVCC on', \
     '$tmp/mvcc_off.dat' using 1:(\$2/1e6) with linespoints lw 2 pt 5 title 'MVCC off'
EOF
fi

if [ -f "$out/keysize.csv" ]; then
  cols "$out/keysize.csv" key_bytes baseline_ops honeycomb_ops > "$tmp/keysize.dat"
  gnuplot <<EOF
$term
set output '$out/keysize.png'
set title "Key size (paper Fig 14): 1-item SCANs, equal key and value sizes"
set xlabel 'key and value bytes'
set ylabel 'Mops/s'
set logscale x 2
set yrange [0:*]
set key outside right top
set grid
plot '$tmp/keysize.dat' using 1:(\$2/1e6) with linespoints lw 2 pt 9 lc rgb '#555555' title 'CPU server', \
     '' using 1:(\$3/1e6) with linespoints lw 2 pt 7 lc rgb '#0072b2' title 'Honeycomb'
EOF
fi

if [ -f "$out/logblock.csv" ]; then
  cols "$out/logblock.csv" log_block_bytes nic_reads_per_s inserts_per_core_s > "$tmp/logblock.dat"
  gnuplot <<EOF
$term
set output '$out/logblock.png'
set title "Log block size (paper Fig 17): 1-item SCANs (NIC) and inserts (CPU)"
set xlabel 'log block bytes'
set ylabel 'SCAN Mops/s (modelled NIC)'
set y2label 'inserts, M per core-second'
set y2tics
set logscale x 2
set yrange [0:*]
set y2range [0:*]
set key outside right top
set grid
plot '$tmp/logblock.dat' using 1:(\$2/1e6) with linespoints lw 2 pt 7 lc rgb '#0072b2' title '1-item SCAN', \
     '' using 1:(\$3/1e6) axes x1y2 with linespoints lw 2 pt 5 lc rgb '#d55e00' title 'insert'
EOF
fi

if [ -f "$out/latency.csv" ]; then
  rows "$out/latency.csv" system baseline throughput_ops p50_us > "$tmp/lat_base.dat"
  rows "$out/latency.csv" system honeycomb throughput_ops p50_us > "$tmp/lat_hc.dat"
  gnuplot <<EOF
$term
set output '$out/latency.png'
set title "Latency against throughput (paper Fig 12): read-only 3-item SCANs"
set xlabel 'Mops/s'
set ylabel 'median latency (us)'
set yrange [0:*]
set key outside right top
set grid
plot '$tmp/lat_base.dat' using (\$1/1e6):2 with linespoints lw 2 pt 9 lc rgb '#555555' title 'CPU server (measured, x cores)', \
     '$tmp/lat_hc.dat' using (\$1/1e6):2 with linespoints lw 2 pt 7 lc rgb '#0072b2' title 'Honeycomb (modelled)'
EOF
fi
echo "run_fpga_experiments: CSVs and PNGs in $out"
