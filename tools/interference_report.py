#!/usr/bin/env python3
"""The model's H200 interference rows against the measured ones (issue 41).

    tools/interference_report.py MODEL.csv [--measured ../shared/calibration/h200/interference_2gpu.csv] [-o OUT.md]

MODEL.csv: `t3sim sweep configs/sweeps/h200_interference.yaml`. Joins each model row to
the measured row of the same GEMM (M x N x K), interferer and order, and prints one
markdown table: the GEMM's slowdown and the copy's bandwidth during and after the
GEMMs, measured and simulated, and their differences (the issue's bars: slowdown
within 0.08, bandwidth during within 25 %).
"""
import argparse
import csv
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_MEASURED = os.path.join(HERE, "..", "..", "shared", "calibration", "h200", "interference_2gpu.csv")


def first(text):
    """The first of a ;-separated list of rates, as a float, or None."""
    text = (text or "").strip()
    return float(text.split(";")[0]) if text else None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("model")
    ap.add_argument("--measured", default=DEFAULT_MEASURED)
    ap.add_argument("-o", "--output")
    a = ap.parse_args()
    measured = {}
    with open(a.measured) as f:
        for r in csv.DictReader(f):
            shape = f"{r['M']} x {r['N']} x {r['K']}"
            measured[(shape, r["interferer"].replace("_24", ""), r["order"])] = r
    lines = ["| GEMM | interferer | order | slowdown meas. | model | diff | copy during meas. GB/s | model | ratio |"
             " copy after meas. | model |",
             "|---|---|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    within = total = bw_within = bw_total = 0
    with open(a.model) as f:
        for r in csv.DictReader(f):
            if r.get("status", "ok") not in ("ok", ""):
                continue
            key = (r["gemm"], r["interferer"], r["order"])
            m = measured.get(key)
            if m is None:
                print(f"no measured row for {key}", file=sys.stderr)
                continue
            ms, mod = float(m["gemm_slowdown"]), float(r["gemm_slowdown"])
            total += 1
            within += abs(mod - ms) <= 0.08
            md, dd = first(m["copy_GBps_during"]), first(r["copy_GBps_during"])
            ratio = ""
            if md and dd:
                bw_total += 1
                bw_within += abs(dd - md) <= 0.25 * md
                ratio = f"{dd / md:.2f}"
            lines.append(f"| {r['gemm']} | {r['interferer']} | {r['order']} | {ms:.3f} | {mod:.3f} | {mod - ms:+.3f} | "
                         f"{md or '-'} | {f'{dd:.1f}' if dd else '-'} | {ratio} | {m['copy_GBps_after'] or '-'} | "
                         f"{r['copy_GBps_after'] or '-'} |")
    lines.append("")
    lines.append(f"GEMM slowdown within 0.08: {within} of {total}; copy bandwidth during within 25 %: "
                 f"{bw_within} of {bw_total}.")
    text = "\n".join(lines) + "\n"
    if a.output:
        with open(a.output, "w") as f:
            f.write(text)
    print(text, end="")


if __name__ == "__main__":
    main()
