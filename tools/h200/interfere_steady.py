#!/usr/bin/env python3
"""The GEMM's slowdown beside a copy stream at a settled clock (issue 41's steady state, measured apart from order).

interfere.py (../shared/calibration/h200/) and interfere_trace.py divide GEMMs timed during the
copies by a baseline timed in a separate series just before, after an idle gap. On the H200 the
SM clock climbs back during such a gap and falls to the power cap's level over the first tens of
milliseconds of load (results/h200-measurements/README.md point 14), so the GEMMs timed first run
faster than the steady ones: copies first, the GEMMs beside the copies are the fast ones and the
slowdown reads low; GEMMs first, the baseline's alone GEMMs are and it reads high (point 19: the
comm-first and gemm-first medians of one family differ by 0.1-0.17).

Here one unbroken stream of GEMMs runs for PRE_MS alone, then beside a stream of 64 MiB copies
released by an event after the last PRE GEMM, then alone again until the stream ends; the copies
are the interferers of interfere.py (same copy kernel, buffers and sizes). An event after every
8th GEMM times chunks; the slowdown is the mean chunk wholly inside the copies' span over the
mean chunk wholly outside it (the first WARM_CHUNKS skipped), so both sides run at the clock the
load settles to. Also recorded: each side's mean apart (before, after), the copies' rate inside
the span (first copy's end to last copy's end), and with CLOCKS=1 the mean SM clock of GPU 0
(nvidia-smi every 10 ms, read only) before, inside and after the span.

usage: [CLOCKS=1] [REPS=3] [ONLY=ce_local,sm_local_24] [SHAPES=gpt3.op.tp32,...] interfere_steady.py OUTDIR
(ce_peer_* and sm_push_24 need two GPUs; they are offered when two are visible.)
"""
import os, sys, time, csv, subprocess, datetime
from interfere_common import torch, d0, ndev, CH, INTERFERERS  # sets NVLink multicast off first

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
REPS = int(os.environ.get("REPS", "3"))
CHUNK = 8            # GEMMs per timing event
WARM_CHUNKS = 8      # chunks at the stream's start left out of the baseline (the clock settling)
PRE_MS = 120.0       # GEMMs alone before the copies are released
MAX_COPIES = 300     # each copy has an event after it: 600 entries of CUDA's ~1,024-entry launch queue
COPY_ALONE_MS = 30.0  # the copies' span at their alone rate (beside the GEMMs: 1.5-7x that)
SLOW_GUESS = 10.0    # the GEMM stream after the release covers this many times the copies' alone span
SHAPES = [("megagpt2.op.tp8", 16384, 3072, 384), ("tnlg.fc2.tp8", 8192, 4256, 2128),
          ("gpt3.op.tp32", 2048, 12288, 384), ("palm.fc2.tp32", 2048, 18432, 2304)]
WANT = [x for x in os.environ.get("SHAPES", "").split(",") if x]
SHAPES = [s for s in SHAPES if not WANT or s[0] in WANT]
ONLY = [x for x in os.environ.get("ONLY", "").split(",") if x]
DRIVER = os.popen("nvidia-smi --query-gpu=driver_version --format=csv,noheader").read().split()[0]
CLOCKS = os.environ.get("CLOCKS", "0") == "1"
smi = None
if CLOCKS:
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,index,clocks.sm,power.draw", "--format=csv,noheader",
                            "-lms", "10"], stdout=open(os.path.join(out, "interfere_steady_clocks.csv"), "w"))
    time.sleep(1.0)
