#!/usr/bin/env python3
"""check-private-addresses.py: no private-range address used outside a
network namespace (issue 39).

    python3 scripts/check-private-addresses.py [ROOT]

Scans scripts/, tests/ and docs/ under ROOT (default: the repository) and
exits 1, naming each file and line, where a private-range IPv4 address
(10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16) is written outside the
places where its traffic stays in a namespace that the run itself makes.

The rule, by kind of file:
  * Markdown (docs/): only fenced code blocks are commands people run.
    A block that writes such an address must run inside a namespace: the
    block says `netns` (`ip netns add` / `ip netns exec`). Prose and
    tables (a flag's default, say) are not commands and are not checked.
  * Anything else (shell scripts, C++ tests, CMake files): the file must
    make or enter a namespace: it says `netns` (scripts/netns.sh, `ip
    netns`, the tests' private_netns.h) or includes tap_switch.h, whose
    addresses exist only inside the test process's own namespace.
  * A line whose address never reaches a kernel (a value put into a
    frame that user-space code parses, a memif link's address) may carry
    the tag `no-kernel-traffic` with the reason beside it.
An address is written A.B.C.D, or A.B.C as the programs' --*-net flags
take it, or built at run time from such a start ("10.$((...))" in a
script, "10.77." + ... in C++); version numbers and the like are told
apart by their first octets (only 10., 172.16-31. and 192.168. count).
"""
import os
import re
import sys

ADDRESS = re.compile(
    r"(?<![\w.])(10\.\d{1,3}\.\d{1,3}|172\.(1[6-9]|2\d|3[01])\.\d{1,3}|192\.168\.\d{1,3})(\.\d{1,3})?(?![\w]|\.\d)")
FOLDERS = ("scripts", "tests", "docs")
TEXT_SUFFIXES = (".sh", ".py", ".cc", ".h", ".c", ".md", ".txt", ".pl", ".sql", ".cmake", ".json", ".conf")
# An address built at run time from a private-range start: "10.$((...))"
# in a shell script, "10.77." + ... in C++.
BUILT = re.compile(r'(?<![\w.])(10|172\.(1[6-9]|2\d|3[01])|192\.168)(\.\d{1,3}){0,2}\.(\$|"\s*\+)')
THIS_FILE = os.path.abspath(__file__)


def private_lines(lines):
    for number, line in enumerate(lines, 1):
        if "no-kernel-traffic" in line:
            continue
        literal = any(all(0 <= int(o) <= 255 for o in m.group(0).split(".")) for m in ADDRESS.finditer(line))
        if literal or BUILT.search(line):
            yield number, line.rstrip("\n")


def check_markdown(path, lines):
    problems = []
    fence = None
    block = []
    start = 0
    for number, line in enumerate(lines, 1):
        opening = re.match(r"^\s*(```+|~~~+)", line)
        if fence is None:
            if opening:
                fence, block, start = opening.group(1), [], number
            continue
        if re.match(r"^\s*" + re.escape(fence[0]) + "{%d,}\\s*$" % len(fence), line):
            if not any("netns" in l for l in block):
                for offset, text in private_lines(block):
                    problems.append((path, start + offset, text))
            fence = None
            continue
        block.append(line)
    return problems


def check_file(path, lines):
    text = "".join(lines)
    if "netns" in text or "tap_switch.h" in text:
        return []
    return [(path, number, line) for number, line in private_lines(lines)]


def main():
    root = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(THIS_FILE), ".."))
    problems = []
    scanned = 0
    for folder in FOLDERS:
        for dirpath, dirnames, filenames in os.walk(os.path.join(root, folder)):
            dirnames[:] = [d for d in dirnames if not d.startswith(".")]
            for name in sorted(filenames):
                path = os.path.join(dirpath, name)
                if os.path.abspath(path) == THIS_FILE or not name.endswith(TEXT_SUFFIXES):
                    continue
                with open(path, encoding="utf-8", errors="replace") as f:
                    lines = f.readlines()
                scanned += 1
                rel = os.path.relpath(path, root)
                problems += check_markdown(rel, lines) if name.endswith(".md") else check_file(rel, lines)
    for path, number, line in problems:
        print(f"{path}:{number}: private-range address outside a network namespace: {line.strip()}")
    if problems:
        print(f"check-private-addresses: {len(problems)} line(s) above; run them inside a namespace the run makes "
              "(scripts/netns.sh, tests/net/private_netns.h) or, for an address that never reaches a kernel, "
              "tag the line no-kernel-traffic (rule: scripts/check-private-addresses.py)", file=sys.stderr)
        return 1
    print(f"check-private-addresses: {scanned} files under {', '.join(FOLDERS)}: no private-range address outside a namespace")
    return 0


if __name__ == "__main__":
    sys.exit(main())
