"""What the plot and report scripts of tools/ share: one error convention, CSV reading,
matplotlib without a display, markdown tables, and the simulator's own names.

Every script here follows one contract (tests/*_test.sh hold it): results on stdout and
in files, notes on stderr as `SCRIPT: ...`, and bad input as one line
`SCRIPT: error: ...` on stderr with exit status 2 and nothing half-written.

The simulator's names (configurations, workload kinds, presets) come from
`t3sim list --json`, not from copies in the scripts: `t3sim_listing()` runs the binary
named by $T3SIM, else build/t3sim of this checkout.
"""

from __future__ import annotations

import csv
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Iterable, NoReturn

MIB = 1024 * 1024
REPO = Path(__file__).resolve().parent.parent


def program() -> str:
    """The running script's name, the prefix of its messages (plot_c3, t3_report, ...)."""
    return Path(sys.argv[0]).stem or "t3sim-tool"


def fail(message: str) -> NoReturn:
    """Bad input: one line on stderr, exit 2."""
    print(f"{program()}: error: {message}", file=sys.stderr)
    sys.exit(2)


def note(message: str) -> None:
    print(f"{program()}: {message}", file=sys.stderr)


def read_rows(path: Path | str, needed: Iterable[str] = ()) -> tuple[list[str], list[dict[str, str]]]:
    """A CSV's header and rows; lines starting with # (a measurement's conditions) are
    skipped. A missing file or a missing `needed` column fails."""
    path = Path(path)
    try:
        with path.open(newline="") as f:
            reader = csv.DictReader(line for line in f if not line.startswith("#"))
            rows = list(reader)
            header = list(reader.fieldnames or [])
    except OSError as e:
        fail(f"cannot read {path}: {e.strerror}")
    missing = [c for c in needed if c not in header]
    if missing:
        fail(f"{path}: missing column(s) {', '.join(missing)}")
    return header, rows


def ok_rows(rows: list[dict[str, str]], what: str = "") -> list[dict[str, str]]:
    """The rows a sweep finished (status ok); the others are counted on stderr. None: fails."""
    ok = [r for r in rows if r.get("status") == "ok"]
    if not ok:
        fail(f"{what + ': ' if what else ''}no ok rows")
    if len(ok) < len(rows):
        note(f"{len(rows) - len(ok)} row(s) not ok, left out")
    return ok


def parameter_columns(header: list[str]) -> list[str]:
    """A sweep CSV's parameter columns: those between `point` and `status`."""
    try:
        return header[header.index("point") + 1 : header.index("status")]
    except ValueError:
        return []


def pyplot():
    """matplotlib.pyplot on the Agg backend; fails (exit 2) when matplotlib is missing."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        fail("matplotlib is not installed (Debian: apt-get install python3-matplotlib)")
    return plt


def markdown_table(header: list[str], lines: list[list[str]]) -> str:
    text = "| " + " | ".join(header) + " |\n| " + " | ".join("---" for _ in header) + " |\n"
    return text + "".join("| " + " | ".join(line) + " |\n" for line in lines)


def write_table(path: Path, header: list[str], lines: list[list[str]]) -> None:
    """A markdown table into `path` and onto stdout."""
    text = markdown_table(header, lines)
    path.write_text(text)
    sys.stdout.write(text)


def size_label(nbytes: float) -> str:
    """A per-GPU size as the tables print it: MiB from 1 MiB, else KiB."""
    mib = nbytes / MIB
    return f"{mib:g} MiB" if mib >= 1 else f"{nbytes / 1024:g} KiB"


def t3sim_binary() -> Path:
    return Path(os.environ.get("T3SIM") or REPO / "build" / "t3sim")


def t3sim_listing() -> dict:
    """`t3sim list --json`: the registered configurations per workload kind, the kinds,
    arbiters, schedulers, replacement policies, topologies and presets."""
    binary = t3sim_binary()
    try:
        out = subprocess.run([str(binary), "list", "--json"], capture_output=True, text=True, check=True).stdout
    except FileNotFoundError:
        fail(f"{binary}: no such program (build t3sim, or name it in $T3SIM)")
    except subprocess.CalledProcessError as e:
        fail(f"`{binary} list --json` failed: {e.stderr.strip() or e.returncode}")
    return json.loads(out)


def configuration_names(family: str) -> list[str]:
    """The names of one family of configurations (`gemm`: the sub-layer's, `c3`,
    `overlap`), as registered."""
    families = t3sim_listing()["configurations"]
    if family not in families:
        fail(f"t3sim lists no '{family}' configurations (it has {', '.join(sorted(families))})")
    return [c["name"] for c in families[family]]
