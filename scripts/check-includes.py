#!/usr/bin/env python3
"""check-includes.py: the include boundary of the offload layer (issue 40).

    python3 scripts/check-includes.py [ROOT]     check the tree (default: this repository)
    python3 scripts/check-includes.py --self-test

Exits 1, naming file:line, for each quoted #include that crosses a
boundary; 0 when none does. The rules:

  1. A backend's private headers stay in its folder. Backend <name> is a
     folder offload/backends/<name>/; its public headers are those under
     offload/backends/<name>/include/ (included as "forein/<name>/x.h"),
     everything else in the folder is private. A file outside
     offload/backends/<name>/ that includes one of them fails: a host (net/,
     tools/, sqlite_vfs/, the generic seam, offload/core/, the C ABI) and
     another backend alike.
  2. A public header does not include a private one: a header under
     offload/backends/<name>/include/ that includes a private header of
     <name> fails (hosts could not compile it).
  3. offload/core/ is the manager's inside: a file outside offload/ that
     includes a header of offload/core/ fails. Hosts use the generic
     headers (offload/include/forein/offload/) and the C ABI.

Exempt from rule 1, and only from it: a backend's own unit tests, benches
and fuzzers under tests/, which test the parts of a backend that no host
needs (prefix cover, range tables, PLA, node layouts, a device's batch
decoding) and so must reach them:
  tests/offload/ (not tests/offload/conformance/)  any backend
  tests/bench/, tests/fuzz/                         any backend
  tests/dpa/                                        dpa
  tests/fpga/                                       fpga
CMake gives them offload/backends/ through the INTERFACE target
forein_offload_internals; everything else sees only forein_offload's public
include directories. The conformance suite is not exempt: it tests every
backend through the generic seam alone.

An include is resolved as the compiler resolves a quoted one here: first
beside the including file, then under offload/backends/ (the private
include directory the offload libraries and forein_offload_internals add)
and under offload/ (core/..., backends/backends.def). Includes that resolve
elsewhere (engine/, net/, tests/, system headers) are not this check's
business. Build trees (folders holding CMakeCache.txt, or named build*)
and hidden folders are skipped.

--self-test builds a small tree in a temporary folder with one violation of
each kind and allowed includes beside them, and fails unless the check
finds exactly the violations.
"""
import os
import re
import sys
import tempfile

INCLUDE = re.compile(r'^\s*#\s*include\s*"([^"]+)"')
SOURCE_SUFFIXES = (".h", ".hh", ".hpp", ".c", ".cc", ".cpp", ".def", ".inc")
BACKENDS = os.path.join("offload", "backends")
CORE = os.path.join("offload", "core")
# tests/ folders exempt from rule 1, and the backends whose private headers
# each may include (None: any backend).
EXEMPT = (
    (os.path.join("tests", "offload", "conformance"), ()),
    (os.path.join("tests", "offload"), None),
    (os.path.join("tests", "bench"), None),
    (os.path.join("tests", "fuzz"), None),
    (os.path.join("tests", "dpa"), ("dpa",)),
    (os.path.join("tests", "fpga"), ("fpga",)),
)


def under(path, folder):
    return path == folder or path.startswith(folder + os.sep)


def source_files(root):
    for dirpath, dirnames, filenames in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        keep = []
        for d in sorted(dirnames):
            full = os.path.join(dirpath, d)
            if d.startswith(".") or (rel_dir == "." and d.startswith("build")):
                continue
            if os.path.exists(os.path.join(full, "CMakeCache.txt")):
                continue
            keep.append(d)
        dirnames[:] = keep
        for f in sorted(filenames):
            if f.endswith(SOURCE_SUFFIXES):
                yield os.path.normpath(os.path.join(rel_dir, f))


def resolve(root, includer, name):
    """The included file, relative to root, or None if it is not found in
    the places this check looks (beside the includer, offload/backends/,
    offload/)."""
    for base in (os.path.dirname(includer), BACKENDS, "offload"):
        candidate = os.path.normpath(os.path.join(base, name))
        if candidate.startswith(".."):
            continue
        if os.path.isfile(os.path.join(root, candidate)):
            return candidate
    return None


def backend_of(path):
    """(backend name, public?) for a path in a backend's folder, else None."""
    if not under(path, BACKENDS):
        return None
    parts = os.path.relpath(path, BACKENDS).split(os.sep)
    if len(parts) < 2:
        return None  # backends/backends.def: the list, no backend's
    return parts[0], parts[1] == "include"


def exempt_backends(path):
    for folder, allowed in EXEMPT:
        if under(path, folder):
            return allowed
    return ()


