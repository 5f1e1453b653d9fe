#!/usr/bin/env python3
"""Summarize a `t3sim sweep` CSV of the T3 reproduction: tables, geomeans, Figures 16 and 18.

Usage:
    tools/t3_report.py SWEEP_CSV -o OUTDIR

Input: the CSV written by `t3sim sweep` (one row per sweep point). Columns used:
    workload.preset            the case (e.g. megagpt2.fc2.tp8, tnlg.op.tp16, gpt3.fc1.tp32)
    run.config / configuration the configuration (run.config wins; `configuration` is the
                               fallback): sequential, and any others, as the CSV names them
    status, error              `ok` or an error; rows not ok are listed under "Failed points"
                               and left out of every number
    time_ps, gemm_ps, rs_ps, ag_ps           integer picoseconds
    {gemm,rs,ag}_dram_{read,write,update}_bytes  DRAM bytes per GPU
Other columns are ignored. A case without an ok `sequential` row is skipped with a note;
when a (case, configuration) pair has several ok rows the first one is used (noted).

Outputs (all in OUTDIR, written to temporary files and renamed at the end):
    t3_results.md    tables per case, geomeans, the paper's targets next to the measured values
    t3_summary.csv   the same numbers; `kind` is `case` (one row per case), `mean` or `max`
                     (one row per case group). In `mean` rows speedups and the RS read
                     reduction are geometric means, DRAM reductions arithmetic means. An
                     empty cell is a number that is not available (n/a).
    fig16_speedup.png  T3 Figure 16: speedup over sequential per case (and geomean) for
                       every configuration in the CSV besides sequential
    fig18_dram.png     T3 Figure 18: DRAM bytes per GPU of sequential and t3-mca per case,
                       stacked by phase and kind, normalized to sequential's total

Definitions:
    speedup            seq_total / cfg_total, printed as "1.33x (+33%)"
    exposed comm       cfg_total - sequential's GEMM time: the part of the run not hidden
                       behind a GEMM as long as sequential's (t3 and t3-mca)
    ideal fraction     (seq/cfg - 1) / (seq/ideal_overlap - 1): the share of the ideal
                       overlap's speedup that cfg realizes (t3 and t3-mca)
    DRAM bytes         sum of the nine *_dram_*_bytes columns (per GPU); reduction =
                       1 - cfg / seq, in percent
    RS read reduction  seq rs_dram_read_bytes / t3-mca rs_dram_read_bytes (a factor)
    case groups        "Mega-GPT-2 / T-NLG": presets starting with megagpt2. or tnlg.;
                       "TP=32": presets starting with gpt3., palm. or mtnlg.; "all": every case

Exit codes: 0 success; 2 bad input (missing file, missing columns, no ok rows, no case
with an ok sequential row): one line on stderr and nothing written to OUTDIR.
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import statistics
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from t3sim_tools import pyplot

SEQUENTIAL = "sequential"  # the baseline every speedup is over (T3 §5.3)
# The other configurations come from the CSV (build_cases), so a configuration added
# to the simulator shows up in the tables and plots without touching this script:
# the ideal ones (names starting with "ideal") first, then the others, each by name.
OTHER_CONFIGS: list[str] = []
ALL_CONFIGS: list[str] = [SEQUENTIAL]
OVERLAPPED: list[str] = []  # the non-ideal ones: with exposed-time and ideal-fraction columns


def set_configurations(names: set[str]) -> None:
    """Fills OTHER_CONFIGS, ALL_CONFIGS and OVERLAPPED from the configurations in a sweep."""
    others = sorted(names - {SEQUENTIAL}, key=lambda n: (not n.startswith("ideal"), n))
    OTHER_CONFIGS[:] = others
    ALL_CONFIGS[:] = [SEQUENTIAL] + others
    OVERLAPPED[:] = [n for n in others if not n.startswith("ideal")]
PHASES = ["gemm", "rs", "ag"]
KINDS = ["read", "write", "update"]
BYTE_COLUMNS = [f"{p}_dram_{k}_bytes" for p in PHASES for k in KINDS]
TIME_COLUMNS = ["time_ps", "gemm_ps", "rs_ps", "ag_ps"]
REQUIRED_COLUMNS = ["workload.preset", "status"] + TIME_COLUMNS + BYTE_COLUMNS

GROUPS = [  # (key, title, preset prefixes; None = every case)
    ("megagpt2-tnlg", "Mega-GPT-2 / T-NLG", ("megagpt2.", "tnlg.")),
    ("tp32", "TP=32 (GPT-3, PaLM, MT-NLG)", ("gpt3.", "palm.", "mtnlg.")),
    ("all", "all cases", None),
]

PS_PER_MS = 1e9
BYTES_PER_MB = 1e6


class InputError(Exception):
    """Bad input: reported as one line on stderr, exit code 2."""


# --- Reading ----------------------------------------------------------------------------


@dataclass
class Point:
    """One ok sweep point."""

    index: str
    case: str
    config: str
    num_gpus: str
    times: dict[str, int]  # TIME_COLUMNS -> ps
    bytes: dict[str, int] | None  # BYTE_COLUMNS -> bytes; None when a cell is empty

    def total_bytes(self) -> int | None:
        return None if self.bytes is None else sum(self.bytes.values())


@dataclass
class Sweep:
    points: list[Point] = field(default_factory=list)
    failed: list[dict[str, str]] = field(default_factory=list)  # point, case, config, status, error
    notes: list[str] = field(default_factory=list)
    rows: int = 0


def parse_int(text: str | None) -> int | None:
    try:
        return int(text.strip())
    except (AttributeError, ValueError):
        try:
            value = float(text.strip())
        except (AttributeError, ValueError):
            return None
        return int(value) if math.isfinite(value) else None


def config_of(row: dict[str, str]) -> str:
    return (row.get("run.config") or row.get("configuration") or "").strip()


def check_columns(header: list[str]) -> None:
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if "run.config" not in header and "configuration" not in header:
        missing.append("run.config (or configuration)")
    if missing:
        raise InputError(f"missing column{'s' if len(missing) > 1 else ''}: {', '.join(missing)}")


def point_of(row: dict[str, str]) -> Point | str:
    """The row as a Point, or an error text when its numbers cannot be read."""
    times = {c: parse_int(row.get(c)) for c in TIME_COLUMNS}
    bad = [c for c, v in times.items() if v is None]
    if bad:
        return f"unreadable {', '.join(bad)}"
    values = {c: parse_int(row.get(c)) for c in BYTE_COLUMNS}
    return Point(index=row.get("point", ""), case=row["workload.preset"].strip(), config=config_of(row),
                 num_gpus=(row.get("num_gpus") or "").strip(), times=times,
                 bytes=None if any(v is None for v in values.values()) else values)


def read_sweep(path: Path) -> Sweep:
    try:
        with path.open(newline="") as f:
            reader = csv.DictReader(f)
            if not reader.fieldnames:
                raise InputError(f"{path}: empty file (no header line)")
            check_columns(reader.fieldnames)
            rows = list(reader)
    except OSError as e:
        raise InputError(f"cannot read '{path}': {e.strerror or e}") from None
    except csv.Error as e:
        raise InputError(f"{path}: not a CSV file: {e}") from None

    sweep = Sweep(rows=len(rows))
    for row in rows:
        status = (row.get("status") or "").strip()
        result = point_of(row) if status == "ok" else (row.get("error") or "").strip()
        if isinstance(result, Point):
            sweep.points.append(result)
            continue
        sweep.failed.append({"point": row.get("point", ""), "case": (row.get("workload.preset") or "").strip(),
                             "config": config_of(row), "status": status or "(empty)", "error": result})
    if not sweep.points:
        raise InputError(f"{path}: no ok rows ({sweep.rows} row{'s' if sweep.rows != 1 else ''} in all)")
    return sweep


# --- Per-case numbers -------------------------------------------------------------------


def ratio(num: float | None, den: float | None) -> float | None:
    if num is None or den is None or den == 0:
        return None
    return num / den


@dataclass
class Case:
    name: str
    num_gpus: str
    points: dict[str, Point]  # configuration -> point (sequential always present)

    @property
    def seq(self) -> Point:
        return self.points[SEQUENTIAL]

    def total_ms(self, config: str) -> float | None:
        p = self.points.get(config)
        return None if p is None else p.times["time_ps"] / PS_PER_MS

    def phase_ms(self, column: str) -> float:
        return self.seq.times[column] / PS_PER_MS

    def speedup(self, config: str) -> float | None:
        return ratio(self.total_ms(SEQUENTIAL), self.total_ms(config))

    def exposed_ms(self, config: str) -> float | None:
        total = self.total_ms(config)
        return None if total is None else total - self.phase_ms("gemm_ps")

    def ideal_fraction(self, config: str) -> float | None:
        s, ideal = self.speedup(config), self.speedup("ideal-overlap")
        return None if s is None or ideal is None else ratio(s - 1, ideal - 1)

    def dram_bytes(self, config: str) -> int | None:
        p = self.points.get(config)
        return None if p is None else p.total_bytes()

    def dram_reduction_pct(self, config: str) -> float | None:
        r = ratio(self.dram_bytes(config), self.dram_bytes(SEQUENTIAL))
        return None if r is None else (1 - r) * 100

    def rs_read_reduction(self) -> float | None:
        mca = self.points.get("t3-mca")
        if mca is None or mca.bytes is None or self.seq.bytes is None:
            return None
        return ratio(self.seq.bytes["rs_dram_read_bytes"], mca.bytes["rs_dram_read_bytes"])


def build_cases(sweep: Sweep) -> list[Case]:
    """Cases in order of first appearance; adds notes for duplicates, unknown configurations
    and cases without an ok sequential row."""
    set_configurations({p.config for p in sweep.points if p.config})
    by_case: dict[str, dict[str, Point]] = {}
    for p in sweep.points:
        configs = by_case.setdefault(p.case, {})
        if p.config in configs:
            sweep.notes.append(f"point {p.index} ({p.case}, {p.config}): duplicate, "
                               f"point {configs[p.config].index} used")
        else:
            configs[p.config] = p
    for f in sweep.failed:  # cases whose every point failed
        if f["case"]:
            by_case.setdefault(f["case"], {})
    cases = []
    for name, configs in by_case.items():
        if SEQUENTIAL not in configs:
            sweep.notes.append(f"case {name} skipped: no ok sequential row")
            continue
        cases.append(Case(name, configs[SEQUENTIAL].num_gpus, configs))
    return cases


# --- Aggregates ---------------------------------------------------------------------------


def geomean(values: list[float]) -> float | None:
    values = [v for v in values if v is not None and v > 0]
    return statistics.geometric_mean(values) if values else None


def mean(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return statistics.fmean(values) if values else None


def maximum(values: list[float]) -> float | None:
    values = [v for v in values if v is not None]
    return max(values) if values else None


def group_cases(cases: list[Case], prefixes: tuple[str, ...] | None) -> list[Case]:
    return [c for c in cases if prefixes is None or c.name.startswith(prefixes)]


@dataclass
class Aggregate:
    """Geomean / mean / max over a group of cases. Dicts are keyed by configuration."""

    key: str
    title: str
    cases: list[Case]
    geomean_speedup: dict[str, float | None]
    max_speedup: dict[str, float | None]
    counts: dict[str, int]  # cases with that configuration
    mean_dram_reduction: dict[str, float | None]
    max_dram_reduction: dict[str, float | None]
    geomean_rs_read_reduction: float | None
    max_rs_read_reduction: float | None


def aggregate(key: str, title: str, cases: list[Case]) -> Aggregate:
    speedups = {c: [x.speedup(c) for x in cases] for c in OTHER_CONFIGS}
    reductions = {c: [x.dram_reduction_pct(c) for x in cases] for c in OTHER_CONFIGS}
    rs = [x.rs_read_reduction() for x in cases]
    return Aggregate(
        key=key, title=title, cases=cases,
        geomean_speedup={c: geomean(v) for c, v in speedups.items()},
        max_speedup={c: maximum(v) for c, v in speedups.items()},
        counts={c: sum(v is not None for v in speedups[c]) for c in OTHER_CONFIGS},
        mean_dram_reduction={c: mean(v) for c, v in reductions.items()},
        max_dram_reduction={c: maximum(v) for c, v in reductions.items()},
        geomean_rs_read_reduction=geomean(rs), max_rs_read_reduction=maximum(rs))


def aggregates(cases: list[Case]) -> dict[str, Aggregate]:
    result = {}
    for key, title, prefixes in GROUPS:
        members = group_cases(cases, prefixes)
        if members:
            result[key] = aggregate(key, title, members)
    return result


# --- Formatting -------------------------------------------------------------------------

NA = "n/a"


def fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return NA if value is None else f"{value:{spec}}{suffix}"


def fmt_speedup(s: float | None) -> str:
    return NA if s is None else f"{s:.2f}x ({(s - 1) * 100:+.0f}%)"


def fmt_mb(b: int | None) -> str:
    return fmt(None if b is None else b / BYTES_PER_MB, ".1f")


def md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return lines + [""]


# --- Markdown report --------------------------------------------------------------------


def md_definitions() -> list[str]:
    return [
        "## Definitions", "",
        "* **speedup** = sequential total / configuration total (\"1.33x (+33%)\").",
        "* **exposed communication** (t3, t3-mca) = configuration total - sequential's GEMM time: "
        "the part of the run that is not hidden behind a GEMM as long as sequential's.",
        "* **share of ideal** = (seq/cfg - 1) / (seq/ideal-overlap - 1): the part of ideal-overlap's "
        "speedup that the configuration realizes.",
        "* **DRAM** = bytes per GPU summed over GEMM / RS / AG reads, writes and updates; "
        "reduction = 1 - cfg / sequential.",
        "* **RS read reduction** = sequential's RS DRAM reads / t3-mca's.",
        "* Times in ms, bytes in MB (10^6). n/a: the configuration is not in the sweep (or not ok).", "",
    ]


def md_sequential(cases: list[Case]) -> list[str]:
    rows = [[c.name, c.num_gpus, f"{c.total_ms(SEQUENTIAL):.4f}"] +
            [f"{c.phase_ms(col):.4f}" for col in ("gemm_ps", "rs_ps", "ag_ps")] for c in cases]
    return ["## Sequential", ""] + md_table(["case", "GPUs", "total ms", "GEMM ms", "RS ms", "AG ms"], rows)


def md_speedups(cases: list[Case]) -> list[str]:
    header = ["case", "sequential ms"]
    for cfg in OTHER_CONFIGS:
        header += [f"{cfg} ms", f"{cfg} speedup"]
    rows = []
    for c in cases:
        row = [c.name, f"{c.total_ms(SEQUENTIAL):.4f}"]
        for cfg in OTHER_CONFIGS:
            row += [fmt(c.total_ms(cfg), ".4f"), fmt_speedup(c.speedup(cfg))]
        rows.append(row)
    return ["## Speedup over sequential", ""] + md_table(header, rows)


def md_exposed(cases: list[Case]) -> list[str]:
    header = ["case", "sequential GEMM ms"]
    header += [f"{cfg} exposed ms" for cfg in OVERLAPPED] + [f"{cfg} share of ideal" for cfg in OVERLAPPED]
    rows = []
    for c in cases:
        row = [c.name, f"{c.phase_ms('gemm_ps'):.4f}"]
        row += [fmt(c.exposed_ms(cfg), ".4f") for cfg in OVERLAPPED]
        row += [fmt(None if c.ideal_fraction(cfg) is None else c.ideal_fraction(cfg) * 100, ".0f", "%")
                for cfg in OVERLAPPED]
        rows.append(row)
    return ["## Exposed communication and share of the ideal speedup", ""] + md_table(header, rows)


def md_dram(cases: list[Case]) -> list[str]:
    header = ["case", "sequential MB"] + [f"{cfg} MB (reduction)" for cfg in OTHER_CONFIGS]
    header.append("RS read reduction (t3-mca)")
    rows = []
    for c in cases:
        row = [c.name, fmt_mb(c.dram_bytes(SEQUENTIAL))]
        for cfg in OTHER_CONFIGS:
            red = c.dram_reduction_pct(cfg)
            row.append(fmt_mb(c.dram_bytes(cfg)) + ("" if red is None else f" ({red:.1f}%)"))
        row.append(fmt(c.rs_read_reduction(), ".2f", "x"))
        rows.append(row)
    return ["## DRAM bytes per GPU", ""] + md_table(header, rows)


def with_count(text: str, count: int, size: int) -> str:
    return text if count in (0, size) else f"{text} [{count} of {size}]"


def md_aggregate(agg: Aggregate) -> list[str]:
    n = len(agg.cases)
    rows = [
        ["geomean speedup"] + [with_count(fmt_speedup(agg.geomean_speedup[c]), agg.counts[c], n)
                               for c in OTHER_CONFIGS],
        ["max speedup"] + [fmt_speedup(agg.max_speedup[c]) for c in OTHER_CONFIGS],
        ["mean DRAM reduction"] + [fmt(agg.mean_dram_reduction[c], ".1f", "%") for c in OTHER_CONFIGS],
        ["max DRAM reduction"] + [fmt(agg.max_dram_reduction[c], ".1f", "%") for c in OTHER_CONFIGS],
    ]
    lines = [f"### {agg.title} ({n} case{'s' if n != 1 else ''})", ""]
    lines += md_table(["metric"] + OTHER_CONFIGS, rows)
    lines += [f"RS read reduction (t3-mca): geomean {fmt(agg.geomean_rs_read_reduction, '.2f', 'x')}, "
              f"max {fmt(agg.max_rs_read_reduction, '.2f', 'x')}", ""]
    return lines


@dataclass
class Target:
    metric: str
    paper: float  # percent, or a factor when unit == "x"
    measured: float | None  # same unit
    unit: str  # "%" or "x"


def pct(speedup: float | None) -> float | None:
    return None if speedup is None else (speedup - 1) * 100


def paper_targets(aggs: dict[str, Aggregate]) -> list[Target]:
    """T3 §6's headline numbers next to the measured ones (None when the group is absent)."""
    main, tp32 = aggs.get("megagpt2-tnlg"), aggs.get("tp32")

    def get(agg: Aggregate | None, fn):
        return None if agg is None else fn(agg)

    targets = [Target(f"geomean speedup {cfg} (Mega-GPT-2 / T-NLG)", paper,
                      get(main, lambda a, c=cfg: pct(a.geomean_speedup[c])), "%")
               for cfg, paper in (("ideal-overlap", 35), ("t3", 20), ("t3-mca", 30))]
    targets += [Target(f"max speedup {cfg} (Mega-GPT-2 / T-NLG)", paper,
                       get(main, lambda a, c=cfg: pct(a.max_speedup[c])), "%")
                for cfg, paper in (("ideal-overlap", 50), ("t3", 39), ("t3-mca", 47))]
    targets += [
        Target("mean DRAM reduction t3-mca (Mega-GPT-2 / T-NLG)", 22,
               get(main, lambda a: a.mean_dram_reduction["t3-mca"]), "%"),
        Target("max DRAM reduction t3-mca (Mega-GPT-2 / T-NLG)", 36,
               get(main, lambda a: a.max_dram_reduction["t3-mca"]), "%"),
        Target("RS DRAM reads reduction t3-mca, geomean (Mega-GPT-2 / T-NLG)", 2.4,
               get(main, lambda a: a.geomean_rs_read_reduction), "x"),
        Target("geomean speedup t3-mca (TP=32)", 29, get(tp32, lambda a: pct(a.geomean_speedup["t3-mca"])), "%"),
        Target("max speedup t3-mca (TP=32)", 35, get(tp32, lambda a: pct(a.max_speedup["t3-mca"])), "%"),
    ]
    return targets


