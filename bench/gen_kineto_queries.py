#!/usr/bin/env python3
"""A Kineto trace of one kernel launch, then N runtime calls that start no device work
(cudaEventQuery, each with its own correlation ID), then the launch's kernel: the launch map's
worst case (consecutive IDs that never meet a kernel).

usage: gen_kineto_queries.py OUT N
"""
import sys


def main():
    out_path, n = sys.argv[1], int(sys.argv[2])
    with open(out_path, "w") as out:
        out.write('{"traceEvents": [\n')
        out.write('{"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, '
                  '"ts": 100.0, "dur": 4.0, "args": {"correlation": 1}}')
        for i in range(n):
            out.write(',\n{"ph": "X", "cat": "cuda_runtime", "name": "cudaEventQuery", "pid": 1, "tid": 1, '
                      '"ts": %d, "dur": 0.5, "args": {"correlation": %d}}' % (105 + i, 2 + i))
        out.write(',\n{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 130.0, "dur": 10.0, '
                  '"args": {"device": 0, "stream": 7, "correlation": 1}}\n]}\n')


if __name__ == "__main__":
    main()
