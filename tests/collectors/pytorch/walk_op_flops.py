#!/usr/bin/env python3
"""Per-operator FLOPs and achieved TFLOP/s of PyTorch profiler traces, from the file alone.

For every cpu_op of aten::mm, addmm, bmm, baddbmm, cudnn/miopen convolution and flash/efficient
attention forward that carries "Input Dims" (record_shapes=True), the operator's FLOPs follow the
usual counts (2 per multiply-add; attention: QK^T and PV, halved when causal). GPU time is the sum of
the durations of the kernels whose "External id" is the call's. Prints one line per operator and
shape: name, calls, FLOPs per call, kernel ns of the calls with kernels, TFLOP/s. Standard library only.
"""
import gzip, json, math, sys
from collections import defaultdict

SIZES = {"float": 4, "int": 4, "double": 8, "long int": 8, "c10::BFloat16": 2, "c10::Half": 2, "short int": 2,
         "signed char": 1, "unsigned char": 1, "bool": 1}


def size_of(t):
    return 1 if t.startswith("c10::Float8") else SIZES.get(t, 0)


def dims_text(d):
    return "[" + ", ".join(str(x) for x in d) + "]"


def ints(text):
    text = (text or "").strip("[] ")
    return [int(x) for x in text.split(",")] if text else []


def conv_flops(x, w, stride, pad, dil, groups):
    n = len(x) - 2
    stride = stride or [1]; pad = pad or [0]; dil = dil or [1]
    stride, pad, dil = [v * n if len(v) == 1 else v for v in (stride, pad, dil)]
    out = 1
    for i in range(n):
        out *= math.floor((x[i + 2] + 2 * pad[i] - dil[i] * (w[i + 2] - 1) - 1) / stride[i] + 1)
    return 2 * x[0] * w[0] * out * w[1] * math.prod(w[2:])


def op_flops(name, dims, conc):
    c = lambda i: conc[i] if i < len(conc) else ""
    if name == "aten::mm":
        (m, k), (_, n) = dims[0], dims[1]
        return 2 * m * n * k, dims_text(dims[0]) + " x " + dims_text(dims[1])
    if name == "aten::addmm":
        (m, k), (_, n) = dims[1], dims[2]
        return 2 * m * n * k, dims_text(dims[1]) + " x " + dims_text(dims[2]) + " + " + dims_text(dims[0])
    if name == "aten::bmm":
        (b, m, k), (_, _, n) = dims[0], dims[1]
        return 2 * b * m * n * k, dims_text(dims[0]) + " x " + dims_text(dims[1])
    if name == "aten::baddbmm":
        (b, m, k), (_, _, n) = dims[1], dims[2]
        return 2 * b * m * n * k, dims_text(dims[1]) + " x " + dims_text(dims[2]) + " + " + dims_text(dims[0])
    shape = dims_text(dims[0]) + " * " + dims_text(dims[1])
    if name == "aten::cudnn_convolution":
        g = ints(c(5)); return conv_flops(dims[0], dims[1], ints(c(3)), ints(c(2)), ints(c(4)), g[0] if g else 1), shape
    if name == "aten::miopen_convolution":
        g = ints(c(6)); return conv_flops(dims[0], dims[1], ints(c(4)), ints(c(3)), ints(c(5)), g[0] if g else 1), shape
    if name == "aten::convolution" and c(6) != "True":
        g = ints(c(8)); return conv_flops(dims[0], dims[1], ints(c(3)), ints(c(4)), ints(c(5)), g[0] if g else 1), shape
    if name in ("aten::_flash_attention_forward", "aten::_efficient_attention_forward"):
        (b, sq, h, d), (_, sk, _, _), (_, _, _, dv) = dims[0], dims[1], dims[2]
        causal = c(8) == "True" if name == "aten::_flash_attention_forward" else c(9) == "1"
        f = 2 * b * h * sq * sk * d + 2 * b * h * sq * sk * dv
        return (f // 2 if causal else f), " ".join(dims_text(x) for x in dims[:3])
    return None


def main(path):
    opener = gzip.open if path.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    calls, kernels = {}, defaultdict(float)
    for e in events:
        args = e.get("args") or {}
        if e.get("ph") != "X":
            continue
        if e.get("cat") == "kernel" and "External id" in args:
            kernels[args["External id"]] += float(e.get("dur", 0)) * 1000
        if e.get("cat") == "cpu_op" and "Input Dims" in args and "External id" in args:
            types = args.get("Input type", [])
            dtype = types[1] if e["name"] in ("aten::addmm", "aten::baddbmm") and len(types) > 1 else (types[0] if types else "")
            if not size_of(dtype):
                continue
            try:
                got = op_flops(e["name"], args["Input Dims"], args.get("Concrete Inputs", []))
            except (ValueError, IndexError, TypeError):
                got = None
            if got and got[0] > 0:
                calls[args["External id"]] = (f"{e['name']} {got[1]} {dtype}", got[0])
    per = defaultdict(lambda: [0, 0, 0.0, 0])  # calls, flops per call, kernel ns, timed calls
    for ext, (key, flops) in calls.items():
        p = per[key]
        p[0] += 1; p[1] = flops
        if ext in kernels:
            p[2] += kernels[ext]; p[3] += 1
    for key in sorted(per):
        n, flops, ns, timed = per[key]
        tflops = flops * timed / ns / 1e3 if ns > 0 else 0
        print(f"{key}\t{n}\t{flops}\t{ns:.1f}\t{tflops:.9g}")


if __name__ == "__main__":
    main(sys.argv[1])