def md_targets(aggs: dict[str, Aggregate]) -> list[str]:
    rows = []
    for t in paper_targets(aggs):
        if t.unit == "x":
            paper, measured = f"{t.paper:.1f}x", fmt(t.measured, ".2f", "x")
            diff = fmt(None if t.measured is None else t.measured - t.paper, "+.2f", "x")
        else:
            paper, measured = f"{t.paper:.0f}%", fmt(t.measured, ".1f", "%")
            diff = fmt(None if t.measured is None else t.measured - t.paper, "+.1f", " pp")
        rows.append([t.metric, paper, measured, diff])
    return ["## Paper targets (T3 §6)", "",
            "Speedups as percent over sequential; difference = measured - paper "
            "(percentage points; a factor for the RS reads).", ""] + \
        md_table(["metric", "paper", "measured", "difference"], rows)


def md_failed(sweep: Sweep) -> list[str]:
    lines = ["## Failed points", ""]
    if not sweep.failed:
        return lines + ["None.", ""]
    rows = [[f["point"], f["case"], f["config"], f["status"], f["error"].replace("|", "\\|")]
            for f in sweep.failed]
    return lines + md_table(["point", "case", "configuration", "status", "error"], rows)


def md_notes(sweep: Sweep) -> list[str]:
    if not sweep.notes:
        return []
    return ["## Notes", ""] + [f"* {n}" for n in sweep.notes] + [""]


