#pragma once

#include "collectors/collector.hpp"

namespace perfwatch {

// rocprof v1 raw trace files as they land in the output folder before rocprof merges them:
// hcc_ops_trace.txt ("BeginNs:EndNs dev-id:queue-id Name:correlation-id": kernels and copies on
// the GPU timeline) and hip_api_trace.txt / hsa_api_trace.txt ("BeginNs:EndNs pid:tid
// Function(args)": API calls).
const Collector& rocprof_text_trace_collector();

// rocprof API trace CSVs (*_hip_api_trace.csv, *_hsa_api_trace.csv, *_marker_api_trace.csv):
// "Domain","Function","Process_Id","Thread_Id","Correlation_Id","Start_Timestamp","End_Timestamp";
// API calls per function, marker ranges as NVTX-style ranges.
const Collector& rocprof_api_trace_csv_collector();

// HIP calls that block the host until the device is done (hipDeviceSynchronize, hipMemcpy, ...).
bool is_hip_sync_call(std::string_view name);

}  // namespace perfwatch
