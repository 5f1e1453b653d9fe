#!/usr/bin/env python3
"""Plot a `t3sim sweep` CSV of collectives: time and bus bandwidth against size or channels.

Usage:
    tools/plot_collectives.py SWEEP_CSV -o OUTDIR [--x auto|size|channels] [--title TEXT] [--measured CSV]

    ./build/t3sim sweep configs/sweeps/collectives_h200_sizes.yaml -o h200_sizes.csv
    tools/plot_collectives.py h200_sizes.csv -o plots/

Input: the CSV written by `t3sim sweep` for a `kind: collective` workload (one row per
point). Columns used:
    status                     only `ok` rows are plotted; the others are counted on stderr
    collective                 the collective (metric column; falls back to the
                               `workload.collective` parameter column): one line each
    array_bytes                the per-GPU array size (x for --x size)
    workload.channels          the channel count (x for --x channels)
    time_ps, busbw_GBps        the plotted values
The sweep's other parameter columns (those between `point` and `status`) that take more
than one value besides the x axis and the collective split the lines further (their
values join the legend label).

--x auto (the default) plots against channels when `workload.channels` takes more than
one value, else against size.

--measured CSV draws calibration points beside the model's lines (unfilled markers in
the line's colour) and adds their columns to the table. Two formats (lines starting
with # are skipped):
  * op (reduce_scatter, all_gather, all_reduce: NCCL's names for ring-rs, ring-ag,
    ring-ar), array_MiB, channels, t_med_us and busbw_GBps, as
    ../shared/calibration/h200/nccl_ring_channels_4gpu.csv; matched by collective and x
    (channels, or size = array_MiB);
  * tools/h200/nccl_sizes.py's: op, gpus, array_bytes and kernel_min_us (the NCCL
    kernel's own time, which is what a single simulated op is: the eager and graph
    columns hold the launch path too; results/h200-measurements point 30); matched by
    collective, GPU count (the sweep's system.num_gpus) and size. A row whose kernel
    took longer than graph_med_us (its kernels all waited for a peer's late launch) is
    left out, with a count on stderr.

Outputs (in OUTDIR, created if missing; STEM is the CSV's file name without .csv):
    STEM_time.png    time (us) per collective; log-log against size, log2 x against channels
    STEM_busbw.png   bus bandwidth (GB/s, NCCL's convention) per collective, log x
    STEM.md          the same numbers as a markdown table (x, collective, time us, busbw GB/s)
The table is also printed on stdout.

Exit codes: 0 success; 2 bad input (missing file, missing columns, no ok rows) or no
matplotlib: one line on stderr and no PNG written.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections import defaultdict
from pathlib import Path

from t3sim_tools import MIB, fail, pyplot, read_rows, size_label


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("csv", type=Path, help="a t3sim sweep CSV of collective points")
    parser.add_argument("-o", "--outdir", type=Path, required=True, help="directory for the PNGs and table")
    parser.add_argument("--x", choices=["auto", "size", "channels"], default="auto", help="the x axis")
    parser.add_argument("--title", default=None, help="figure title (default: the CSV's name)")
    parser.add_argument("--measured", type=Path, default=None, help="calibration points to draw beside the model")
    args = parser.parse_args()

    header, rows = read_rows(args.csv)
    collective_col = "collective" if "collective" in header else "workload.collective"
    for col in (collective_col, "status", "time_ps", "busbw_GBps"):
        if col not in header:
            fail(f"{args.csv}: no '{col}' column (is this a sweep of a collective workload?)")
    ok = [r for r in rows if r.get("status") == "ok"]
    if not ok:
        fail(f"{args.csv}: no ok rows ({len(rows)} rows)")
    if len(ok) < len(rows):
        print(f"plot_collectives: {len(rows) - len(ok)} row(s) not ok, left out", file=sys.stderr)

    has_channels = "workload.channels" in header
    channel_values = {r["workload.channels"] for r in ok} if has_channels else set()
    x_kind = args.x
    if x_kind == "auto":
        x_kind = "channels" if len(channel_values) > 1 else "size"
    if x_kind == "channels" and not has_channels:
        fail(f"{args.csv}: --x channels needs a 'workload.channels' column")
    if x_kind == "size" and "array_bytes" not in header:
        fail(f"{args.csv}: --x size needs an 'array_bytes' column")

    # Parameter columns sit between `point` and `status`; those that vary (other than
    # the x axis and the collective) split the lines.
    params = header[header.index("point") + 1 : header.index("status")] if "point" in header else []
    x_params = {"workload.channels"} if x_kind == "channels" else {"workload.size"}
    split = [p for p in params if p not in x_params and p != "workload.collective" and len({r[p] for r in ok}) > 1]

    def x_of(r: dict[str, str]) -> float:
        try:
            return float(r["workload.channels"] if x_kind == "channels" else r["array_bytes"])
        except ValueError:
            fail(f"{args.csv}: point {r.get('point', '?')}: bad x value")

    lines: dict[str, list[tuple[float, float, float]]] = defaultdict(list)
    gpus_of: dict[str, str] = {}  # line -> its GPU count, where the sweep has the column
    for r in ok:
        label = r[collective_col] + "".join(f", {p.split('.')[-1]}={r[p]}" for p in split)
        gpus_of[label] = r.get("system.num_gpus", r.get("num_gpus", ""))
        try:
            t_us = float(r["time_ps"]) * 1e-6
            busbw = float(r["busbw_GBps"])
        except ValueError:
            fail(f"{args.csv}: point {r.get('point', '?')}: time_ps / busbw_GBps not numbers")
        lines[label].append((x_of(r), t_us, busbw))
    for pts in lines.values():
        pts.sort()

    # Calibration points: (collective, GPU count or "", x) -> (time us, busbw GB/s).
    nccl_names = {"reduce_scatter": "ring-rs", "all_gather": "ring-ag", "all_reduce": "ring-ar"}
    measured: dict[tuple[str, str, float], tuple[float, float]] = {}
    if args.measured is not None:
        m_header, m_rows = read_rows(args.measured)
        sizes_format = all(c in m_header for c in ("op", "gpus", "array_bytes", "kernel_min_us"))
        needed = ("op", "gpus", "array_bytes", "kernel_min_us") if sizes_format else \
                 ("op", "array_MiB", "channels", "t_med_us", "busbw_GBps")
        for col in needed:
            if col not in m_header:
                fail(f"{args.measured}: no '{col}' column")
        if sizes_format and x_kind != "size":
            fail(f"{args.measured}: a size curve (nccl_sizes.py) needs a sweep against size")
        skewed = 0
        for r in m_rows:
            try:
                name = nccl_names.get(r["op"], r["op"])
                if sizes_format:
                    n, nbytes, t_us = int(r["gpus"]), float(r["array_bytes"]), float(r["kernel_min_us"])
                    # A kernel longer than the graph's whole time per op waited inside for
                    # its peer's late launch (every one of the 10 timed): no clean point.
                    if r.get("graph_med_us") and t_us > float(r["graph_med_us"]):
                        skewed += 1
                        continue
                    factor = 2 * (n - 1) / n if r["op"] == "all_reduce" else (n - 1) / n
                    measured[(name, str(n), nbytes)] = (t_us, nbytes / (t_us * 1e3) * factor)
                else:
                    x = float(r["channels"]) if x_kind == "channels" else float(r["array_MiB"]) * MIB
                    measured[(name, "", x)] = (float(r["t_med_us"]), float(r["busbw_GBps"]))
            except ValueError:
                fail(f"{args.measured}: a row's numbers do not parse: {r}")

        if skewed:
            print(f"plot_collectives: {skewed} measured row(s) left out: kernel_min_us above graph_med_us "
                  "(the kernel waited for its peer's launch)", file=sys.stderr)

    def measured_at(label: str, x: float):
        collective = label.split(",")[0]
        return measured.get((collective, gpus_of.get(label, ""), x), measured.get((collective, "", x)))

    def measured_line(label: str) -> list[tuple[float, tuple[float, float]]]:
        collective = label.split(",")[0]
        return sorted((x, v) for (c, g, x), v in measured.items()
                      if c == collective and g in ("", gpus_of.get(label, "")))

    x_head = "channels" if x_kind == "channels" else "size"
    if measured:
        table = [f"| {x_head} | collective | time (us) | measured (us) | model / measured | busbw (GB/s) | measured |",
                 "| ---: | --- | ---: | ---: | ---: | ---: | ---: |"]
    else:
        table = [f"| {x_head} | collective | time (us) | busbw (GB/s) |", "| ---: | --- | ---: | ---: |"]
    for label in sorted(lines):
        for x, t_us, busbw in lines[label]:
            xs = f"{x:g}" if x_kind == "channels" else size_label(x)
            if measured:
                m = measured_at(label, x)
                ms = (f"{m[0]:.1f} | {t_us / m[0]:.2f}", f"{m[1]:.1f}") if m else ("- | -", "-")
                table.append(f"| {xs} | {label} | {t_us:.1f} | {ms[0]} | {busbw:.1f} | {ms[1]} |")
            else:
                table.append(f"| {xs} | {label} | {t_us:.1f} | {busbw:.1f} |")
    text = "\n".join(table) + "\n"

    plt = pyplot()

    args.outdir.mkdir(parents=True, exist_ok=True)
    stem = args.csv.stem
    title = args.title or stem
    xlabel = "channels (ring WGs per GPU)" if x_kind == "channels" else "per-GPU array size (MiB)"
    scale = 1.0 if x_kind == "channels" else 1.0 / MIB
    written = []
    for name, column, ylabel, logy in (
        ("time", 1, "time (us)", True),
        ("busbw", 2, "bus bandwidth (GB/s)", False),
    ):
        fig, ax = plt.subplots(figsize=(7, 4.5))
        for label in sorted(lines):
            pts = lines[label]
            (line,) = ax.plot([p[0] * scale for p in pts], [p[column] for p in pts], marker="o", label=label)
            mine = measured_line(label)
            if mine:
                ax.plot([x * scale for x, _ in mine], [v[column - 1] for _, v in mine], linestyle="none",
                        marker="s", markersize=8, markerfacecolor="none", color=line.get_color(),
                        label=f"{label} measured")
        ax.set_xscale("log", base=2 if x_kind == "channels" else 10)
        if x_kind == "channels":  # the swept counts as plain numbers, not powers of two
            ticks = sorted({p[0] for pts in lines.values() for p in pts})
            ax.set_xticks(ticks, [f"{t:g}" for t in ticks])
            ax.minorticks_off()
        if logy:
            ax.set_yscale("log")
        else:
            ax.set_ylim(bottom=0)
        ax.set_xlabel(xlabel)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.grid(True, which="both", alpha=0.3)
        ax.legend()
        fig.tight_layout()
        out = args.outdir / f"{stem}_{name}.png"
        tmp = out.with_suffix(".png.tmp")
        fig.savefig(tmp, format="png", dpi=110)
        plt.close(fig)
        os.replace(tmp, out)
        written.append(out)
    (args.outdir / f"{stem}.md").write_text(text)
    sys.stdout.write(text)
    for out in written:
        print(f"plot_collectives: wrote {out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