def markdown(source: Path, sweep: Sweep, cases: list[Case], aggs: dict[str, Aggregate]) -> str:
    lines = ["# T3 reproduction: results", "",
             f"From `{source}`: {sweep.rows} points, {len(sweep.points)} ok, {len(sweep.failed)} failed; "
             f"{len(cases)} cases.", ""]
    lines += md_definitions() + md_sequential(cases) + md_speedups(cases) + md_exposed(cases) + md_dram(cases)
    lines += ["## Geomeans", ""]
    for agg in aggs.values():
        lines += md_aggregate(agg)
    lines += md_targets(aggs) + md_failed(sweep) + md_notes(sweep)
    return "\n".join(lines)


# --- Summary CSV ------------------------------------------------------------------------


def col(config: str) -> str:
    return config.replace("-", "_")


def summary_header() -> list[str]:
    header = ["kind", "case", "num_gpus", "sequential_ms", "sequential_gemm_ms", "sequential_rs_ms",
              "sequential_ag_ms"]
    header += [f"{col(c)}_{what}" for c in OTHER_CONFIGS for what in ("ms", "speedup")]
    header += [f"{col(c)}_exposed_ms" for c in OVERLAPPED] + [f"{col(c)}_ideal_fraction" for c in OVERLAPPED]
    header += [f"{col(c)}_dram_bytes" for c in ALL_CONFIGS]
    header += [f"{col(c)}_dram_reduction_pct" for c in OTHER_CONFIGS]
    return header + ["rs_read_reduction"]


