#!/usr/bin/env python3
"""check_flag_docs.py: docs/network.md against each network program's --help.

    python3 tests/net/check_flag_docs.py DOC PROGRAM...

For every PROGRAM (a built binary; its name picks its section of DOC, the
heading that names it, down to the next heading of the same level):
  * each flag its --help lists must appear in the section's synopsis or
    flag table (so a new flag cannot ship undocumented);
  * each flag in the section's synopsis (the first code block whose first
    word is the program's name) and in its first flag table (a table whose
    header starts with "| flag") must be one --help lists (so the docs
    name no flag the program refuses).
A PROGRAM that is not built (no DPDK, no gRPC) is skipped with a line.
Exit 1 naming each difference; 0 when they agree.
"""
import os
import re
import subprocess
import sys

FLAG = re.compile(r"(?<![\w-])--[a-z][a-z0-9-]*")


def help_flags(program):
    out = subprocess.run([program, "--help"], capture_output=True, text=True, timeout=60)
    if out.returncode != 0:
        raise SystemExit(f"{program} --help exited {out.returncode}: {out.stderr}")
    flags = set()
    in_options = False
    for line in out.stdout.splitlines():
        if line.strip() == "Options:":
            in_options = True
            continue
        if in_options and not line.strip():
            break
        m = re.match(r"^\s*(?:-\w,)?(--[a-z][a-z0-9-]*)", line)
        if in_options and m:
            flags.add(m.group(1))
    flags.discard("--help")
    return flags


def section(lines, name):
    for i, line in enumerate(lines):
        m = re.match(r"^(#+)\s+(.*)$", line)
        if m and re.search(r"(^|\W)" + re.escape(name) + r"($|\W)", m.group(2)) and \
                not re.search(re.escape(name) + r"-", m.group(2)):
            level = len(m.group(1))
            end = len(lines)
            for k in range(i + 1, len(lines)):
                n = re.match(r"^(#+)\s", lines[k])
                if n and len(n.group(1)) <= level:
                    end = k
                    break
            return lines[i:end]
    return None


def documented_claims(body, name):
    """Flags in the synopsis block and the first flag table."""
    claims = set()
    text = "\n".join(body)
    for block in re.findall(r"```[a-z]*\n(.*?)```", text, re.S):
        words = block.split()
        if words and os.path.basename(words[0]) == name:
            claims |= set(FLAG.findall(block.split(" -- ")[0]))
            break
    in_table = False
    for line in body:
        if re.match(r"^\|\s*flag\s*\|", line):
            in_table = True
            continue
        if in_table:
            if not line.startswith("|"):
                break
            first = line.split("|")[1]
            claims |= set(FLAG.findall(first))
    claims.discard("--help")
    return claims


def main():
    if len(sys.argv) < 3:
        raise SystemExit(__doc__)
    with open(sys.argv[1], encoding="utf-8") as f:
        lines = f.read().splitlines()
    problems = []
    for program in sys.argv[2:]:
        name = os.path.basename(program)
        if not os.access(program, os.X_OK):
            print(f"{name}: not built ({program}), skipped")
            continue
        body = section(lines, name)
        if body is None:
            problems.append(f"{name}: no section of {sys.argv[1]} names it in a heading")
            continue
        flags = help_flags(program)
        claims = documented_claims(body, name)
        for flag in sorted(flags - claims):
            problems.append(f"{name}: {flag} is in --help but in neither the synopsis nor the flag table of its "
                            "section of the docs")
        for flag in sorted(claims - flags):
            problems.append(f"{name}: the docs' synopsis or flag table names {flag}, which --help does not list")
        print(f"{name}: {len(flags)} flags in --help")
    for p in problems:
        print("FAIL " + p)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
