# PyTorch profiler traces whose cause is known by construction. Each scenario writes
# <name>.json and records its construction in manifest.json.
import json, os, sys, time
import torch
from torch.profiler import profile, ProfilerActivity

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
manifest = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "scenarios": {}}
dev = "cuda"

def run(name, fn, note, **facts):
    torch.cuda.synchronize()
    t0 = time.perf_counter()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    wall = time.perf_counter() - t0
    path = os.path.join(out, f"kineto_{name}.json")
    prof.export_chrome_trace(path)
    manifest["scenarios"][name] = {"note": note, "wall_s": wall, **facts}
    print(name, f"{wall:.3f}s", os.path.getsize(path), flush=True)

x0 = torch.ones(1 << 20, device=dev)  # context created outside every profile

def startup():
    # First use of sort, cumsum and topk in this process: their modules load lazily at first launch.
    v = torch.rand(1 << 16, device=dev)
    for _ in range(200):
        torch.sort(v)
        torch.cumsum(v, 0)
        torch.topk(v, 8)
run("startup_first_launch", startup, "first launches of sort/cumsum/topk in a fresh process (lazy module loading), then 200 repeats", repeats=200)

def launch_bound():
    x = torch.ones(1024, device=dev)
    for _ in range(3000):
        x = x * 1.0001 + 0.5
run("launch_bound_tiny_ops", launch_bound, "3000 iterations of two elementwise ops on 1024 floats: kernels of about 2 us, host launches back to back", iterations=3000)

def host_ahead():
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    b = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    for _ in range(60):
        c = a @ b
run("host_ahead_big_gemms", host_ahead, "60 bf16 8192^3 matmuls enqueued without synchronizing: GPU busy, host far ahead", matmuls=60)

def bursty():
    x = torch.ones(1 << 24, device=dev)
    for _ in range(40):
        for _ in range(30):
            x = x * 1.0001
        torch.cuda.synchronize()
        time.sleep(0.010)
run("bursty_with_host_sleep", bursty, "40 bursts of 30 elementwise ops on 16M floats, each followed by synchronize and a 10 ms host sleep", bursts=40, ops_per_burst=30, sleep_ms=10)

def dependency():
    s1, s2 = torch.cuda.Stream(), torch.cuda.Stream()
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    small = torch.ones(1024, device=dev)
    for _ in range(20):
        with torch.cuda.stream(s1):
            c = a @ a
            ev = torch.cuda.Event()
            ev.record(s1)
        with torch.cuda.stream(s2):
            s2.wait_event(ev)
            for _ in range(5):
                small = small + 1
    torch.cuda.synchronize()
run("dependency_wait_on_other_stream", dependency, "20 times: an 8192^3 bf16 matmul on stream A, then 5 tiny kernels on stream B that wait on A's event", iterations=20)

def copies():
    host = torch.ones(16 << 20)  # 64 MB pageable
    for _ in range(20):
        d = host.to(dev)
        d.mul_(2)
run("copy_dominated_pageable", copies, "20 pageable 64 MB host-to-device copies, each followed by one elementwise kernel", copies=20, bytes_per_copy=64 << 20)

def gemm_fp32():
    torch.backends.cuda.matmul.allow_tf32 = False
    a = torch.randn(4096, 4096, device=dev)
    for _ in range(20):
        c = a @ a
run("gemm_fp32_no_tf32", gemm_fp32, "20 fp32 4096^3 matmuls with TF32 disallowed: no tensor cores", matmuls=20)

def gemm_bf16():
    a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
    for _ in range(20):
        c = a @ a
run("gemm_bf16", gemm_bf16, "20 bf16 4096^3 matmuls: tensor cores", matmuls=20)

def sync_busy():
    a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
    for _ in range(20):
        c = a @ a
        torch.cuda.synchronize()
run("sync_while_gpu_busy", sync_busy, "20 times: one 8192^3 bf16 matmul then torch.cuda.synchronize (the wait is GPU work)", iterations=20)

with open(os.path.join(out, "manifest.json"), "w") as f:
    json.dump(manifest, f, indent=1)