def num(value: float | None, digits: int = 6) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def summary_case_row(c: Case) -> list[str]:
    row = ["case", c.name, c.num_gpus, num(c.total_ms(SEQUENTIAL))]
    row += [num(c.phase_ms(x)) for x in ("gemm_ps", "rs_ps", "ag_ps")]
    for cfg in OTHER_CONFIGS:
        row += [num(c.total_ms(cfg)), num(c.speedup(cfg), 4)]
    row += [num(c.exposed_ms(cfg)) for cfg in OVERLAPPED] + [num(c.ideal_fraction(cfg), 4) for cfg in OVERLAPPED]
    row += ["" if c.dram_bytes(cfg) is None else str(c.dram_bytes(cfg)) for cfg in ALL_CONFIGS]
    row += [num(c.dram_reduction_pct(cfg), 2) for cfg in OTHER_CONFIGS]
    return row + [num(c.rs_read_reduction(), 4)]


def summary_aggregate_rows(agg: Aggregate) -> list[list[str]]:
    blank_times = [""] * 4  # sequential ms and its split
    rows = []
    for kind, speedups, reductions, rs in (
            ("mean", agg.geomean_speedup, agg.mean_dram_reduction, agg.geomean_rs_read_reduction),
            ("max", agg.max_speedup, agg.max_dram_reduction, agg.max_rs_read_reduction)):
        row = [kind, agg.key, ""] + blank_times
        for cfg in OTHER_CONFIGS:
            row += ["", num(speedups[cfg], 4)]
        row += [""] * (2 * len(OVERLAPPED)) + [""] * len(ALL_CONFIGS)
        row += [num(reductions[cfg], 2) for cfg in OTHER_CONFIGS]
        rows.append(row + [num(rs, 4)])
    return rows


