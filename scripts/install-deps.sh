#!/usr/bin/env bash
# Installs the Debian packages forein needs. As root it runs apt-get;
# otherwise it prints the exact apt-get line and fails, so nothing is
# half-built against missing headers.
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  catch2            # unit, property and stress tests
  clang-14 libclang-rt-14-dev  # libFuzzer targets (tests/fuzz/run.sh)
  libabsl-dev       # absl::btree_map, the benchmark's peer
  libsqlite3-dev sqlite3  # the SQLite variant (sqlite_vfs/) and its shell test
  postgresql-15 postgresql-server-dev-15 postgresql-contrib  # the access method (pg_extension/)
  libicu-dev        # its text words under ICU collations (pg_locale.h, ucol_*)
  libipc-run-perl   # its TAP tests (regress/t/)
  libgrpc++-dev protobuf-compiler-grpc protobuf-compiler libprotobuf-dev  # the control plane (proto/, net/)
  libdpdk-dev  # forein-switch, the DPDK data plane (net/switch/)
  libcli11-dev nlohmann-json3-dev  # the network programs' flags and JSON lines (header-only)
  iproute2     # ip netns: the network tests, testbed and Switch-delta benchmark run in namespaces of their own
  gnuplot-nox  # the benchmark plots (scripts/testbed.sh, tests/bench/run_*_experiments.sh)
  sysbench     # tests/bench/run_sysbench.sh (make bench-all), pgsql driver
  python3      # benchmark summaries and make bench-all's report (scripts/bench_report.py)
)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0

cmd="apt-get install -y --no-install-recommends ${missing[*]}"
if [ "$(id -u)" -ne 0 ]; then
  echo "forein: missing Debian packages. Run as root:" >&2
  echo "  apt-get update && $cmd" >&2
  exit 1
fi
echo "forein: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
$cmd
