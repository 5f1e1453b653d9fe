#!/usr/bin/env python3
"""Seed 003's figures from `t3sim sweep` CSVs of the C3 sweeps (configs/sweeps/c3_*.yaml).

Usage:
    tools/plot_c3.py fig5 --gemm GEMM_CSV --collective COLLECTIVE_CSV -o OUTDIR
    tools/plot_c3.py fig9 CSV -o OUTDIR
    tools/plot_c3.py table2 CSV [CSV ...] -o OUTDIR
    tools/plot_c3.py explain CSV [CSV ...] -o OUTDIR [--cus 304 --tile 256x256 --collective-cus 64]

fig5    Figure 5: (a) GEMM slowdown against the CUs taken away (a `kind: gemm` sweep over
        `workload.cus`; one line per other varying parameter, e.g. workload.n = 8192
        for cb1, 57344 for mb1), baseline the row with the most CUs; (b, c) collective
        slowdown against the CUs given (a `kind: collective` sweep over `workload.cus`),
        baseline the row with the most CUs. Writes fig5.png and fig5.md.
fig9    Figure 9: CU-based and DMA-based collective time against size (a `kind:
        collective` sweep over workload.implementation and workload.size) and the
        DMA / CU ratio. Writes fig9.png and fig9.md.
table2  Figures 8 and 10 and the fraction-of-ideal table from the `kind: c3` sweeps
        (configs/sweeps/c3_table2*.yaml; give all of their CSVs). Each row's variant:
        conccl with comm_cus 0: conccl; conccl with comm_cus > 0 (CUs kept from the
        GEMM): conccl_rp, the best of the case's conccl rows, 0 included (the paper's
        runtime takes CUs from a GEMM only where that helps, §VI-F), shown only when
        some row keeps CUs; c3 with comm_cus > 0: c3_rp (CU partitioning; with several
        comm_cus per case, the best, as the paper's); c3 comm-first: c3_sp;
        c3 gemm-first: c3_base. Writes fig8.png (speedup per case and variant, ideal
        marked), fig10.png (mean speedup per collective and taxonomy, every variant and
        the ideal), table2_cases.md (per case), table2.md (the mean fraction of the
        ideal per variant beside the paper's; ConCCL also against the ideal with its
        DMA collective, where the CSV has isolated_dma_collective_ps) and
        table2_taxonomy.md (the same per taxonomy, with each kernel's slowdown range).
explain What of each c3 row's time the CUs it shares explain (writes explain.md). The
        GEMM's WGs (M/tile_m x N/tile_n tiles, one WG per CU) are list-scheduled on the
        CUs, each tile taking the isolated GEMM time / its waves; the collective holds
        --collective-cus CUs while it runs (c3_sp: the CU collective's WGs at the
        library's channel count, launched on free CUs, which the dispatcher spreads one
        per CU: on MI300X 64 channels on 64 CUs, the paper's "default #CUs=64"; two fit
        a CU only under a mask) and its isolated time. c3_base: the GEMM takes every CU
        first and the collective starts when the GEMM's last WG is dispatched; c3_sp: the collective's CUs are
        busy for its time, then join the GEMM; c3_rp: comm_cus CUs are the collective's
        throughout. What the simulated time adds to this prediction is what the model's
        memory system (L2, HBM) and the rest cost the overlap; a small residual means
        the C3 loss is the CU sharing and the GEMM's waves.

Only rows with status `ok` are used; the others are counted on stderr. The tables are
also printed on stdout.

Exit codes: 0 success; 2 bad input (missing file or columns, no ok rows) or no
matplotlib: one line on stderr and no PNG written.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

from t3sim_tools import MIB, fail, ok_rows, parameter_columns, pyplot, read_rows, write_table

# Seed 003's mean fraction of the ideal speedup realized: c3_base 21 % (§IV-C), c3_sp
# 42 % (§V-A; CU partitioning "similar benefits", §V-B), ConCCL 66 % without
# partitioning (§VI-D), 72 % with it (ConCCL_rp, §VI-F and the abstract).
PAPER_FRACTION = {"c3_base": 21.0, "c3_sp": 42.0, "c3_rp": 42.0, "conccl": 66.0, "conccl_rp": 72.0}
VARIANTS = ["c3_base", "c3_sp", "c3_rp", "conccl", "conccl_rp"]


def read_ok_rows(paths: list[Path], needed: list[str]) -> list[dict[str, str]]:
    rows: list[dict[str, str]] = []
    for path in paths:
        rows += read_rows(path, needed)[1]
    return ok_rows(rows)


def header_of(path: Path) -> list[str]:
    return read_rows(path)[0]


# ---------------------------------------------------------------------------- fig5


def slowdown_lines(rows: list[dict[str, str]], params: list[str]) -> dict[str, list[tuple[int, float]]]:
    """Per group of the other varying parameters: (cus, time / time at the most CUs)."""
    others = [p for p in params if p != "workload.cus" and len({r[p] for r in rows}) > 1]
    groups: dict[str, list[dict[str, str]]] = defaultdict(list)
    for r in rows:
        groups[", ".join(f"{p.split('.')[-1]}={r[p]}" for p in others) or "all"].append(r)
    lines = {}
    for label, members in groups.items():
        base = max(members, key=lambda r: int(r["workload.cus"]))
        t0 = float(base["time_ps"])
        lines[label] = sorted((int(r["workload.cus"]), float(r["time_ps"]) / t0) for r in members)
    return lines


def fig5(args: argparse.Namespace) -> None:
    gemm_path, coll_path = Path(args.gemm), Path(args.collective)
    gemm_rows = read_ok_rows([gemm_path], ["workload.cus", "time_ps"])
    coll_rows = read_ok_rows([coll_path], ["workload.cus", "time_ps"])
    gemm = slowdown_lines(gemm_rows, parameter_columns(header_of(gemm_path)))
    coll = slowdown_lines(coll_rows, parameter_columns(header_of(coll_path)))
    plt = pyplot()
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    table = []
    for label, points in gemm.items():
        most = max(c for c, _ in points)
        a.plot([most - c for c, _ in points], [s for _, s in points], marker="o", label=label)
        table += [["GEMM " + label, str(most - c) + " taken", f"{s:.3f}"] for c, s in points]
    a.axhline(1.0, color="grey", lw=0.8)
    a.set_xlabel("CUs taken away")
    a.set_ylabel("GEMM slowdown (x)")
    a.set_title("(a) GEMM")
    a.legend()
    for label, points in coll.items():
        b.plot([c for c, _ in points], [s for _, s in points], marker="o", label=label)
        table += [["collective " + label, str(c) + " given", f"{s:.3f}"] for c, s in points]
    b.axhline(1.0, color="grey", lw=0.8)
    b.set_xscale("log", base=2)
    b.set_xlabel("CUs given")
    b.set_ylabel("slowdown vs all CUs (x)")
    b.set_title("(b, c) collectives")
    b.legend()
    fig.tight_layout()
    fig.savefig(args.output / "fig5.png", dpi=120)
    write_table(args.output / "fig5.md", ["kernel", "CUs", "slowdown"], table)


# ---------------------------------------------------------------------------- fig9


def fig9(args: argparse.Namespace) -> None:
    rows = read_ok_rows([Path(p) for p in args.csv], ["collective", "implementation", "array_bytes", "time_ps"])
    series: dict[tuple[str, str], dict[int, float]] = defaultdict(dict)
    for r in rows:
        series[(r["collective"], r["implementation"])][int(r["array_bytes"])] = float(r["time_ps"]) * 1e-6
    plt = pyplot()
    fig, (a, b) = plt.subplots(1, 2, figsize=(11, 4))
    table = []
    for (coll, impl), points in sorted(series.items()):
        xs = sorted(points)
        a.plot([x / MIB for x in xs], [points[x] for x in xs], marker="o", label=f"{coll} ({impl})")
    for coll in sorted({c for c, _ in series}):
        cu, dma = series.get((coll, "cu"), {}), series.get((coll, "dma"), {})
        xs = sorted(set(cu) & set(dma))
        if xs:
            b.plot([x / MIB for x in xs], [dma[x] / cu[x] for x in xs], marker="o", label=coll)
        table += [[coll, f"{x / MIB:g} MiB", f"{cu[x]:.1f}", f"{dma[x]:.1f}", f"{dma[x] / cu[x]:.2f}"] for x in xs]
    for ax in (a, b):
        ax.set_xscale("log", base=2)
        ax.set_xlabel("size per GPU (MiB)")
        ax.legend()
    a.set_yscale("log")
    a.set_ylabel("time (us)")
    a.set_title("CU-based vs DMA-based")
    b.axhline(1.0, color="grey", lw=0.8)
    b.set_ylabel("DMA time / CU time")
    b.set_title("DMA / CU")
    fig.tight_layout()
    fig.savefig(args.output / "fig9.png", dpi=120)
    write_table(args.output / "fig9.md", ["collective", "size", "CU (us)", "DMA (us)", "DMA / CU"], table)


# ---------------------------------------------------------------------------- table2


def variant(row: dict[str, str]) -> str:
    """Seed 003's variant of a row: c3 by its order and CU reservation, conccl by its
    reservation; any other configuration (one added to the simulator, say c3-priority)
    is a variant of its own name, so its rows never fold into another's."""
    configuration = row["configuration"]
    if configuration == "conccl":
        return "conccl_rp" if int(row["comm_cus"]) > 0 else "conccl"
    if configuration != "c3":
        return configuration
    if int(row["comm_cus"]) > 0:
        return "c3_rp"
    return "c3_sp" if row["order"] == "comm-first" else "c3_base"