def write_summary_csv(path: Path, cases: list[Case], aggs: dict[str, Aggregate]) -> None:
    with path.open("w", newline="") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(summary_header())
        for c in cases:
            w.writerow(summary_case_row(c))
        for agg in aggs.values():
            w.writerows(summary_aggregate_rows(agg))


# --- Figures ------------------------------------------------------------------------------


def plot_speedup(path: Path, cases: list[Case], aggs: dict[str, Aggregate]) -> None:
    """T3 Figure 16: grouped bars of speedup over sequential, one group per case + geomean."""
    plt = pyplot()
    labels = [c.name for c in cases] + ["geomean"]
    overall = aggs["all"]
    width = 0.8 / len(OTHER_CONFIGS)
    fig, ax = plt.subplots(figsize=(max(8.0, 0.7 * len(labels) + 2), 4.5))
    for i, cfg in enumerate(OTHER_CONFIGS):
        values = [c.speedup(cfg) for c in cases] + [overall.geomean_speedup[cfg]]
        xs = [x + (i - (len(OTHER_CONFIGS) - 1) / 2) * width for x in range(len(labels))]
        ax.bar(xs, [math.nan if v is None else v for v in values], width, label=cfg)
    ax.axhline(1.0, color="black", linewidth=0.8)
    ax.set_xticks(range(len(labels)), labels, rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("speedup over sequential")
    ax.set_title("Speedup over sequential (T3 Figure 16)")
    ax.legend(ncol=len(OTHER_CONFIGS), fontsize=8, loc="upper left")
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120, format="png")
    plt.close(fig)


