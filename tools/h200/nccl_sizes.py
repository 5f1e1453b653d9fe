#!/usr/bin/env python3
"""NCCL's ring collectives on H200 against the array size (2 or 4 GPUs, one node).

What results/h200-collectives/ draws the model's size curve against: the per-op time of
back-to-back reduce-scatter, all-gather (out of place) and all-reduce, fp16, at NCCL's own
choice of channels and protocol (nothing forced but the ring and NVLink SHARP off), from
8 KiB to 384 MiB of array per GPU. The array is the large buffer of the op, as in the
model's sweeps and ../shared/calibration/h200/nccl_ring_channels_4gpu.csv: the input of
a reduce-scatter, the output of an all-gather, the buffer of an all-reduce; the per-rank
chunk is array / GPUs.

Three times per size, on rank 0 (and the slowest rank's median):
- t_*: after 5 warm-up ops, `iters` ops launched back to back from Python
  (torch.distributed, as the calibration CSVs were taken) between two CUDA events,
  repeated REPS times. Small ops are bound by the host's enqueue here, not by the GPU.
- graph_*: up to 50 of the same ops captured in one CUDA graph and replayed: the GPU's
  time per op with no host between them (kernel plus the graph's launch gap).
- kernel_*: the NCCL kernel's own duration (CUPTI, torch.profiler) over 10 eager ops; a
  kernel waits inside for its peers, so launch skew between ranks lands in it. NCCL's tuner choice (algorithm, protocol, channels) is read from its TUNING log
(NCCL_DEBUG_SUBSYS=TUNING) for one extra op per size, so the timed ops carry no logging.

usage: nccl_sizes.py OUTDIR [GPUS ...]     (default: every visible GPU count of 2 and 4)
Output: OUTDIR/nccl_sizes_<n>gpu.csv (header comment: GPU, driver, NCCL, torch).
"""
import os, sys, csv, datetime, statistics, subprocess

os.environ.setdefault("NCCL_NVLS_ENABLE", "0")       # NVLink SHARP (multicast) off
os.environ.setdefault("NCCL_ALGO", "Ring")           # the model's ring algorithm

import torch
import torch.distributed as dist
import torch.multiprocessing as mp

SIZES_KIB = [8, 32, 128, 256, 512, 1024, 2048, 4096, 6144, 8192, 12288, 16384, 24576, 32768,
             49152, 65536, 98304, 131072, 262144, 393216]
OPS = ["reduce_scatter", "all_gather", "all_reduce"]
REPS = int(os.environ.get("REPS", "7"))


def iters_for(array_bytes):
    # ~10 ms per repetition at NVLink rates, at least 10 ops and at most 200.
    return max(10, min(200, int(10e-3 / (array_bytes / 150e9 + 10e-6))))


def run_op(op, full, part, inp):
    if op == "reduce_scatter":
        dist.reduce_scatter_tensor(part, full)
    elif op == "all_gather":
        dist.all_gather_into_tensor(full, part)
    else:
        dist.all_reduce(full)


def timed(fn, reps):
    """Median, min and max over reps of fn()'s per-op time (us), fn returning its op count."""
    per_op = []
    for _ in range(reps):
        dist.barrier()
        torch.cuda.synchronize()
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        n = fn()
        end.record()
        end.synchronize()
        per_op.append(start.elapsed_time(end) * 1e3 / n)
    return statistics.median(per_op), min(per_op), max(per_op)


def kernel_times(op, full, part, n=10):
    """The NCCL kernels' own durations (us, CUPTI through torch.profiler) of n eager ops."""
    from torch.profiler import profile, ProfilerActivity
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(n):
            run_op(op, full, part, None)
        torch.cuda.synchronize()
    durs = []
    for e in prof.events():
        if "nccl" in e.name.lower() and "kernel" in e.name.lower() and str(e.device_type).endswith("CUDA"):
            durs.append(e.time_range.elapsed_us())
    if not durs:
        return float("nan"), float("nan")
    return statistics.median(durs), min(durs)