def case_of(row: dict) -> str:
    """A Table II case by its preset; an H200 sub-layer case (no preset) by its GEMM preset."""
    return row["preset"] or row.get("gemm", "").split(":")[0]


def table2(args: argparse.Namespace) -> None:
    needed = ["configuration", "preset", "collective", "order", "comm_cus", "scale", "speedup", "ideal_speedup",
              "fraction_of_ideal", "taxonomy", "paper_taxonomy"]
    rows = read_ok_rows([Path(p) for p in args.csv], needed)
    cases = list(dict.fromkeys(case_of(r) for r in rows))
    colls = list(dict.fromkeys(r["collective"] for r in rows))
    # c3_rp is the best CU reservation per case, as the paper's (§V-B: the best of the
    # power-of-two allocations swept); the other variants have one row per case.
    # conccl_rp likewise, over the case's conccl rows with and without CUs kept.
    best_of = {"c3_rp", "conccl_rp"}
    by: dict[tuple[str, str, str], dict[str, str]] = {}
    for r in rows:
        key = (case_of(r), r["collective"], variant(r))
        if key not in by or (key[2] in best_of and float(r["speedup"]) > float(by[key]["speedup"])):
            by[key] = r
    if any(k[2] == "conccl_rp" for k in by):
        for (c, coll, v), r in list(by.items()):
            if v != "conccl":
                continue
            rp = by.get((c, coll, "conccl_rp"))
            if rp is None or float(r["speedup"]) > float(rp["speedup"]):
                by[(c, coll, "conccl_rp")] = r
    ideal = {(case_of(r), r["collective"]): float(r["ideal_speedup"]) for r in rows}
    present = [v for v in VARIANTS if any(k[2] == v for k in by)]
    present += sorted({k[2] for k in by} - set(VARIANTS))  # configurations the paper has not
    plt = pyplot()

    # Figure 8: speedup per case, one panel per collective.
    fig, axes = plt.subplots(len(colls), 1, figsize=(max(8, len(cases) * 0.9), 3.6 * len(colls)), squeeze=False)
    width = 0.8 / max(1, len(present))
    for ax, coll in zip(axes[:, 0], colls):
        for i, v in enumerate(present):
            ys = [float(by[(c, coll, v)]["speedup"]) if (c, coll, v) in by else 0.0 for c in cases]
            ax.bar([x + i * width for x in range(len(cases))], ys, width, label=v)
        ax.scatter([x + 0.4 - width / 2 for x in range(len(cases))], [ideal.get((c, coll), 0.0) for c in cases],
                   marker="_", s=300, color="black", label="ideal", zorder=3)
        ax.axhline(1.0, color="grey", lw=0.8)
        ax.set_xticks([x + 0.4 - width / 2 for x in range(len(cases))])
        ax.set_xticklabels(cases, rotation=30, ha="right")
        ax.set_ylabel("speedup over sequential")
        ax.set_title(coll)
        ax.legend(ncol=len(present) + 1, fontsize=8)
    fig.tight_layout()
    fig.savefig(args.output / "fig8.png", dpi=120)

    # Figure 10: mean speedup per collective and taxonomy (the simulated one).
    groups = sorted({(r["collective"], r["taxonomy"]) for r in rows})
    fig, ax = plt.subplots(figsize=(max(8, len(groups) * 1.4), 4))
    width = 0.8 / (len(present) + 1)
    for i, v in enumerate(present + ["ideal"]):
        ys = []
        for coll, tax in groups:
            members = [(k, r) for k, r in by.items() if r["collective"] == coll and r["taxonomy"] == tax]
            if v == "ideal":  # once per case, however many variants it has
                vals = [ideal[case] for case in dict.fromkeys(k[:2] for k, _ in members)]
            else:
                vals = [float(r["speedup"]) for k, r in members if k[2] == v]
            ys.append(sum(vals) / len(vals) if vals else 0.0)
        ax.bar([x + i * width for x in range(len(groups))], ys, width, label=v)
    ax.axhline(1.0, color="grey", lw=0.8)
    ax.set_xticks([x + 0.4 - width / 2 for x in range(len(groups))])
    ax.set_xticklabels([f"{c}\n{t}" for c, t in groups])
    ax.set_ylabel("mean speedup over sequential")
    ax.legend(ncol=len(present) + 1, fontsize=8)
    fig.tight_layout()
    fig.savefig(args.output / "fig10.png", dpi=120)

    # The tables: per case, then the mean fraction of the ideal per variant.
    lines = []
    for c in cases:
        for coll in colls:
            if (c, coll) not in ideal:
                continue
            some = next(by[(c, coll, v)] for v in present if (c, coll, v) in by)
            cells = [c, coll, some["scale"], some["taxonomy"], some["paper_taxonomy"], f"{ideal[(c, coll)]:.3f}"]
            for v in present:
                r = by.get((c, coll, v))
                cells.append(f"{float(r['speedup']):.3f} ({100 * float(r['fraction_of_ideal']):.0f}%)" if r else "")
            lines.append(cells)
    header = ["case", "collective", "scale", "taxonomy", "paper", "ideal"] + [f"{v} speedup (of ideal)" for v in present]
    write_table(args.output / "table2_cases.md", header, lines)
    summary = []

    def add_summary(label: str, paper: float | None, fr: list[float]) -> None:
        mean = sum(fr) / len(fr)
        if paper is None:  # a configuration the paper did not run
            summary.append([label, str(len(fr)), f"{mean:.1f}", "-", "-"])
        else:
            summary.append([label, str(len(fr)), f"{mean:.1f}", f"{paper:.0f}", f"{mean - paper:+.1f}"])

    for v in present:
        add_summary(v, PAPER_FRACTION.get(v), [100 * float(r["fraction_of_ideal"]) for k, r in by.items() if k[2] == v])
    # The paper's ideal is the CU collective's (its DMA and CU collectives run at par at
    # these sizes, Figure 9). Where the model's DMA collective is faster than its CU one
    # (the all-gather: the CU ring reaches 4 of MI300X's 7 links' bandwidth, as RCCL's
    # ring orders there do, and the DMA one all 7; models/collectives), a
    # ConCCL row can exceed that ideal; so its fraction is also given against the ideal
    # with the DMA collective: (GEMM + CU collective) / max(GEMM, DMA collective).
    for v in ("conccl", "conccl_rp"):
        fr = []
        for k, r in by.items():
            if k[2] != v or not r.get("isolated_dma_collective_ps"):
                continue
            g, c, d = (float(r[x]) for x in ("isolated_gemm_ps", "isolated_collective_ps", "isolated_dma_collective_ps"))
            ideal_dma = (g + c) / max(g, d)
            fr.append(100 * (float(r["speedup"]) - 1) / (ideal_dma - 1))
        if fr:
            add_summary(f"{v} (of the ideal with the DMA collective)", PAPER_FRACTION[v], fr)
    write_table(args.output / "table2.md", ["variant", "cases", "mean % of ideal", "paper %", "difference (pp)"],
                summary)

    # The same per taxonomy (the simulated one), with the range of each kernel's
    # slowdown beside the other (where the CSV has them): where a variant's loss sits.
    def span(vals: list[float]) -> str:
        return f"{min(vals):.3f}-{max(vals):.3f}" if vals else ""

    per_taxonomy = []
    for v in present:
        for tax in ("G-long", "GC-equal", "C-long"):
            members = [r for k, r in by.items() if k[2] == v and r["taxonomy"] == tax]
            if not members:
                continue
            fr = [100 * float(r["fraction_of_ideal"]) for r in members]
            slow = {x: [float(r[x]) for r in members if r.get(x)] for x in ("gemm_slowdown", "collective_slowdown")}
            per_taxonomy.append([v, tax, str(len(members)), f"{sum(fr) / len(fr):.1f}", span(slow["gemm_slowdown"]),
                                 span(slow["collective_slowdown"])])
    write_table(args.output / "table2_taxonomy.md",
                ["variant", "taxonomy", "cases", "mean % of ideal", "GEMM slowdown", "collective slowdown"],
                per_taxonomy)


