#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <simdjson.h>

#include "core/model.hpp"

namespace perfwatch {

// The work of the framework operators a PyTorch profiler trace records with their shapes
// (record_shapes=True): FLOPs and the fewest bytes each call must move, from "Input Dims",
// "Input type" and "Concrete Inputs", for matmul (mm, addmm, bmm, baddbmm), convolution and
// flash/efficient attention; the GPU time of the kernels each call launched, joined by the
// "External id" both carry. One `op` entity per operator and shape, with its achieved TFLOP/s,
// bandwidth and arithmetic intensity, and its share of the GPU's peaks where the GPU is known.
class OperatorWork {
public:
    // Whether `name` is an operator whose work is modelled (worth parsing its args for).
    static bool modelled(std::string_view name);

    // A cpu_op event of a modelled operator with its args.
    void take_op(std::string_view name, simdjson::dom::object args);
    // A kernel event's External id and duration (ns).
    void take_kernel(double external_id, double length);
    // Adds the op entities to `batch` (the run entity at `run_index`); `gpu` names the GPU ("" when
    // the trace does not), for the peaks.
    void finish(RunBatch& batch, std::size_t run_index, const std::string& gpu) const;

private:
    struct Shape {
        std::string name;    // the entity's name: operator, dims and dtype
        std::string op, dtype;
        double flops = 0, bytes = 0;  // per call
        double calls = 0;
    };
    std::vector<Shape> m_shapes;
    std::unordered_map<std::string, std::uint32_t> m_shape_of;      // name -> index
    std::unordered_map<std::int64_t, std::uint32_t> m_call_shape;    // External id -> index
    std::unordered_map<std::int64_t, double> m_kernel_time;          // External id -> kernel time
    bool m_unkept = false;  // more calls or kernels than kept
};

}  // namespace perfwatch