DRAM_SEGMENTS = [  # label, byte columns summed
    ("GEMM read", ["gemm_dram_read_bytes"]),
    ("GEMM write+update", ["gemm_dram_write_bytes", "gemm_dram_update_bytes"]),
    ("RS read", ["rs_dram_read_bytes"]),
    ("RS write+update", ["rs_dram_write_bytes", "rs_dram_update_bytes"]),
    ("AG read", ["ag_dram_read_bytes"]),
    ("AG write", ["ag_dram_write_bytes", "ag_dram_update_bytes"]),
]


def dram_segments(point: Point | None, norm: int) -> list[float]:
    if point is None or point.bytes is None or norm == 0:
        return [math.nan] * len(DRAM_SEGMENTS)
    return [sum(point.bytes[c] for c in cols) / norm for _, cols in DRAM_SEGMENTS]


def plot_dram(path: Path, cases: list[Case]) -> None:
    """T3 Figure 18: stacked DRAM bytes per GPU, sequential vs t3-mca, normalized to sequential."""
    plt = pyplot()
    from matplotlib.patches import Patch
    colors = plt.get_cmap("tab10").colors
    width = 0.38
    fig, ax = plt.subplots(figsize=(max(8.0, 0.8 * len(cases) + 2), 4.5))
    top = 1.0
    for offset, config, hatch in ((-width / 2, SEQUENTIAL, ""), (width / 2, "t3-mca", "//")):
        bottoms = [0.0] * len(cases)
        for k, (label, _) in enumerate(DRAM_SEGMENTS):
            heights = [dram_segments(c.points.get(config), c.dram_bytes(SEQUENTIAL) or 0)[k] for c in cases]
            ax.bar([x + offset for x in range(len(cases))], heights, width, bottom=bottoms, color=colors[k],
                   hatch=hatch, edgecolor="white", linewidth=0.3)
            bottoms = [b + (0 if math.isnan(h) else h) for b, h in zip(bottoms, heights)]
        top = max([top] + bottoms)
    handles = [Patch(color=colors[k], label=label) for k, (label, _) in enumerate(DRAM_SEGMENTS)]
    handles.append(Patch(facecolor="white", edgecolor="gray", hatch="//", label="t3-mca (right bar)"))
    ax.legend(handles=handles, fontsize=7, ncol=4, loc="upper left")
    ax.set_xticks(range(len(cases)), [c.name for c in cases], rotation=60, ha="right", fontsize=8)
    ax.set_ylabel("DRAM bytes per GPU / sequential")
    ax.set_title("DRAM traffic: sequential (left) vs t3-mca (right) (T3 Figure 18)")
    ax.set_ylim(0, top * 1.35)
    ax.grid(axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120, format="png")
    plt.close(fig)


