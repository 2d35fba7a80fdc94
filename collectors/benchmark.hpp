#pragma once

#include <string>
#include <string_view>

namespace perfwatch {

// What a report's path says about the benchmark it measured.
struct BenchmarkName {
    std::string name;  // "" when the path says nothing lasting (only volatile parts)
    std::string rank;  // "3" from "bert_rank3.json"; "" when the name carries no rank
};

// The benchmark named by `relative`, a report's path below where it was found ("bert.json",
// "resnet/fp16/host_12.1695835535123.pt.trace.json"): its segments, less the file's compression
// and format extensions (.gz, .json, .pt.trace.json, .csv, ...), the volatile parts tools put
// into file names (PyTorch's host_pid worker name and millisecond timestamp, dates, epoch
// seconds), and a rank suffix, which is returned apart.
BenchmarkName benchmark_from_path(std::string_view relative);

}  // namespace perfwatch
