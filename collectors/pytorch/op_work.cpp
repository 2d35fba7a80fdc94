#include "collectors/pytorch/op_work.hpp"

#include <fmt/format.h>

#include <array>
#include <cmath>
#include <optional>

#include "collectors/readers/timeline.hpp"
#include "core/gpu_arch.hpp"

namespace perfwatch {

namespace {

// At most this many operator calls and kernels are joined (memory does not grow past it).
constexpr std::size_t k_max_links = 1u << 20;

enum class OpClass { mm, addmm, bmm, baddbmm, conv_cudnn, conv_miopen, conv_aten, flash_attention, efficient_attention };

struct OpRow {
    std::string_view name;
    OpClass kind;
};

// The innermost operators a kernel's External id names (aten::linear and aten::matmul launch
// through these, so they are not counted twice).
constexpr auto k_ops = std::to_array<OpRow>({
    {"aten::mm", OpClass::mm},
    {"aten::addmm", OpClass::addmm},
    {"aten::bmm", OpClass::bmm},
    {"aten::baddbmm", OpClass::baddbmm},
    {"aten::cudnn_convolution", OpClass::conv_cudnn},
    {"aten::miopen_convolution", OpClass::conv_miopen},
    {"aten::convolution", OpClass::conv_aten},
    {"aten::_flash_attention_forward", OpClass::flash_attention},
    {"aten::_efficient_attention_forward", OpClass::efficient_attention},
});

std::optional<OpClass> op_class(std::string_view name) {
    for (const OpRow& row : k_ops)
        if (row.name == name) return row.kind;
    return std::nullopt;
}

using Dims = std::vector<std::vector<double>>;

double numel(const std::vector<double>& d) {
    double n = 1;
    for (double x : d) n *= x;
    return n;
}

// "[1, 2]" or "3" (a Concrete Inputs entry) as numbers; empty when it is neither.
std::vector<double> concrete_list(std::string_view text) {
    std::vector<double> out;
    std::size_t i = 0;
    while (i < text.size()) {
        while (i < text.size() && (text[i] == '[' || text[i] == ']' || text[i] == ',' || text[i] == ' ')) ++i;
        if (i >= text.size()) break;
        std::size_t j = i;
        while (j < text.size() && text[j] >= '0' && text[j] <= '9') ++j;
        if (j == i) return {};
        double v = 0;
        for (std::size_t k = i; k < j; ++k) v = v * 10 + (text[k] - '0');
        out.push_back(v);
        i = j;
    }
    return out;
}

struct Work {
    double flops = 0, bytes = 0;
};

std::optional<Work> matmul(const std::vector<double>& a, const std::vector<double>& b, double extra, int size,
                           bool batched) {
    const std::size_t rank = batched ? 3 : 2;
    if (a.size() != rank || b.size() != rank) return std::nullopt;
    const double batch = batched ? a[0] : 1;
    const double m = a[rank - 2], k = a[rank - 1], n = b[rank - 1];
    if (b[rank - 2] != k || (batched && b[0] != batch)) return std::nullopt;
    return Work{2 * batch * m * n * k, size * (numel(a) + numel(b) + batch * m * n + extra)};
}

// Convolution: input [N, C, spatial...], weight [K, C/groups, kernel...]; stride, padding and
// dilation from the call's concrete inputs (one value for all dims, or one per dim).
std::optional<Work> convolution(const std::vector<double>& in, const std::vector<double>& w, std::vector<double> stride,
                                std::vector<double> padding, std::vector<double> dilation, double groups, int size) {
    if (in.size() < 3 || in.size() != w.size() || groups < 1) return std::nullopt;
    const std::size_t spatial = in.size() - 2;
    auto widen = [&](std::vector<double>& v, double fallback) {
        if (v.empty()) v.assign(spatial, fallback);
        if (v.size() == 1) v.assign(spatial, v[0]);
        return v.size() == spatial;
    };
    if (!widen(stride, 1) || !widen(padding, 0) || !widen(dilation, 1)) return std::nullopt;
    double out = 1, window = 1;
    for (std::size_t i = 0; i < spatial; ++i) {
        const double o = std::floor((in[i + 2] + 2 * padding[i] - dilation[i] * (w[i + 2] - 1) - 1) / stride[i] + 1);
        if (!(o >= 1)) return std::nullopt;
        out *= o;
        window *= w[i + 2];
    }
    const double n = in[0], c_per_group = w[1], k = w[0];
    if (in[1] != c_per_group * groups) return std::nullopt;
    const double output = n * k * out;
    return Work{2 * output * c_per_group * window, size * (numel(in) + numel(w) + output)};
}

// Attention over q [B, Sq, H, D], k [B, Sk, Hk, D], v [B, Sk, Hk, Dv] (the layout of
// _flash_attention_forward and _efficient_attention_forward): QK^T and PV, halved when causal.
std::optional<Work> attention(const std::vector<double>& q, const std::vector<double>& k, const std::vector<double>& v,
                              bool causal, int size) {
    if (q.size() != 4 || k.size() != 4 || v.size() != 4) return std::nullopt;
    const double b = q[0], sq = q[1], h = q[2], d = q[3], sk = k[1], dv = v[3];
    double flops = 2 * b * h * sq * sk * d + 2 * b * h * sq * sk * dv;
    if (causal) flops /= 2;
    return Work{flops, size * (numel(q) + numel(k) + numel(v) + b * sq * h * dv)};
}

std::string dims_text(const std::vector<double>& d) {
    std::string out = "[";
    for (std::size_t i = 0; i < d.size(); ++i) out += fmt::format("{}{:.0f}", i ? ", " : "", d[i]);
    return out + "]";
}

}  // namespace

bool OperatorWork::modelled(std::string_view name) { return op_class(name).has_value(); }

void OperatorWork::take_op(std::string_view name, simdjson::dom::object args) {
    const auto kind = op_class(name);
    if (!kind) return;
    int64_t external = 0;
    if (args["External id"].get_int64().get(external)) return;
    simdjson::dom::array dims_json, types_json, concrete_json;
    if (args["Input Dims"].get_array().get(dims_json) || args["Input type"].get_array().get(types_json)) return;
    Dims dims;
    for (simdjson::dom::element d : dims_json) {
        std::vector<double> one;
        simdjson::dom::array list;
        if (!d.get_array().get(list))
            for (simdjson::dom::element x : list) {
                int64_t v = 0;
                if (x.get_int64().get(v)) return;
                one.push_back(static_cast<double>(v));
            }
        dims.push_back(std::move(one));
    }
    std::vector<std::string_view> types, concrete;
    for (simdjson::dom::element t : types_json) {
        std::string_view s;
        types.push_back(t.get_string().get(s) ? std::string_view() : s);
    }
    if (!args["Concrete Inputs"].get_array().get(concrete_json))
        for (simdjson::dom::element c : concrete_json) {
            std::string_view s;
            concrete.push_back(c.get_string().get(s) ? std::string_view() : s);
        }
    auto at = [&](std::size_t i) -> const std::vector<double>& {
        static const std::vector<double> k_none;
        return i < dims.size() ? dims[i] : k_none;
    };
    auto text = [&](std::size_t i) { return i < concrete.size() ? concrete[i] : std::string_view(); };
    // The operands' dtype: the first tensor input's.
    const std::string_view dtype = types.empty() ? std::string_view() : types[*kind == OpClass::addmm || *kind == OpClass::baddbmm ? std::min<std::size_t>(1, types.size() - 1) : 0];
    const int size = dtype_size(dtype);
    if (size == 0) return;
    std::optional<Work> work;
    std::string shape;
    switch (*kind) {
        case OpClass::mm:
        case OpClass::bmm:
            work = matmul(at(0), at(1), 0, size, *kind == OpClass::bmm);
            shape = dims_text(at(0)) + " x " + dims_text(at(1));
            break;
        case OpClass::addmm:
        case OpClass::baddbmm:
            work = matmul(at(1), at(2), numel(at(0)), size, *kind == OpClass::baddbmm);
            shape = dims_text(at(1)) + " x " + dims_text(at(2)) + " + " + dims_text(at(0));
            break;
        case OpClass::conv_cudnn:  // (input, weight, padding, stride, dilation, groups, ...)
            work = convolution(at(0), at(1), concrete_list(text(3)), concrete_list(text(2)), concrete_list(text(4)),
                               concrete_list(text(5)).empty() ? 1 : concrete_list(text(5))[0], size);
            shape = dims_text(at(0)) + " * " + dims_text(at(1));
            break;
        case OpClass::conv_miopen:  // (input, weight, bias, padding, stride, dilation, groups, ...)
            work = convolution(at(0), at(1), concrete_list(text(4)), concrete_list(text(3)), concrete_list(text(5)),
                               concrete_list(text(6)).empty() ? 1 : concrete_list(text(6))[0], size);
            shape = dims_text(at(0)) + " * " + dims_text(at(1));
            break;
        case OpClass::conv_aten:  // (input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
            if (text(6) == "True") return;
            work = convolution(at(0), at(1), concrete_list(text(3)), concrete_list(text(4)), concrete_list(text(5)),
                               concrete_list(text(8)).empty() ? 1 : concrete_list(text(8))[0], size);
            shape = dims_text(at(0)) + " * " + dims_text(at(1));
            break;
        case OpClass::flash_attention:  // (q, k, v, cum_q, cum_k, max_q, max_k, dropout, is_causal, ...)
            work = attention(at(0), at(1), at(2), text(8) == "True", size);
            shape = dims_text(at(0)) + " " + dims_text(at(1)) + " " + dims_text(at(2));
            break;
        case OpClass::efficient_attention:  // (q, k, v, bias, cu_q, cu_k, max_q, max_k, dropout, custom_mask_type, ...)
            work = attention(at(0), at(1), at(2), text(9) == "1", size);
            shape = dims_text(at(0)) + " " + dims_text(at(1)) + " " + dims_text(at(2));
            break;
    }
    if (!work || !(work->flops > 0)) return;
    std::string key = fmt::format("{} {} {}", name, shape, dtype);
    auto [it, fresh] = m_shape_of.try_emplace(key, static_cast<std::uint32_t>(m_shapes.size()));
    if (fresh) m_shapes.push_back(Shape{std::move(key), std::string(name), std::string(dtype), work->flops, work->bytes, 0});
    m_shapes[it->second].calls += 1;
    if (m_call_shape.size() >= k_max_links) {
        m_unkept = true;
        return;
    }
    m_call_shape[external] = it->second;
}

void OperatorWork::take_kernel(double external_id, double length) {
    if (!(external_id >= 0)) return;
    const auto id = static_cast<std::int64_t>(external_id);
    auto it = m_kernel_time.find(id);
    if (it != m_kernel_time.end()) {
        it->second += length;
        return;
    }
    if (m_kernel_time.size() >= k_max_links) {
        m_unkept = true;
        return;
    }
    m_kernel_time.emplace(id, length);
}

void OperatorWork::finish(RunBatch& batch, std::size_t run_index, const std::string& gpu) const {
    if (m_shapes.empty()) return;
    std::vector<double> time(m_shapes.size(), 0), timed_calls(m_shapes.size(), 0);
    for (const auto& [external, shape] : m_call_shape)
        if (auto k = m_kernel_time.find(external); k != m_kernel_time.end()) {
            time[shape] += k->second;
            timed_calls[shape] += 1;
        }
    const auto peaks = gpu_peaks(gpu);
    for (std::size_t i = 0; i < m_shapes.size(); ++i) {
        const Shape& s = m_shapes[i];
        Entity e;
        e.kind = EntityKind::op;
        e.name = s.name;
        e.parent = static_cast<std::int64_t>(run_index);
        e.attributes["op"] = s.op;
        e.attributes["dtype"] = s.dtype;
        e.set(plain("count", s.calls, "count"));
        e.set(plain("flops", s.flops, "flop"));
        e.set(plain("op_bytes", s.bytes, "byte"));
        e.set(plain("arithmetic_intensity", s.flops / s.bytes, "flop/byte"));
        if (timed_calls[i] > 0 && time[i] > 0) {
            e.set(plain("duration_total", time[i], "ns"));
            const double flops_per_s = s.flops * timed_calls[i] / time[i] * 1e9;
            const double bandwidth = s.bytes * timed_calls[i] / time[i] * 1e9;
            e.set(plain("achieved_flops", flops_per_s, "flop/s"));
            e.set(plain("achieved_bandwidth", bandwidth, "byte/s"));
            if (peaks) {
                const double peak = peak_tflops(*peaks, s.dtype);
                if (peak > 0) {
                    e.set(plain("peak_tflops_pct", 100.0 * flops_per_s / (peak * 1e12), "percent"));
                    const double ridge = peak * 1e12 / (peaks->memory_tbps * 1e12);
                    e.attributes["bound"] = s.flops / s.bytes >= ridge ? "compute" : "memory";
                }
                e.set(plain("peak_bandwidth_pct", 100.0 * bandwidth / (peaks->memory_tbps * 1e12), "percent"));
                e.attributes["peaks"] = std::string(peaks->model);
            }
        }
        batch.entities.push_back(std::move(e));
    }
    if (m_unkept)
        batch.notes.push_back(fmt::format("more than {} operator calls or kernels: per-operator figures cover the first ones",
                                          k_max_links));
}

}  // namespace perfwatch
