#!/usr/bin/env python3
# SPDX-License-Identifier: GPL-2.0
"""Summarize one `make bench` run: medians over rounds, ratios to stock.

Reads the fio JSON files of a raw directory (bench/guest.sh names them
r<round>_<config>_<transport>_<backend>_<workload>.json), prints a Markdown
table and writes summary.json, summary.md and chart.png next to it.
"""
import json
import os
import re
import statistics
import sys

NAME = re.compile(r"r(\d+)_([A-D])_(\w+?)_(bdev|file)_(randread|randwrite|qd1)\.json$")
CONFIGS = {"A": "stock nvmet", "B": "module, cgroup_id unset",
           "C": "cgroup_id set", "D": "cgroup_id set + io.cost"}


def job_stats(path, workload):
    with open(path) as f:
        data = json.load(f)
    side = data["jobs"][0]["write" if workload == "randwrite" else "read"]
    lat = side.get("clat_ns", {})
    return {"iops": side["iops"],
            "mean_us": lat.get("mean", 0) / 1000,
            "p99_us": lat.get("percentile", {}).get("99.000000", 0) / 1000}


def main(raw, out):
    runs = {}
    for name in sorted(os.listdir(raw)):
        m = NAME.match(name)
        if not m:
            continue
        rnd, cfg, transport, backend, workload = m.groups()
        try:
            st = job_stats(os.path.join(raw, name), workload)
        except (ValueError, KeyError, IndexError, OSError):
            continue
        runs.setdefault((transport, backend, workload), {}).setdefault(cfg, []).append(st)

    rows = []
    for (transport, backend, workload), by_cfg in sorted(runs.items()):
        med = {}
        for cfg, sts in by_cfg.items():
            med[cfg] = {k: statistics.median(s[k] for s in sts) for k in ("iops", "mean_us", "p99_us")}
            med[cfg]["rounds"] = len(sts)
            ios = [s["iops"] for s in sts]
            med[cfg]["iops_spread_pct"] = (100 * (max(ios) - min(ios)) / statistics.median(ios)) if len(ios) > 1 and statistics.median(ios) else 0
        base = med.get("A")
        for cfg in sorted(med):
            m = med[cfg]
            if base and base["iops"]:
                m["iops_vs_A"] = m["iops"] / base["iops"]
            if base and base["mean_us"]:
                m["mean_vs_A"] = m["mean_us"] / base["mean_us"]
            if base and base["p99_us"]:
                m["p99_vs_A"] = m["p99_us"] / base["p99_us"]
        rows.append({"transport": transport, "backend": backend, "workload": workload, "configs": med})

    lines = ["| transport | backend | workload | config | IOPS | mean µs | p99 µs | IOPS vs A | mean vs A | p99 vs A | spread |",
             "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |"]
    for r in rows:
        for cfg, m in sorted(r["configs"].items()):
            lines.append("| {} | {} | {} | {} {} | {:.0f} | {:.0f} | {:.0f} | {} | {} | {} | {:.0f} % |".format(
                r["transport"], r["backend"], r["workload"], cfg, CONFIGS[cfg], m["iops"], m["mean_us"], m["p99_us"],
                "%.3f" % m["iops_vs_A"] if "iops_vs_A" in m else "-",
                "%.2f" % m["mean_vs_A"] if "mean_vs_A" in m else "-",
                "%.2f" % m["p99_vs_A"] if "p99_vs_A" in m else "-",
                m["iops_spread_pct"]))
    table = "\n".join(lines)
    print(table)

    iso = {}
    for mode in ("module", "inline"):
        parts = {}
        for part in ("alone_quiet", "with_quiet", "noisy"):
            path = os.path.join(raw, "iso_%s_%s.json" % (mode, part))
            if os.path.exists(path):
                try:
                    parts[part] = job_stats(path, "randread")
                except (ValueError, KeyError, IndexError):
                    pass
        if "alone_quiet" in parts and "with_quiet" in parts:
            a, w = parts["alone_quiet"], parts["with_quiet"]
            parts["iops_kept"] = w["iops"] / a["iops"] if a["iops"] else 0
            parts["p99_vs_alone"] = w["p99_us"] / a["p99_us"] if a["p99_us"] else 0
            iso[mode] = parts
    if iso:
        print("\n| isolation mode | Q alone IOPS | Q with N IOPS | kept | Q alone p99 µs | Q with N p99 µs | p99 ratio | N IOPS |")
        print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
        for mode, p in iso.items():
            print("| {} | {:.0f} | {:.0f} | {:.1f} % | {:.0f} | {:.0f} | {:.2f} | {:.0f} |".format(
                mode, p["alone_quiet"]["iops"], p["with_quiet"]["iops"], 100 * p["iops_kept"],
                p["alone_quiet"]["p99_us"], p["with_quiet"]["p99_us"], p["p99_vs_alone"],
                p.get("noisy", {}).get("iops", 0)))

    scale = os.path.join(raw, "scale.csv")
    scale_rows = []
    if os.path.exists(scale):
        with open(scale) as f:
            hdr = f.readline().strip().split(",")
            scale_rows = [dict(zip(hdr, map(int, l.strip().split(",")))) for l in f if l.strip()]
        print("\n| namespaces with cgroup_id | tasks added | slab added (KiB) | slab per namespace (KiB) |")
        print("| ---: | ---: | ---: | ---: |")
        for s in scale_rows[1:]:
            print("| {} | {} | {} | {:.1f} |".format(s["namespaces"], s["task_delta"], s["slab_delta_kib"],
                                                    s["slab_delta_kib"] / s["namespaces"]))

    os.makedirs(out, exist_ok=True)
    with open(os.path.join(out, "summary.json"), "w") as f:
        json.dump({"raw": raw, "rows": rows, "isolation": iso, "scale": scale_rows}, f, indent=1)
    with open(os.path.join(out, "summary.md"), "w") as f:
        f.write(table + "\n")

    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(no matplotlib: chart skipped)", file=sys.stderr)
        return
    labels = ["%s %s %s" % (r["transport"], r["backend"], r["workload"]) for r in rows]
    fig, ax = plt.subplots(figsize=(max(8, len(rows) * 0.9), 4.5))
    width = 0.2
    for i, cfg in enumerate("ABCD"):
        vals = [r["configs"].get(cfg, {}).get("iops_vs_A", 0) for r in rows]
        ax.bar([x + (i - 1.5) * width for x in range(len(rows))], vals, width, label="%s: %s" % (cfg, CONFIGS[cfg]))
    ax.axhline(1.0, color="black", linewidth=0.6)
    ax.set_xticks(range(len(rows)))
    ax.set_xticklabels(labels, rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("IOPS relative to stock nvmet (A)")
    ax.set_title("nvmet_cgroup: median IOPS over rounds, one boot")
    ax.legend(fontsize=7, loc="lower left")
    fig.tight_layout()
    fig.savefig(os.path.join(out, "chart.png"), dpi=110)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2] if len(sys.argv) > 2 else os.path.dirname(os.path.abspath(sys.argv[1].rstrip("/"))))
