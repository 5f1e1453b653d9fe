#!/usr/bin/env python3
"""interfere.py's one-GPU rows again, with a timeline: how much of the GEMM window the copies covered.

../shared/calibration/h200/interfere.py (the issue 41 rows, interference_2gpu.csv) sizes its
stream of 64 MiB copies from one copy timed alone, queues the copies and the GEMMs from the
host in one order or the other, and divides the GEMMs' mean time by a baseline taken just
before. This script does exactly that (same shapes, buffers, copy kernel, counts and launch
order) for the interferers one GPU can run (ce_local, sm_local_24), and also records:

  * an event after every 8th GEMM, so the GEMMs that ran wholly inside the copies' span
    and those that ran wholly outside it are timed apart (slowdown_inside, _outside);
  * the copies' span on the GEMM window's clock (copy_start_ms, copy_end_ms, from g0) and
    the share of the window it covered (coverage; a copy stream of GPU 1 is placed on
    GPU 0's clock through a pair of events recorded on both GPUs while both are idle,
    good to a few microseconds; with two streams, the span of the first);
  * the host's time to queue the copies and the GEMMs (host_copy_launch_us and
    host_gemm_launch_us, per operation), which sets where the overlap begins.

  * with CLOCKS=1, the SM clock: nvidia-smi samples every GPU's SM clock and power every
    10 ms (read only) into OUTDIR/interfere_trace_clocks.csv, and each row gets the
    mean SM clock of GPU 0 over its baseline series (clock_alone_mhz), its window
    (clock_window_mhz), and the window's parts inside and outside the copies' span
    (clock_inside_mhz, clock_outside_mhz); the windows are placed on the host's clock
    by the host time at the synchronize that ends them (a few tens of us late).

Each (shape, interferer, order) runs REPS times. usage: [CLOCKS=1] interfere_trace.py OUTDIR
"""
import os, sys, time, csv
from interfere_common import torch, d0, ndev, CH, INTERFERERS  # sets NVLink multicast off first
import subprocess, datetime

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
REPS = int(os.environ.get("REPS", "2"))
CHUNK = 8  # GEMMs per timing event
SHAPES = [("megagpt2.op.tp8", 16384, 3072, 384), ("tnlg.fc2.tp8", 8192, 4256, 2128),
          ("gpt3.op.tp32", 2048, 12288, 384), ("palm.fc2.tp32", 2048, 18432, 2304)]
DRIVER = os.popen("nvidia-smi --query-gpu=driver_version --format=csv,noheader").read().split()[0]
ONLY = [x for x in os.environ.get("ONLY", "").split(",") if x]
CLOCKS = os.environ.get("CLOCKS", "0") == "1"
smi = None
if CLOCKS:
    smi = subprocess.Popen(["nvidia-smi", "--query-gpu=timestamp,index,clocks.sm,power.draw", "--format=csv,noheader",
                            "-lms", "10"], stdout=open(os.path.join(out, "interfere_trace_clocks.csv"), "w"))
    time.sleep(1.0)
