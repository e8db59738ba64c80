"""Write ``tests/heavy_tests.txt`` from a per-test CPU log of the default run.

The log is ``benchmarks/cpu_per_test.py``'s ("cpu wall nodeid" per line), from a cold-cache
run (``benchmarks/cold_cache_tests.sh`` keeps it with ``KEEP_CPU_LOG=path``).  Tests are taken
from the most expensive down until the rest of the run is within ``--budget`` CPU-s, given
``--overhead`` CPU-s of worker start-up and collection that no test carries; tests already in
the list stay (the log of a run without them does not show them).  A test's CPU includes the
compiles it pays first; moving it can shift a shared compile to the next test of its file,
which the next measurement shows.

    .venv/bin/python benchmarks/select_heavy.py CPU_LOG [--budget 430] [--overhead 60]
"""

from __future__ import annotations

import argparse
from pathlib import Path

LIST = Path(__file__).resolve().parent.parent / "tests" / "heavy_tests.txt"
HEADER = """\
# Tests that leave the default run for `make test-heavy` (CI runs both), by measured CPU
# seconds from empty compile caches; written by benchmarks/select_heavy.py (tests/heavy_list.py
# applies the marker).  One node id per line; the number is the CPU-s measured.
"""


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("log")
    ap.add_argument("--budget", type=float, default=430.0)
    ap.add_argument("--overhead", type=float, default=60.0)
    args = ap.parse_args()
    cpu = {}
    for line in Path(args.log).read_text().splitlines():
        c, _, node = line.split(" ", 2)
        node = node.split("@", 1)[0]
        cpu[node] = cpu.get(node, 0.0) + float(c)
    old = {}
    if LIST.exists():
        for ln in LIST.read_text().splitlines():
            body = ln.split("#", 1)
            if body[0].strip():
                old[body[0].strip()] = body[1].strip() if len(body) > 1 else ""
    total = sum(c for n, c in cpu.items() if n not in old) + args.overhead
    chosen = {}
    for node, c in sorted(cpu.items(), key=lambda kv: -kv[1]):
        if total <= args.budget:
            break
        if node in old:
            continue
        chosen[node] = c
        total -= c
    lines = [HEADER]
    for node, note in sorted(old.items()):
        lines.append(f"{node}  # {note}\n" if note else f"{node}\n")
    for node, c in sorted(chosen.items()):
        lines.append(f"{node}  # {c:.1f} CPU-s\n")
    LIST.write_text("".join(lines))
    print(
        f"{len(chosen)} tests added ({sum(chosen.values()):.0f} CPU-s); projected default run "
        f"{total:.0f} CPU-s (with {args.overhead:.0f} overhead)"
    )


if __name__ == "__main__":
    main()