Ev = lambda: torch.cuda.Event(enable_timing=True)
mean = lambda xs: sum(xs) / len(xs) if xs else None
rows = []
for name, M, N, K in SHAPES:
    A = torch.randn(M, K, dtype=torch.float16, device=d0)
    W = torch.randn(N, K, dtype=torch.float16, device=d0)
    C = torch.empty(M, N, dtype=torch.float16, device=d0)
    Wt = W.t()
    gs = torch.cuda.Stream(d0)
    t0 = time.time()
    while time.time() - t0 < 1.0:
        for _ in range(20): torch.mm(A, Wt, out=C)
        torch.cuda.synchronize(d0)
    e0, e1 = Ev(), Ev()
    with torch.cuda.stream(gs):
        e0.record(); [torch.mm(A, Wt, out=C) for _ in range(20)]; e1.record()
    torch.cuda.synchronize(d0)
    t_g = e0.elapsed_time(e1) / 20
    for iname, parts in INTERFERERS.items():
        if ONLY and iname not in ONLY:
            continue
        streams = [torch.cuda.Stream(torch.device(f"cuda:{dev}")) for dev, _ in parts]
        for rep in range(REPS):
            for d in range(ndev): torch.cuda.synchronize(d)
            ea, eb = Ev(), Ev()
            with torch.cuda.device(parts[0][0]):
                ea.record(streams[0]); parts[0][1](streams[0]); eb.record(streams[0])
                torch.cuda.synchronize(parts[0][0])
            t_copy = ea.elapsed_time(eb)
            n_i = max(8, min(MAX_COPIES, int(COPY_ALONE_MS / max(t_copy, 1e-3))))
            n_pre = CHUNK * int(PRE_MS / t_g / CHUNK)
            n_post = CHUNK * (int(SLOW_GUESS * n_i * t_copy / t_g / CHUNK) + 4)
            # reference events recorded while every GPU is idle place GPU 1's events on GPU 0's clock
            for d in range(ndev): torch.cuda.synchronize(d)
            ref = []
            for d in range(ndev):
                with torch.cuda.device(d):
                    e = Ev(); e.record(torch.cuda.current_stream(d)); ref.append(e)
            for d in range(ndev): torch.cuda.synchronize(d)
            g0, release = Ev(), Ev()
            gev, cevs = [], []
            with torch.cuda.stream(gs):
                g0.record()
                for i in range(n_pre):
                    torch.mm(A, Wt, out=C)
                    if (i + 1) % CHUNK == 0:
                        e = Ev(); e.record(); gev.append(e)
                release.record()
            for (dev, fn), s in zip(parts, streams):
                with torch.cuda.device(dev):
                    s.wait_event(release)
                    evs = []
                    for _ in range(n_i):
                        fn(s); e = Ev(); e.record(s); evs.append(e)
                    cevs.append((dev, evs))
            with torch.cuda.stream(gs):
                for i in range(n_post):
                    torch.mm(A, Wt, out=C)
                    if (i + 1) % CHUNK == 0:
                        e = Ev(); e.record(); gev.append(e)
            for d in range(ndev): torch.cuda.synchronize(d)
            win_end = time.time()
            win = g0.elapsed_time(gev[-1])
            g0_at = ref[0].elapsed_time(g0)
            c_start = g0.elapsed_time(release)
            ends, rates = [], []
            for dev, evs in cevs:
                at = [ref[dev].elapsed_time(e) - g0_at for e in evs]  # ms from g0
                ends.append(at[-1])
                if dev == 0 and len(at) >= 3:  # as interfere.py: GPU 0's streams' rate
                    rates.append((len(at) - 1) * CH / ((at[-1] - at[0]) * 1e-3) / 1e9)
            c_end = ends[0]
            bounds = [0.0] + [g0.elapsed_time(e) for e in gev]
            inside, before, after = [], [], []
            for k, (a, b) in enumerate(zip(bounds, bounds[1:])):
                if a >= c_start and b <= c_end: inside.append(b - a)
                elif b <= c_start and k >= WARM_CHUNKS: before.append(b - a)
                elif a >= c_end: after.append(b - a)
            alone = mean(before + after)
            r = dict(gemm=name, M=M, N=N, K=K, interferer=iname, rep=rep, gemm_probe_ms=round(t_g, 5),
                     gemm_alone_ms=round(alone / CHUNK, 5) if alone else "",
                     gemm_beside_ms=round(mean(inside) / CHUNK, 5) if inside else "",
                     slowdown=round(mean(inside) / alone, 4) if inside and alone else "",
                     slowdown_vs_before=round(mean(inside) / mean(before), 4) if inside and before else "",
                     slowdown_vs_after=round(mean(inside) / mean(after), 4) if inside and after else "",
                     chunks_before=len(before), chunks_inside=len(inside), chunks_after=len(after),
                     n_copy=n_i, first_copy_ms=round(t_copy, 4), copy_GBps_during=";".join(f"{x:.1f}" for x in rates),
                     copy_start_ms=round(c_start, 3), copy_end_ms=round(c_end, 3), window_ms=round(win, 3))
            w0 = win_end - win * 1e-3
            r["_at"] = dict(before=(w0 + bounds[min(WARM_CHUNKS, len(bounds) - 1)] * 1e-3, w0 + c_start * 1e-3),
                            inside=(w0 + c_start * 1e-3, w0 + c_end * 1e-3), after=(w0 + c_end * 1e-3, win_end))
            rows.append(r)
            print({k: v for k, v in r.items() if k != "_at"}, flush=True)
if smi is not None:
    time.sleep(0.5)
    smi.terminate(); smi.wait()
    samples = []  # (unix time, MHz) of GPU 0
    for line in open(os.path.join(out, "interfere_steady_clocks.csv")):
        f = [x.strip() for x in line.split(",")]
        if len(f) < 4 or f[1] != "0":
            continue
        samples.append((datetime.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").timestamp(), float(f[2].split()[0])))
for r in rows:
    at = r.pop("_at")
    if smi is not None:
        for side in ("before", "inside", "after"):
            a, b = at[side]
            v = [mhz for t, mhz in samples if a <= t <= b]
            r[f"clock_{side}_mhz"] = round(mean(v)) if v else ""
with open(os.path.join(out, "interfere_steady.csv"), "w", newline="") as f:
    f.write(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {ndev} x {torch.cuda.get_device_name(0)}, "
            f"torch {torch.__version__}, driver {DRIVER}\n")
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    w.writeheader()
    w.writerows(rows)
print("done", len(rows))