def check(root):
    problems = []
    for path in source_files(root):
        try:
            with open(os.path.join(root, path), encoding="utf-8", errors="replace") as f:
                lines = f.readlines()
        except OSError:
            continue
        mine = backend_of(path)
        for number, line in enumerate(lines, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            name = m.group(1)
            target = resolve(root, path, name)
            if target is None:
                continue
            where = f"{path}:{number}"
            theirs = backend_of(target)
            if theirs is not None and not theirs[1]:
                backend = theirs[0]
                folder = os.path.join(BACKENDS, backend)
                public = os.path.join(folder, "include", "forein", backend)
                if mine is not None and mine[0] == backend:
                    if mine[1]:
                        problems.append(f'{where}: public header includes "{name}" ({target}), a private header '
                                        f"of backend {backend}: a public header may include only public ones "
                                        f"({public}/, std, forein/)")
                    continue
                allowed = exempt_backends(path)
                if allowed is None or backend in allowed:
                    continue
                who = f"backend {mine[0]}" if mine is not None else "a file outside the backend"
                problems.append(f'{where}: {who} includes "{name}" ({target}), a private header of backend '
                                f"{backend}; include its public headers ({public}/, as \"forein/{backend}/x.h\") "
                                f"or give it one")
            elif under(target, CORE) and not under(path, "offload"):
                problems.append(f'{where}: includes "{name}" ({target}), an offload/core internal; outside '
                                f"offload/ use the generic headers (offload/include/forein/offload/) or the C ABI")
    return problems


def self_test():
    files = {
        # a backend "foo": private and public headers
        "offload/backends/foo/foo.h": "#pragma once\n",
        "offload/backends/foo/foo.cc": '#include "foo/foo.h"\n#include "forein/foo/pub.h"\n',
        "offload/backends/foo/part/inner.h": '#include "foo.h"\n',  # not found beside it: fine either way
        "offload/backends/foo/include/forein/foo/pub.h": '#pragma once\n#include "foo/foo.h"\n',  # rule 2
        "offload/backends/foo/include/forein/foo/ok.h": '#pragma once\n#include "forein/foo/pub.h"\n',
        # another backend
        "offload/backends/bar/bar.cc": '#include "foo/foo.h"\n#include "forein/foo/pub.h"\n',  # rule 1
        "offload/backends/backends.def": "FOREIN_BACKEND(kFoo)\n",
        # core
        "offload/core/internal.h": "#pragma once\n",
        "offload/core/registry.cc": '#include "core/internal.h"\n#include "backends/backends.def"\n',
        # hosts
        "net/host.cc": ('#include "forein/foo/pub.h"\n#include "foo/foo.h"\n'  # rule 1
                        '#include "core/internal.h"\n'  # rule 3
                        '#include "kv/local.h"\n#include <vector>\n'),
        "net/kv/local.h": "#pragma once\n",
        "tools/tool.cc": '  #  include "foo/part/inner.h"\n',  # rule 1
        # tests: exempt unit tests, a non-exempt conformance test, a test header named like a backend's
        "tests/offload/test_foo.cc": '#include "foo/foo.h"\n#include "bar/bar.cc"\n',
        "tests/offload/conformance/test_all.cc": '#include "foo/foo.h"\n',  # rule 1
        "tests/dpa/test_x.cc": '#include "foo/foo.h"\n',  # rule 1: tests/dpa may reach dpa only
        "tests/fpga/fpga/helper.h": "#pragma once\n",
        "tests/fpga/test_y.cc": '#include "fpga/helper.h"\n',
        # a build tree is skipped
        "build/gen.cc": '#include "foo/foo.h"\n',
        "out/CMakeCache.txt": "",
        "out/gen.cc": '#include "foo/foo.h"\n',
    }
    expected = {
        "offload/backends/foo/include/forein/foo/pub.h:2",
        "offload/backends/bar/bar.cc:1",
        "net/host.cc:2",
        "net/host.cc:3",
        "tools/tool.cc:1",
        "tests/offload/conformance/test_all.cc:1",
        "tests/dpa/test_x.cc:1",
    }
    with tempfile.TemporaryDirectory() as root:
        for rel, text in files.items():
            full = os.path.join(root, *rel.split("/"))
            os.makedirs(os.path.dirname(full), exist_ok=True)
            with open(full, "w", encoding="utf-8") as f:
                f.write(text)
        problems = check(root)
    found = {p.split(": ", 1)[0].replace(os.sep, "/") for p in problems}
    if found != expected or len(problems) != len(expected):
        print("check-includes.py --self-test FAILED")
        print("  expected:", sorted(expected))
        print("  found:   ", sorted(found))
        for p in problems:
            print("   ", p)
        return 1
    print(f"check-includes.py --self-test: ok ({len(expected)} violations found, as planted)")
    return 0


def main(argv):
    if len(argv) > 1 and argv[1] == "--self-test":
        return self_test()
    if len(argv) > 1 and argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0
    root = argv[1] if len(argv) > 1 else os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    problems = check(root)
    for p in problems:
        print(p)
    if problems:
        print(f"check-includes.py: {len(problems)} include(s) cross the offload layer's boundary "
              "(the rules: python3 scripts/check-includes.py --help)")
        return 1
    print("check-includes.py: no include crosses the offload layer's boundary")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
