#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Where a configuration's instructions per command go, by kernel symbol.

Reads what bench/path-cost.sh wrote with PATH_PROFILE=DIR and the counts
insn_count_plugin.c wrote at each run of the marker (DIR/snap.N): for each
job, the difference between its two snapshots, by the kernel symbol each
counted block starts in (DIR/kallsyms.N, read right after the job), divided
by the job's commands.  Prints, per workload, the symbols whose cost per
command differs most between the configurations and the first one (A, stock,
by default), with the medians over the rounds, and the totals.

    bench/profile/profile.py DIR [--top N] [--base A]
"""
import argparse
import bisect
import collections
import os
import statistics
import sys


def read_snapshot(path):
    counts = {}
    with open(path) as f:
        for line in f:
            addr, insns = line.split()
            counts[addr if addr == "user" else int(addr, 16)] = int(insns)
    return counts


class Symbols:
    """The text symbols of one /proc/kallsyms, for lookups by address."""

    def __init__(self, path):
        syms = []
        with open(path) as f:
            for line in f:
                parts = line.split()
                if len(parts) < 3 or parts[1] not in "tTwW":
                    continue
                addr = int(parts[0], 16)
                if addr == 0:
                    sys.exit(f"{path}: addresses hidden (kptr_restrict)")
                name = parts[2] + (" " + parts[3] if len(parts) > 3 else "")
                syms.append((addr, name))
        syms.sort()
        self.addrs = [a for a, _ in syms]
        self.names = [n for _, n in syms]

    def name(self, addr):
        i = bisect.bisect_right(self.addrs, addr) - 1
        return self.names[i] if i >= 0 else "?"


def job_profile(d, first, last):
    """Instructions by symbol between snapshots FIRST and LAST."""
    a = read_snapshot(os.path.join(d, f"snap.{first}"))
    b = read_snapshot(os.path.join(d, f"snap.{last}"))
    syms = Symbols(os.path.join(d, f"kallsyms.{last}"))
    by_sym = collections.Counter()
    for addr, n in b.items():
        delta = n - a.get(addr, 0)
        if delta:
            by_sym["(user space)" if addr == "user" else syms.name(addr)] += delta
    return by_sym


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("dir")
    ap.add_argument("--top", type=int, default=40)
    ap.add_argument("--base", default="A")
    args = ap.parse_args()

    # (rw, config) -> symbol -> [per-command cost of each round]
    costs = collections.defaultdict(lambda: collections.defaultdict(list))
    totals = collections.defaultdict(list)
    configs, workloads = [], []
    with open(os.path.join(args.dir, "windows")) as f:
        for line in f:
            first, last, config, rw, _round, ios = line.split()
            ios = int(ios)
            if ios <= 0:
                sys.exit(f"job {first}-{last}: no commands")
            prof = job_profile(args.dir, first, last)
            for sym, n in prof.items():
                costs[rw, config][sym].append(n / ios)
            totals[rw, config].append(sum(prof.values()) / ios)
            if config not in configs:
                configs.append(config)
            if rw not in workloads:
                workloads.append(rw)
    if args.base not in configs:
        sys.exit(f"no jobs of configuration {args.base}")
    others = [c for c in configs if c != args.base]

    def med(rw, c, sym):
        v = costs[rw, c].get(sym)
        # a symbol not seen in some rounds counts 0 there
        rounds = len(totals[rw, c])
        return statistics.median((v or []) + [0.0] * (rounds - len(v or [])))

    for rw in workloads:
        print(f"\n## {rw}: instructions per command, median of "
              f"{len(totals[rw, args.base])} rounds")
        line = " | ".join(f"{c}: {statistics.median(totals[rw, c]):.0f}"
                          for c in configs)
        print(f"\nwhole guest: {line}")
        for c in others:
            d = statistics.median(totals[rw, c]) - statistics.median(totals[rw, args.base])
            print(f"{c} - {args.base}: {d:+.0f}")
        syms = set()
        for c in configs:
            syms.update(costs[rw, c])
        diff = {s: max(abs(med(rw, c, s) - med(rw, args.base, s)) for c in others)
                for s in syms}
        print("\n| symbol | " + " | ".join(configs) + " | "
              + " | ".join(f"{c} - {args.base}" for c in others) + " |")
        print("| --- |" + " ---: |" * (len(configs) + len(others)))
        shown = sorted(syms, key=lambda s: -diff[s])[:args.top]
        for s in shown:
            vals = [med(rw, c, s) for c in configs]
            ds = [med(rw, c, s) - med(rw, args.base, s) for c in others]
            print(f"| {s} | " + " | ".join(f"{v:.1f}" for v in vals) + " | "
                  + " | ".join(f"{d:+.1f}" for d in ds) + " |")
        rest = [sum(med(rw, c, s) - med(rw, args.base, s) for s in syms - set(shown))
                for c in others]
        print("| (the other symbols) |" + " |" * len(configs) + " "
              + " | ".join(f"{r:+.1f}" for r in rest) + " |")


if __name__ == "__main__":
    main()
