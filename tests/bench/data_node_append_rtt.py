#!/usr/bin/env python3
"""LOG_APPEND round trips to forein-data-node, one at a time, on loopback:
the data-write phase alone (no switch, no metadata node), with and without
replication (docs/switch-delta-experiments.md, "Replication (paper V-D,
Fig. 9)").

    python3 tests/bench/data_node_append_rtt.py BUILD_DIR [--writes N] [--rounds R]

Starts, per round and in alternating order, (a) one data node alone and
(b) a primary with two --backup nodes (--acks 1), sends N sequential
LOG_APPENDs to each from this process and prints the median and p99 round
trip of each, and their difference (what replication adds to a write's
data phase here; the paper: 3.6-4.0 us with one-sided RDMA WRITE)."""
import argparse
import socket
import statistics
import struct
import subprocess
import sys
import time

MAGIC, VERSION, OP_APPEND, OP_REPLY, FLAG_VIS = 0xF0E1, 1, 8, 5, 0x08


def fnv_slot(key: bytes):
    # slot_key(key) of net/protocol/visibility.h: FNV-1a 64, then SplitMix64.
    h = 0xCBF29CE484222325
    for b in key:
        h = ((h ^ b) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    z = h
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & 0xFFFFFFFFFFFFFFFF
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & 0xFFFFFFFFFFFFFFFF
    z ^= z >> 31
    return z & 0xFFFF, ((z >> 16) & 0xFFFFFFFF) or 1


def start(binary, args):
    p = subprocess.Popen([binary] + args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    line = p.stdout.readline()
    if not line.startswith("listening "):
        raise SystemExit(f"data node did not start: {line!r} {p.stderr.read()}")
    if p.stdout.readline().strip() != "ready":
        raise SystemExit("data node not ready")
    return p, int(line.rsplit(":", 1)[1])


def measure(port, writes, seq0):
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.connect(("127.0.0.1", port))
    s.settimeout(2.0)
    out = []
    for i in range(writes):
        key = struct.pack(">Q", i % 1000)
        slot, fp = fnv_slot(key)
        record = bytes(128)
        seq = seq0 + i
        d = struct.pack(">HBBBBHQII", MAGIC, VERSION, OP_APPEND, FLAG_VIS, 0, len(key), seq, len(record), 0)
        d += key + record + struct.pack(">HBBIII", slot, 0, 0, fp, 0, 0)
        t0 = time.perf_counter_ns()
        s.send(d)
        while True:
            r = s.recv(65535)
            _, _, op, _, st, _, sq, _, _ = struct.unpack(">HBBBBHQII", r[:24])
            if sq == seq:
                break
        out.append((time.perf_counter_ns() - t0) / 1000)
        if op != OP_REPLY or st != 0:
            raise SystemExit(f"append refused: op {op} status {st}")
    s.close()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("build")
    ap.add_argument("--writes", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    binary = a.build + "/net/data_node/forein-data-node"
    res = {"alone": [], "replicated": []}
    for r in range(a.rounds):
        order = ["alone", "replicated"] if r % 2 == 0 else ["replicated", "alone"]
        for mode in order:
            procs = []
            if mode == "alone":
                p, port = start(binary, [])
                procs.append(p)
            else:
                ports = []
                for _ in range(2):
                    p, bp = start(binary, ["--backup"])
                    procs.append(p)
                    ports.append(bp)
                p, port = start(binary, ["--backups", ",".join(f"127.0.0.1:{x}" for x in ports), "--acks", "1"])
                procs.append(p)
            try:
                res[mode] += measure(port, a.writes, 1 + r * 10 * a.writes)
            finally:
                for p in procs:
                    p.terminate()
                    p.wait()
    q = {m: (statistics.median(v), sorted(v)[int(len(v) * 0.99)]) for m, v in res.items()}
    for m, (p50, p99) in q.items():
        print(f"{m:10s} writes {len(res[m])}  p50 {p50:7.1f} us  p99 {p99:7.1f} us")
    print(f"replication adds {q['replicated'][0] - q['alone'][0]:.1f} us to the median LOG_APPEND round trip")
    return 0


if __name__ == "__main__":
    sys.exit(main())