# --- Main -----------------------------------------------------------------------------------


def current_umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def write_outputs(outdir: Path, source: Path, sweep: Sweep, cases: list[Case],
                  aggs: dict[str, Aggregate]) -> None:
    """Every output to a temporary file in OUTDIR first, renamed once all are written."""
    writers = {
        "t3_results.md": lambda p: p.write_text(markdown(source, sweep, cases, aggs)),
        "t3_summary.csv": lambda p: write_summary_csv(p, cases, aggs),
        "fig16_speedup.png": lambda p: plot_speedup(p, cases, aggs),
        "fig18_dram.png": lambda p: plot_dram(p, cases),
    }
    outdir.mkdir(parents=True, exist_ok=True)
    temps: dict[str, Path] = {}
    try:
        for name, write in writers.items():
            fd, tmp = tempfile.mkstemp(prefix=f".{name}.", suffix=".tmp", dir=outdir)
            os.close(fd)
            temps[name] = Path(tmp)
            write(temps[name])
        mode = 0o666 & ~current_umask()
        for name, tmp in temps.items():
            tmp.chmod(mode)  # mkstemp creates 0600
            os.replace(tmp, outdir / name)
    finally:
        for tmp in temps.values():
            tmp.unlink(missing_ok=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("csv", metavar="SWEEP_CSV", type=Path, help="CSV written by `t3sim sweep`")
    parser.add_argument("-o", "--outdir", metavar="OUTDIR", type=Path, required=True,
                        help="directory for t3_results.md, t3_summary.csv and the figures")
    args = parser.parse_args(argv)
    try:
        sweep = read_sweep(args.csv)
        cases = build_cases(sweep)
        if not cases:
            raise InputError(f"{args.csv}: no case has an ok sequential row")
    except InputError as e:
        print(f"t3_report: {e}", file=sys.stderr)
        return 2
    aggs = aggregates(cases)
    write_outputs(args.outdir, args.csv, sweep, cases, aggs)
    print(f"t3_report: {len(cases)} cases -> {args.outdir}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
