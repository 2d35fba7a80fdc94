// The dashboard's server time on a long history: fills a database (SQLite file or postgresql://
// URI, when it holds no run) with SERIES series x RUNS runs (a run entity and 3 kernels each, an
// open regression on every 10th series, findings on each series' latest run), then times the
// overview, a series page (the run's GPU time and a kernel's duration), the regressions page and
// a run page as the daemon answers them: the first request (which reads the whole run index) and
// the median of 5 more, with the statements each ran.
//
// usage: bench_dashboard DB [series=1000] [runs=100]

#include "storage/db.hpp"
#include "web/dashboard.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string>
#include <vector>

namespace {

using namespace perfwatch;
using Clock = std::chrono::steady_clock;

RunBatch make_run(std::size_t series, std::size_t run) {
    RunBatch b;
    b.source = fmt::format("bench/s{}/r{}.json", series, run);
    b.sha256 = fmt::format("{:064x}", series * 1'000'000 + run);
    b.format = "kineto";
    b.labels = {{"benchmark", fmt::format("model{}", series)}, {"gpu", series % 2 ? "NVIDIA H100" : "NVIDIA A100"},
                {"commit", fmt::format("c{}", run)}, {"batch", std::to_string(8 << (series % 3))}};
    const double level = 1 + static_cast<double>(series % 7) * 0.1 + (run > 80 && series % 10 == 0 ? 0.1 : 0);
    const double wobble = 1 + 0.01 * std::sin(static_cast<double>(run * 7 + series));
    double total = 0;
    for (const char* name : {"gemm", "softmax", "layernorm"}) {
        Entity k;
        k.kind = EntityKind::kernel;
        k.name = name;
        const double d = 100e3 * level * wobble * (name[0] == 'g' ? 1 : 0.3);
        k.set({"duration", d, "ns", "", ""});
        k.set({"launches", 40, "count", "", ""});
        total += 40 * d;
        b.entities.push_back(std::move(k));
    }
    b.entities[b.run_entity()].set({"gpu_time", total, "ns", "", ""});
    b.entities[b.run_entity()].set({"launches", 120, "count", "", ""});
    return b;
}

double median_ms(std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        fmt::print(stderr, "usage: bench_dashboard DB [series=1000] [runs=100]\n");
        return 2;
    }
    const std::string where = argv[1];
    const std::size_t series = argc > 2 ? std::stoul(argv[2]) : 1000;
    const std::size_t runs = argc > 3 ? std::stoul(argv[3]) : 100;
    auto db = Db::open(where);
    if (!db) {
        fmt::print(stderr, "{}\n", db.error().to_string());
        return 2;
    }
    if (db->count_runs() == 0) {
        const auto t0 = Clock::now();
        std::vector<RegressionState> regressions;
        for (std::size_t r = 0; r < runs; ++r)
            for (std::size_t s = 0; s < series; ++s) {
                auto stored = db->store(make_run(s, r));
                if (!stored) {
                    fmt::print(stderr, "{}\n", stored.error().to_string());
                    return 2;
                }
                if (r + 1 == runs) {
                    Finding f;
                    f.rule = "hotspot-top-kernel";
                    f.title = "top kernel";
                    f.entity_name = "gemm";
                    f.message = "gemm is #1 by kernel time";
                    f.run_id = stored->run_id;
                    (void)db->store_findings(stored->run_id, {f});
                }
                if (r == 81 && s % 10 == 0) {
                    RegressionState st;
                    st.rule = "kernel-time-regression";
                    st.entity_name = "gemm";
                    st.series = fmt::format("batch={};benchmark=model{};gpu={};branch=main", 8 << (s % 3), s,
                                            s % 2 ? "NVIDIA H100" : "NVIDIA A100");
                    st.metric = "duration";
                    st.baseline = 100e3;
                    st.band_limit = 103e3;
                    st.opened_run = st.last_run = st.last_bad_run = stored->run_id;
                    st.first_bad_run = stored->run_id;
                    regressions.push_back(st);
                }
            }
        if (auto saved = db->regressions().save(regressions); !saved) {
            fmt::print(stderr, "{}\n", saved.error().to_string());
            return 2;
        }
        fmt::print("filled {}: {} series x {} runs in {:.1f} s\n", db->name(), series, runs,
                   std::chrono::duration<double>(Clock::now() - t0).count());
    }
    auto reader = Db::open(where);
    if (!reader) return 2;
    web::Dashboard dashboard(std::move(*reader), {});
    const std::string key = "batch=8;benchmark=model0;gpu=NVIDIA A100;branch=main";
    std::string encoded;
    for (const char c : key) encoded += std::isalnum(static_cast<unsigned char>(c)) ? std::string(1, c) : fmt::format("%{:02X}", static_cast<unsigned char>(c));
    const std::int64_t last_run = db->count_runs();
    const std::pair<const char*, std::string> pages[] = {
        {"overview (page 1 of the series)", "/"},
        {"series: the run's GPU time", "/series?key=" + encoded},
        {"series: a kernel's duration", "/series?key=" + encoded + "&entity=gemm"},
        {"regressions (open)", "/regressions"},
        {"run page", fmt::format("/run/{}", last_run)},
    };
    fmt::print("{} runs on {}:\n", last_run, dashboard.db().name());
    for (const auto& [label, target] : pages) {
        std::vector<double> ms;
        std::uint64_t statements = 0;
        std::size_t bytes = 0;
        double first = 0;
        for (int i = 0; i < 6; ++i) {
            HttpRequest request;
            request.method = "GET";
            request.target = target;
            const std::uint64_t before = dashboard.db().statements_run();
            const auto t0 = Clock::now();
            auto response = dashboard.handle(request);
            const double took = std::chrono::duration<double, std::milli>(Clock::now() - t0).count();
            if (i == 0) first = took;
            else ms.push_back(took);
            statements = dashboard.db().statements_run() - before;
            if (!response || response->status != 200) {
                fmt::print(stderr, "{}: status {}\n", target, response ? response->status : 0);
                return 1;
            }
            bytes = response->body.size();
        }
        fmt::print("  {:<34} {:8.1f} ms server time (median of 5; first {:.1f} ms), {:3} statements, {:7.1f} KB\n", label,
                   median_ms(ms), first, statements, static_cast<double>(bytes) / 1024);
    }
    return 0;
}