def worker(rank, world, out_dir, result_q):
    torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev,
                            init_method=f"tcp://127.0.0.1:{29500 + world}")
    rows = []
    for op in OPS:
        for kib in SIZES_KIB:
            array_bytes = kib * 1024
            elems = array_bytes // 2
            elems -= elems % world
            full = torch.ones(elems, dtype=torch.float16, device=dev)
            part = torch.ones(elems // world, dtype=torch.float16, device=dev)
            for _ in range(5):
                run_op(op, full, part, None)
            torch.cuda.synchronize()
            iters = iters_for(array_bytes)

            def eager():
                for _ in range(iters):
                    run_op(op, full, part, None)
                return iters
            med, lo, hi = timed(eager, REPS)
            # The same ops captured in one CUDA graph: no host enqueue between them, so the
            # per-op time is the GPU's (kernel plus the graph's launch gap).
            g_iters = min(iters, 50)
            try:
                side = torch.cuda.Stream()
                side.wait_stream(torch.cuda.current_stream())
                with torch.cuda.stream(side):
                    for _ in range(3):
                        run_op(op, full, part, None)
                torch.cuda.current_stream().wait_stream(side)
                graph = torch.cuda.CUDAGraph()
                with torch.cuda.graph(graph):
                    for _ in range(g_iters):
                        run_op(op, full, part, None)
                graph.replay()
                torch.cuda.synchronize()

                def replay():
                    graph.replay()
                    return g_iters
                g_med, g_lo, _ = timed(replay, REPS)
                del graph
            except Exception as exc:  # capture unsupported: say so in the row
                print(f"graph capture failed ({op}, {array_bytes} B): {exc}", flush=True)
                g_med = g_lo = float("nan")
            try:
                k_med, k_min = kernel_times(op, full, part)
            except Exception as exc:
                print(f"profiler failed ({op}, {array_bytes} B): {exc}", flush=True)
                k_med = k_min = float("nan")
            t = torch.tensor([med, g_med], device=dev)
            dist.all_reduce(t, op=dist.ReduceOp.MAX)
            rows.append((op, array_bytes, iters, med, lo, hi, t[0].item(), g_med, g_lo, t[1].item(),
                         k_med, k_min))
            del full, part
    if rank == 0:
        result_q.put(rows)
    dist.barrier()
    dist.destroy_process_group()


def tuning_pass(rank, world, log_path):
    """One op per size with NCCL's TUNING log on: which algorithm, protocol, channels."""
    torch.cuda.set_device(rank)
    dev = torch.device("cuda", rank)
    dist.init_process_group("nccl", rank=rank, world_size=world, device_id=dev,
                            init_method=f"tcp://127.0.0.1:{29600 + world}")
    for op in OPS:
        for kib in SIZES_KIB:
            elems = kib * 1024 // 2
            elems -= elems % world
            full = torch.ones(elems, dtype=torch.float16, device=dev)
            part = torch.ones(elems // world, dtype=torch.float16, device=dev)
            run_op(op, full, part, None)
            torch.cuda.synchronize()
    dist.barrier()
    dist.destroy_process_group()


def main():
    out_dir = sys.argv[1]
    os.makedirs(out_dir, exist_ok=True)
    ndev = torch.cuda.device_count()
    counts = [int(a) for a in sys.argv[2:]] or [n for n in (2, 4) if n <= ndev]
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,driver_version,clocks.sm,clocks.max.sm",
                          "--format=csv,noheader"], capture_output=True, text=True).stdout.strip().splitlines()
    nccl = ".".join(str(v) for v in torch.cuda.nccl.version())
    ctx = mp.get_context("spawn")
    for world in counts:
        q = ctx.Queue()
        mp.spawn(worker, args=(world, out_dir, q), nprocs=world, join=True)
        rows = q.get()
        log = os.path.join(out_dir, f"nccl_tuning_{world}gpu.%p.log")
        env = {"NCCL_DEBUG": "INFO", "NCCL_DEBUG_SUBSYS": "TUNING", "NCCL_DEBUG_FILE": log}
        saved = {k: os.environ.get(k) for k in env}
        os.environ.update(env)
        mp.spawn(tuning_pass, args=(world, log), nprocs=world, join=True)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k)
            else:
                os.environ[k] = v
        path = os.path.join(out_dir, f"nccl_sizes_{world}gpu.csv")
        with open(path, "w", newline="") as f:
            f.write(f"# {datetime.datetime.now(datetime.timezone.utc).isoformat()} {smi[0]} (GPU 0: name, driver, SM clock, max); "
                    f"NCCL {nccl}, torch {torch.__version__}; NCCL_ALGO=Ring NCCL_NVLS_ENABLE=0; "
                    f"{world} GPUs; fp16; median of {REPS} repetitions of back-to-back ops\n")
            w = csv.writer(f)
            w.writerow(["op", "gpus", "array_bytes", "iters", "t_med_us", "t_min_us", "t_max_us",
                        "t_med_slowest_rank_us", "graph_med_us", "graph_min_us", "graph_med_slowest_rank_us",
                        "kernel_med_us", "kernel_min_us", "algbw_GBps", "busbw_GBps", "graph_busbw_GBps"])
            for op, array_bytes, iters, med, lo, hi, slowest, g_med, g_lo, g_slowest, k_med, k_min in rows:
                factor = 2 * (world - 1) / world if op == "all_reduce" else (world - 1) / world
                algbw = array_bytes / (med * 1e3)
                g_algbw = array_bytes / (g_med * 1e3) if g_med == g_med else float("nan")
                w.writerow([op, world, array_bytes, iters, f"{med:.2f}", f"{lo:.2f}", f"{hi:.2f}",
                            f"{slowest:.2f}", f"{g_med:.2f}", f"{g_lo:.2f}", f"{g_slowest:.2f}",
                            f"{k_med:.2f}", f"{k_min:.2f}", f"{algbw:.2f}", f"{algbw * factor:.2f}",
                            f"{g_algbw * factor:.2f}"])
        print(f"wrote {path}", flush=True)


if __name__ == "__main__":
    main()
