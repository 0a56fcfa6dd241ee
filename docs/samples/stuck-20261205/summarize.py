#!/usr/bin/env python3
"""Summarize interleaved `lab bench --stuck-clients 0|1` runs (docs/reliability.md, "A stuck client").

Usage: summarize.py DIR|samples.json   DIR holds k0-r1 ... k1-rN, each a bench output directory;
samples.json (committed beside this script) is the extract of those runs this page quotes.
For each (cache, series) it pools the updates' ack_ms (publish until the last fan-out client
ACKed) and publish_ms over every round, per K, and prints median, p99 (nearest rank) and the
K=1 / K=0 ratios, plus what the stuck client was sent after it stopped reading.
"""
import glob, json, math, os, statistics, sys


def p99(xs):
    xs = sorted(xs)
    return xs[max(0, math.ceil(0.99 * len(xs)) - 1)]


def runs(root):
    """Yields (run name, configs) from DIR/k*-r*/bench.json, or from samples.json (the
    committed extract of those runs)."""
    if os.path.isfile(root):
        with open(root) as f:
            for name, cfgs in json.load(f).items():
                yield name, [dict(c, updates=[{"ack_ms": a, "publish_ms": p} for a, p in zip(c["ack_ms"], c["publish_ms"])]) for c in cfgs]
        return
    for d in sorted(p for p in glob.glob(os.path.join(root, "k*-r*")) if os.path.isdir(p)):
        with open(os.path.join(d, "bench.json")) as f:
            yield os.path.basename(d), json.load(f)["configs"]


def main(root):
    pool = {}  # (cache, series, k) -> {"ack": [], "pub": []}
    stuck = {}  # (cache, series) -> [(sends after, bytes after)]
    for name, configs in runs(root):
        k = int(name.split("-")[0][1:])
        for c in configs:
            if c.get("error"):
                sys.exit(f"{name}: {c['series']}: {c['error']}")
            key = (c["cache"], c["series"])
            p = pool.setdefault(key + (k,), {"ack": [], "pub": []})
            for u in c["updates"]:
                p["ack"].append(u["ack_ms"])
                p["pub"].append(u["publish_ms"])
            if k:
                stuck.setdefault(key, []).append((c.get("stuck_sends", 0) - c.get("stuck_initial_sends", 0),
                                                  c.get("stuck_bytes", 0) - c.get("stuck_initial_bytes", 0)))
    print("| cache | series | samples per K | ACK median K=0 / K=1 (ms) | ACK p99 K=0 / K=1 (ms) | p99 ratio | publish median K=0 / K=1 (ms) | sent to the stuck client after it stopped reading |")
    print("| --- | --- | --- | --- | --- | --- | --- | --- |")
    for cache, series in sorted({(c, s) for c, s, _ in pool}):
        a, b = pool.get((cache, series, 0)), pool.get((cache, series, 1))
        if not a or not b:
            continue
        sent = sorted(set(stuck.get((cache, series), [])))
        sent_s = ", ".join(f"{n} responses, {by} B" for n, by in sent)
        print(f"| {cache} | {series} | {len(a['ack'])} / {len(b['ack'])} "
              f"| {statistics.median(a['ack']):.1f} / {statistics.median(b['ack']):.1f} "
              f"| {p99(a['ack']):.1f} / {p99(b['ack']):.1f} | {p99(b['ack']) / p99(a['ack']):.2f} "
              f"| {statistics.median(a['pub']):.1f} / {statistics.median(b['pub']):.1f} | {sent_s} |")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: summarize.py DIR|samples.json")
    main(sys.argv[1])
