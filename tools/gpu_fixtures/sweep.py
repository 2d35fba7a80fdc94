# A sweep of PyTorch workloads whose answer is measured, not assumed: for each one the trace is kept
# together with what acting on the concern actually gains, timed without the profiler.
#   launch-bound: the same step replayed as a CUDA Graph (no per-kernel launches) against eager.
#   host gaps:    the same bursts without the host's sleep between them.
# Writes sweep_<name>.json and sweep_manifest.json into the folder given.
import json, os, statistics, sys, time
import torch
from torch.profiler import profile, ProfilerActivity

out = sys.argv[1]
os.makedirs(out, exist_ok=True)
dev = "cuda"
torch.ones(1, device=dev)  # the context is created outside every profile
manifest = {"torch": torch.__version__, "device": torch.cuda.get_device_name(0), "traces": {}}


def per_call(fn, reps):
    # Median over 5 trials of the seconds one call takes, the GPU drained around each trial.
    fn()
    torch.cuda.synchronize()
    trials = []
    for _ in range(5):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
        trials.append((time.perf_counter() - t0) / reps)
    return statistics.median(trials)


def as_graph(fn):
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        for _ in range(3):
            fn()
    torch.cuda.current_stream().wait_stream(side)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        fn()
    return g.replay


def trace(name, step, steps, **facts):
    for _ in range(3):
        step()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            step()
        torch.cuda.synchronize()
    path = os.path.join(out, f"sweep_{name}.json")
    prof.export_chrome_trace(path)
    manifest["traces"][name] = {"steps": steps, **facts}
    print(name, json.dumps(facts), os.path.getsize(path), flush=True)


def launch_facts(step, reps):
    eager = per_call(step, reps)
    graph = per_call(as_graph(step), reps)
    return {"eager_step_s": eager, "graph_step_s": graph, "graph_saves": 1 - graph / eager}


# Ten in-place elementwise kernels per step on 2^k floats: from about 1 us kernels (launch cost
# dominates) to about 100 us (the GPU dominates).
for k in range(10, 26):
    x = torch.ones(1 << k, device=dev)
    def step(x=x):
        for _ in range(10):
            x.mul_(1.0001)
    trace(f"elementwise_2e{k}", step, 20, kind="elementwise", floats=1 << k, kernels_per_step=10,
          **launch_facts(step, 50))

# Ten bf16 matmuls per step of M x M x M.
for m in (64, 128, 256, 512, 768, 1024, 1536, 2048, 4096):
    a = torch.randn(m, m, device=dev, dtype=torch.bfloat16)
    c = torch.empty(m, m, device=dev, dtype=torch.bfloat16)
    def step(a=a, c=c):
        for _ in range(10):
            torch.mm(a, a, out=c)
    trace(f"matmul_{m}", step, 20, kind="matmul", m=m, kernels_per_step=10, **launch_facts(step, 50))

# Bursts of elementwise kernels on 16M floats, each followed by a synchronize and a host sleep.
x = torch.ones(1 << 24, device=dev)
for ops in (10, 30, 100, 200):
    def burst(x=x, ops=ops):
        for _ in range(ops):
            x.mul_(1.0001)
    for sleep_ms in (1, 2, 5):
        def step(burst=burst, sleep_ms=sleep_ms):
            burst()
            torch.cuda.synchronize()
            time.sleep(sleep_ms / 1000)
        def awake(burst=burst):
            burst()
            torch.cuda.synchronize()
        with_sleep = per_call(step, 10)
        without = per_call(awake, 10)
        trace(f"bursts_{ops}x_sleep{sleep_ms}ms", step, 6, kind="bursts", kernels_per_step=ops, sleep_ms=sleep_ms,
              step_s=with_sleep, step_without_sleep_s=without, sleep_saves=1 - without / with_sleep,
              **launch_facts(burst, 10))

with open(os.path.join(out, "sweep_manifest.json"), "w") as f:
    json.dump(manifest, f, indent=1)
