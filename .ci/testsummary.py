#!/usr/bin/env python3
"""Summaries of `go test -json` output (test2json events), for the Makefile.

  testsummary.py skips FILE         one line: what `make test` skipped, and why
  testsummary.py flake FILE...      failures per test over every run in FILEs; exit 1 on any

Only the standard library: this runs before anything else is installed.
"""
import json
import sys
from collections import Counter, defaultdict


def events(paths):
    for path in paths:
        with open(path, encoding="utf-8", errors="replace") as f:
            for line in f:
                line = line.strip()
                if not line.startswith("{"):
                    continue  # build errors and other non-JSON noise
                try:
                    yield json.loads(line)
                except json.JSONDecodeError:
                    continue


def short(pkg):
    return pkg.split("/lab/", 1)[-1]


def skips(path):
    total = 0
    reasons = {}  # (pkg, test) -> last output line before --- SKIP
    last = {}
    skipped = []
    for e in events([path]):
        test = e.get("Test")
        if not test:
            continue
        key = (e.get("Package", ""), test)
        act = e.get("Action")
        if act == "output":
            out = e.get("Output", "").strip()
            if out and not out.startswith(("---", "===")):
                last[key] = out
        elif act in ("pass", "fail"):
            total += 1
        elif act == "skip":
            total += 1
            skipped.append(key)
            reasons[key] = last.get(key, "no reason given")
    if not skipped:
        print(f"make test: nothing skipped ({total} tests)")
        return 0
    # Group by reason: one missing component usually skips many tests.
    by_reason = defaultdict(list)
    for key in skipped:
        why = reasons[key].split(": ", 1)[-1] if ".go:" in reasons[key] else reasons[key]
        by_reason[why].append(f"{short(key[0])}.{key[1]}")
    parts = [f"{len(v)} for {why} [{', '.join(v)}]" for why, v in by_reason.items()]
    print(f"make test: skipped {len(skipped)} of {total} tests: " + "; ".join(parts))
    return 0


def flake(paths):
    runs, fails, pkg_fails = Counter(), Counter(), Counter()
    for e in events(paths):
        act, pkg, test = e.get("Action"), short(e.get("Package", "")), e.get("Test")
        if act not in ("pass", "fail", "skip"):
            continue
        if test is None:
            if act == "fail":
                pkg_fails[pkg] += 1
            continue
        runs[(pkg, test)] += 1
        if act == "fail":
            fails[(pkg, test)] += 1
    # A package that failed with no failing test: build error, panic, or timeout.
    failing_pkgs = {pkg for pkg, _ in fails}
    broken = {pkg: n for pkg, n in pkg_fails.items() if pkg not in failing_pkgs}
    total = sum(runs.values())
    where = f"{total} test runs ({len(runs)} tests, {len(paths)} concurrent copies)"
    if not fails and not broken:
        print(f"flake: 0 failures in {where}")
        return 0
    print(f"flake: {sum(fails.values())} failures in {where}:")
    for (pkg, test), n in sorted(fails.items(), key=lambda kv: (-kv[1], kv[0])):
        print(f"  {n:4d}/{runs[(pkg, test)]:<4d} {pkg} {test}")
    for pkg, n in sorted(broken.items()):
        print(f"  {n:4d} package failures without a failing test (build error, panic or timeout): {pkg}")
    return 1


def main(argv):
    if len(argv) >= 3 and argv[1] == "skips":
        return skips(argv[2])
    if len(argv) >= 3 and argv[1] == "flake":
        return flake(argv[2:])
    print(__doc__.strip(), file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv))