# --------------------------------------------------------------------------- explain


def gemm_tiles(gemm: str, tile: tuple[int, int]) -> int:
    """WGs of a GEMM named like "mb1: 4096 x 57344 x 8192" (M x N x K)."""
    try:
        m, n, _ = (int(x) for x in gemm.split(":")[-1].split("x"))
    except ValueError:
        fail(f"cannot read M x N x K from the gemm column {gemm!r}")
    return -(-m // tile[0]) * -(-n // tile[1])


def list_schedule(tiles: int, tau: float, cu_free: list[float]) -> tuple[float, float]:
    """(end of the last tile, dispatch time of the last tile): each tile to the CU that
    frees first (heap of CU free times)."""
    import heapq

    free = list(cu_free)
    heapq.heapify(free)
    end = last_dispatch = 0.0
    for _ in range(tiles):
        t = heapq.heappop(free)
        last_dispatch = t
        end = max(end, t + tau)
        heapq.heappush(free, t + tau)
    return end, last_dispatch


def predicted_time(row: dict[str, str], cus: int, tile: tuple[int, int], coll_cus: int) -> tuple[float, float]:
    """(predicted GEMM end, predicted C3 end) in us from CU sharing and waves alone."""
    tiles = gemm_tiles(row["gemm"], tile)
    ig = float(row["isolated_gemm_ps"]) / 1e6
    ic = float(row["isolated_collective_ps"]) / 1e6
    tau = ig / -(-tiles // cus)
    v = variant(row)
    if v == "c3_rp":
        held = int(row["comm_cus"])
        g, _ = list_schedule(tiles, tau, [0.0] * (cus - held))
        return g, max(g, ic)
    if v == "c3_sp":
        g, _ = list_schedule(tiles, tau, [0.0] * (cus - coll_cus) + [ic] * coll_cus)
        return g, max(g, ic)
    g, last = list_schedule(tiles, tau, [0.0] * cus)  # c3_base
    return g, max(g, last + ic)


def explain(args: argparse.Namespace) -> None:
    needed = ["configuration", "preset", "gemm", "collective", "order", "comm_cus", "isolated_gemm_ps",
              "isolated_collective_ps", "gemm_ps", "time_ps", "gemm_slowdown", "collective_slowdown",
              "fraction_of_ideal", "gemm_dram_read_bytes", "collective_dram_read_bytes",
              "collective_dram_write_bytes", "gemm_dram_write_bytes"]
    rows = [r for r in read_ok_rows([Path(p) for p in args.csv], needed) if r["configuration"] == "c3"]
    if not rows:
        fail("no ok c3 rows (explain covers the CU-based configurations)")
    try:
        tile = tuple(int(x) for x in args.tile.split("x"))
        assert len(tile) == 2 and min(tile) > 0
    except (ValueError, AssertionError):
        fail(f"--tile: expected MxN, e.g. 256x256, got {args.tile!r}")
    lines = []
    residuals: dict[str, list[float]] = defaultdict(list)
    for r in rows:
        ig = float(r["isolated_gemm_ps"]) / 1e6
        g_pred, t_pred = predicted_time(r, args.cus, tile, args.collective_cus)
        g, t = float(r["gemm_ps"]) / 1e6, float(r["time_ps"]) / 1e6
        tiles = gemm_tiles(r["gemm"], tile)
        # DRAM bandwidth both kernels drew over the C3 time (GPU 0), against which the
        # memory system's part can be read.
        dram = sum(float(r[c]) for c in ("gemm_dram_read_bytes", "gemm_dram_write_bytes", "collective_dram_read_bytes",
                                         "collective_dram_write_bytes"))
        v = variant(r)
        residuals[v].append(100 * (t - t_pred) / ig)
        lines.append([case_of(r), r["collective"], v, f"{tiles / args.cus:.2f}", f"{ig:.0f}",
                      f"{float(r['isolated_collective_ps']) / 1e6:.0f}", f"{g_pred:.0f}", f"{g:.0f}",
                      f"{t_pred:.0f}", f"{t:.0f}", f"{100 * (t - t_pred) / ig:+.1f}",
                      f"{float(r['collective_slowdown']):.3f}", f"{dram / (t * 1e-6) / 1e12:.2f}",
                      f"{100 * float(r['fraction_of_ideal']):.0f}"])
    header = ["case", "collective", "variant", "GEMM waves", "GEMM alone (us)", "collective alone (us)",
              "GEMM predicted (us)", "GEMM simulated (us)", "C3 predicted (us)", "C3 simulated (us)",
              "residual (% of GEMM alone)", "collective slowdown", "DRAM TB/s (both kernels)", "% of ideal"]
    write_table(args.output / "explain.md", header, lines)
    write_table(args.output / "explain_summary.md", ["variant", "rows", "mean residual (% of GEMM alone)", "max |residual|"],
                [[v, str(len(x)), f"{sum(x) / len(x):+.1f}", f"{max(abs(y) for y in x):.1f}"]
                 for v, x in residuals.items()])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="figure", required=True)
    p5 = sub.add_parser("fig5")
    p5.add_argument("--gemm", required=True)
    p5.add_argument("--collective", required=True)
    p9 = sub.add_parser("fig9")
    p9.add_argument("csv", nargs="+")
    pt = sub.add_parser("table2")
    pt.add_argument("csv", nargs="+")
    pe = sub.add_parser("explain")
    pe.add_argument("csv", nargs="+")
    pe.add_argument("--cus", type=int, default=304, help="the GPU's CUs (MI300X: 304)")
    pe.add_argument("--tile", default="256x256", help="the GEMM kernel's tile, M x N (MI300X: 256x256)")
    pe.add_argument("--collective-cus", type=int, default=64,
                    help="CUs the CU collective holds when launched first (MI300X: 64 channels, one per CU)")
    for p in (p5, p9, pt, pe):
        p.add_argument("-o", "--output", type=Path, required=True)
    args = parser.parse_args()
    args.output.mkdir(parents=True, exist_ok=True)
    {"fig5": fig5, "fig9": fig9, "table2": table2, "explain": explain}[args.figure](args)


if __name__ == "__main__":
    main()
