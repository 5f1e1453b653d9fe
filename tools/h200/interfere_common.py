"""What interfere_trace.py and interfere_steady.py share with interfere.py
(../shared/calibration/h200/): its copy kernel (copy16), its 64 MiB buffers and its
interferers, each a list of (GPU that queues it, function(stream) that queues one copy).
Importing it sets NVLink multicast off (before torch and CuPy load) and enables peer
access between the first two GPUs when there are two."""
import os
for k, v in {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}.items():
    os.environ[k] = v
import torch, cupy as cp

# The copy kernel, shared with copy_kernel_resources.sh (which reads its resources).
KSRC = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "copy16.cu")).read()
d0 = torch.device("cuda:0")
ndev = min(2, torch.cuda.device_count())
if ndev > 1:
    for i in range(2):
        for j in range(2):
            if i != j:
                torch.ones(4, device=f"cuda:{j}").copy_(torch.ones(4, device=f"cuda:{i}"))
kern = {}
CH = 64 << 20
bufs = {}


def kernel(dev):
    if dev not in kern:
        with cp.cuda.Device(dev):
            kern[dev] = cp.RawKernel(KSRC, "copy16")
    return kern[dev]


def buf(dev, name):
    if (dev, name) not in bufs:
        bufs[(dev, name)] = torch.empty(CH // 2, dtype=torch.float16, device=f"cuda:{dev}")
    return bufs[(dev, name)]


def ce(dst_dev, src_dev, stream):  # as interfere.py
    dst, src = buf(dst_dev, "dst%d" % src_dev), buf(src_dev, "src")
    if dst_dev == src_dev:
        cp.cuda.runtime.memcpyAsync(dst.data_ptr(), src.data_ptr(), CH, 3, stream.cuda_stream)
    else:
        cp.cuda.runtime.memcpyPeerAsync(dst.data_ptr(), dst_dev, src.data_ptr(), src_dev, CH, stream.cuda_stream)


def sm(dst_dev, src_dev, stream, blocks, run_dev):  # as interfere.py
    dst, src = buf(dst_dev, "dst%d" % src_dev), buf(src_dev, "src")
    with cp.cuda.Device(run_dev):
        kernel(run_dev)((blocks,), (512,), (cp.uint64(src.data_ptr()), cp.uint64(dst.data_ptr()), cp.uint64(CH // 16)),
                        stream=cp.cuda.ExternalStream(stream.cuda_stream, run_dev))


INTERFERERS = {"ce_local": [(0, lambda s: ce(0, 0, s))], "sm_local_24": [(0, lambda s: sm(0, 0, s, 24, 0))]}
if ndev > 1:
    INTERFERERS["ce_peer_out"] = [(0, lambda s: ce(1, 0, s))]
    INTERFERERS["ce_peer_in"] = [(1, lambda s: ce(0, 1, s))]
    INTERFERERS["ce_peer_both"] = INTERFERERS["ce_peer_out"] + INTERFERERS["ce_peer_in"]
    INTERFERERS["sm_push_24"] = [(0, lambda s: sm(1, 0, s, 24, 0))]