Ev = lambda: torch.cuda.Event(enable_timing=True)
rows = []
torch.backends.cuda.matmul.allow_fp16_reduced_precision_reduction = True
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
    n_g = max(20, int(150.0 / t_g))

    def baseline():
        b0, b1 = Ev(), Ev()
        torch.cuda.synchronize(d0)
        with torch.cuda.stream(gs):
            b0.record(); [torch.mm(A, Wt, out=C) for _ in range(n_g)]; b1.record()
        torch.cuda.synchronize(d0)
        end = time.time()
        span = b0.elapsed_time(b1)
        return span / n_g, (end - span * 1e-3, end)

    for iname, parts in INTERFERERS.items():
        if ONLY and iname not in ONLY:
            continue
        for order in ("comm_first", "gemm_first"):
            for rep in range(REPS):
                t_g, base_at = baseline()
                streams = [torch.cuda.Stream(torch.device(f"cuda:{dev}")) for dev, _ in parts]
                for d in range(ndev): torch.cuda.synchronize(d)
                ea, eb = Ev(), Ev()
                with torch.cuda.device(parts[0][0]):
                    ea.record(streams[0]); parts[0][1](streams[0]); eb.record(streams[0])
                    torch.cuda.synchronize(parts[0][0])
                t_copy = ea.elapsed_time(eb)
                n_i = int(1.6 * n_g * t_g / max(t_copy, 1e-3)) + 4
                # one reference event per GPU, recorded while both are idle: GPU 1's events
                # are placed on GPU 0's clock through them
                for d in range(ndev): torch.cuda.synchronize(d)
                ref = []
                for d in range(ndev):
                    with torch.cuda.device(d):
                        e = Ev(); e.record(torch.cuda.current_stream(d)); ref.append(e)
                for d in range(ndev): torch.cuda.synchronize(d)
                g0, g1 = Ev(), Ev()
                gev = []
                cevs = []
                host = {}

                def launch_gemms():
                    h = time.perf_counter()
                    with torch.cuda.stream(gs):
                        g0.record()
                        for i in range(n_g):
                            torch.mm(A, Wt, out=C)
                            if (i + 1) % CHUNK == 0:
                                e = Ev(); e.record(); gev.append(e)
                        g1.record()
                    host["gemm"] = (time.perf_counter() - h) / n_g * 1e6

                def launch_copies():
                    h = time.perf_counter()
                    for (dev, fn), s in zip(parts, streams):
                        with torch.cuda.device(dev):
                            evs = []
                            st0 = Ev(); st0.record(s); evs.append(st0)
                            for _ in range(n_i):
                                fn(s); e = Ev(); e.record(s); evs.append(e)
                            cevs.append((dev, evs))
                    host["copy"] = (time.perf_counter() - h) / (n_i * len(parts)) * 1e6

                if order == "gemm_first":
                    launch_gemms(); launch_copies()
                else:
                    launch_copies(); launch_gemms()
                for d in range(ndev): torch.cuda.synchronize(d)
                win_end = time.time()
                win = g0.elapsed_time(g1)
                t_gemm = win / n_g
                g0_at = ref[0].elapsed_time(g0)
                during, after, spans = [], [], []
                for dev, evs in cevs:
                    at = [ref[dev].elapsed_time(e) - g0_at for e in evs]  # ms from g0, index 0 = the stream's start
                    if dev == 0:  # as interfere.py: the rate inside the window, GPU 0's streams only
                        done = [i for i in range(1, len(evs)) if 0 <= at[i] <= win]
                        if len(done) >= 2:
                            during.append((len(done) - 1) * CH / ((at[done[-1]] - at[done[0]]) * 1e-3) / 1e9)
                    tail = [i for i in range(1, len(evs)) if dev != 0 or at[i] > win]
                    if len(tail) >= 3:
                        after.append((len(tail) - 1) * CH / ((at[tail[-1]] - at[tail[0]]) * 1e-3) / 1e9)
                    spans.append((at[0], at[-1]))
                c_start, c_end = spans[0]
                cover = max(0.0, min(win, c_end) - max(0.0, c_start)) / win
                # chunks of CHUNK GEMMs wholly inside / outside the (first) copy stream's span
                bounds = [0.0] + [g0.elapsed_time(e) for e in gev]
                inside, outside = [], []
                for a, b in zip(bounds, bounds[1:]):
                    (inside if (a >= c_start and b <= c_end) else outside if (b <= c_start or a >= c_end) else []).append(b - a)
                si = sum(inside) / (CHUNK * len(inside)) / t_g if inside else None
                so = sum(outside) / (CHUNK * len(outside)) / t_g if outside else None
                r = dict(gemm=name, M=M, N=N, K=K, interferer=iname, order=order, rep=rep,
                         gemm_alone_ms=round(t_g, 5), gemm_ms=round(t_gemm, 5), gemm_slowdown=round(t_gemm / t_g, 4),
                         n_gemm=n_g, n_copy=n_i, first_copy_ms=round(t_copy, 4),
                         copy_GBps_during=";".join(f"{x:.1f}" for x in during),
                         copy_GBps_after=";".join(f"{x:.1f}" for x in after),
                         window_ms=round(win, 3), copy_start_ms=round(c_start, 3), copy_end_ms=round(c_end, 3),
                         coverage=round(cover, 3), chunks_inside=len(inside), chunks_outside=len(outside),
                         slowdown_inside=round(si, 4) if si else "", slowdown_outside=round(so, 4) if so else "",
                         host_copy_launch_us=round(host["copy"], 2), host_gemm_launch_us=round(host["gemm"], 2))
                win_start = win_end - win * 1e-3
                r["_at"] = dict(alone=base_at, window=(win_start, win_end),
                                inside=(win_start + max(0.0, c_start) * 1e-3, win_start + min(win, c_end) * 1e-3),
                                spans=[(win_start, win_start + max(0.0, c_start) * 1e-3),
                                       (win_start + min(win, c_end) * 1e-3, win_end)])
                rows.append(r)
                print({k: v for k, v in r.items() if k != "_at"}, flush=True)
if smi is not None:
    time.sleep(0.5)
    smi.terminate(); smi.wait()
    samples = []  # (unix time, MHz) of GPU 0
    for line in open(os.path.join(out, "interfere_trace_clocks.csv")):
        f = [x.strip() for x in line.split(",")]
        if len(f) < 4 or f[1] != "0":
            continue
        at = datetime.datetime.strptime(f[0], "%Y/%m/%d %H:%M:%S.%f").timestamp()  # local time, as time.time()
        samples.append((at, float(f[2].split()[0])))

    def mean_clock(spans):
        v = [mhz for at, mhz in samples for a, b in spans if a <= at <= b]
        return round(sum(v) / len(v)) if v else ""

for r in rows:
    at = r.pop("_at")
    if smi is not None:
        r["clock_alone_mhz"] = mean_clock([at["alone"]])
        r["clock_window_mhz"] = mean_clock([at["window"]])
        r["clock_inside_mhz"] = mean_clock([at["inside"]])
        r["clock_outside_mhz"] = mean_clock(at["spans"])
with open(os.path.join(out, "interfere_trace.csv"), "w", newline="") as f:
    f.write(f"# {time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())} {ndev} x {torch.cuda.get_device_name(0)}, "
            f"torch {torch.__version__}, driver {DRIVER}\n")
    w = csv.DictWriter(f, fieldnames=list(rows[0].keys()))
    w.writeheader()
    w.writerows(rows)
print("done", len(rows))
