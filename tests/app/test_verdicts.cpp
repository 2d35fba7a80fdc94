#include <gtest/gtest.h>

#include <fmt/format.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <tuple>
#include <utility>

#include "tests/support.hpp"

namespace perfwatch {

namespace {

struct Verdict {
    std::string report;            // corpus:PATH or fixture:PATH
    std::vector<std::string> figures;  // as walk_kineto.py prints them
    std::map<std::string, bool> expected;  // concern -> fires
};

std::vector<std::string> split_tabs(const std::string& line) {
    std::vector<std::string> out;
    std::stringstream in(line);
    for (std::string field; std::getline(in, field, '\t');) out.push_back(field);
    if (!line.empty() && line.back() == '\t') out.emplace_back();
    return out;
}

const std::string k_table = std::string(PERFWATCH_SOURCE_DIR) + "/tests/fixtures/verdicts/kineto_timeline.tsv";
// Figures per trace, as walk_kineto.py prints them after the file name.
constexpr std::size_t k_figures = 8;

std::vector<Verdict> read_table() {
    std::vector<Verdict> out;
    std::ifstream in(k_table);
    std::vector<std::string> header;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line.starts_with("#")) continue;
        const auto fields = split_tabs(line);
        if (header.empty()) {
            header = fields;
            continue;
        }
        Verdict v;
        v.report = fields.at(0);
        v.figures.assign(fields.begin() + 1, fields.begin() + 1 + k_figures);
        v.expected["launch-bound"] = fields.at(1 + k_figures) == "yes";
        v.expected["host-ahead"] = fields.at(2 + k_figures) == "yes";
        v.expected["startup"] = fields.at(3 + k_figures) == "yes";
        v.expected["host-gaps"] = fields.at(4 + k_figures) == "yes";
        out.push_back(std::move(v));
    }
    return out;
}

std::string path_of(const std::string& report, const std::filesystem::path& corpus) {
    if (report.starts_with("corpus:")) return (corpus / report.substr(7)).string();
    return std::string(PERFWATCH_SOURCE_DIR) + "/tests/fixtures/" + report.substr(8);
}

}  // namespace

// The labelled verdict table of timeline findings (launch-bound, host ahead, start-up, host gaps):
// its figures are recomputed from the files by walk_kineto.py (so the table cannot go stale),
// perfwatch check runs on each trace, and precision and recall per concern are printed; both must
// be 100%.
TEST(Verdicts, TimelineConcernsHoldOnEveryCorpusTrace) {
    const auto corpus = test::corpus_dir();
    if (!corpus) GTEST_SKIP() << "corpus not found (../shared/corpus or $PERFWATCH_CORPUS)";
    const auto table = read_table();
    ASSERT_GE(table.size(), 10u);

    std::vector<std::string> walk{"/usr/bin/python3",
                                  std::string(PERFWATCH_SOURCE_DIR) + "/tests/fixtures/verdicts/walk_kineto.py"};
    for (const Verdict& v : table) walk.push_back(path_of(v.report, *corpus));
    const auto walked = test::run_program(walk);
    ASSERT_EQ(walked.exit_code, 0) << walked.err;
    std::stringstream lines(walked.out);
    std::map<std::string, std::vector<std::string>> walker;  // report -> walk_kineto.py's figures
    for (const Verdict& v : table) {
        std::string line;
        ASSERT_TRUE(std::getline(lines, line));
        const auto fields = split_tabs(line);
        ASSERT_GE(fields.size(), 1 + k_figures) << line;
        walker[v.report].assign(fields.begin() + 1, fields.begin() + 1 + k_figures);
        EXPECT_EQ(walker[v.report], v.figures)
            << v.report << ": the table's figures differ from walk_kineto.py's; regenerate the table";
    }

    test::TempDir dir;
    std::map<std::string, std::array<int, 3>> counts;  // concern -> true positives, false positives, false negatives
    for (const Verdict& v : table) {
        const auto r = test::run_perfwatch(
            {"check", "--db", dir.file("v.db"), "--format", "json", path_of(v.report, *corpus)});
        ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << v.report << ": " << r.err;
        std::set<std::string> fired;
        const auto doc = nlohmann::json::parse(r.out);
        // perfwatch's own figures of the run, printed as the walker prints them, equal the walker's.
        // One run of the trace (a rank of a distributed job also gets its job's own run).
        std::vector<std::int64_t> trace_runs;
        for (const auto& run : doc["runs"])
            if (run["format"] != "job") trace_runs.push_back(run["id"].get<std::int64_t>());
        ASSERT_EQ(trace_runs.size(), 1u) << v.report;
        const auto shown = test::run_perfwatch({"show", "--db", dir.file("v.db"), std::to_string(trace_runs[0]),
                                                "--format", "json"});
        ASSERT_EQ(shown.exit_code, 0) << shown.err;
        nlohmann::json run_metrics;
        const auto shown_doc = nlohmann::json::parse(shown.out);
        for (const auto& e : shown_doc["entities"])
            if (e["kind"] == "run") run_metrics = e["metrics"];
        const auto figure = [&](const char* metric, const char* spec, double scale, const std::string& missing) {
            if (!run_metrics.contains(metric)) return missing;
            return fmt::format(fmt::runtime(spec), run_metrics[metric].get<double>() * scale);
        };
        const std::vector<std::string> own{figure("idle_pct", "{:.2f}", 1, ""),
                                           figure("launches", "{:.0f}", 1, "0"),
                                           figure("short_launch_pct", "{:.2f}", 1, ""),
                                           figure("launch_delay_outliers", "{:.0f}", 1, "0"),
                                           figure("launch_delay_max", "{:.1f}", 1e-3, ""),
                                           figure("launches_per_iteration", "{:.1f}", 1, "0"),
                                           figure("idle_startup_pct", "{:.2f}", 1, ""),
                                           figure("idle_host_gaps_pct", "{:.2f}", 1, "")};
        // Equal up to one unit of the walker's last printed digit (both round a binary fraction).
        const std::vector<std::string>& walked_figures = walker[v.report];
        ASSERT_EQ(own.size(), walked_figures.size());
        for (std::size_t i = 0; i < own.size(); ++i) {
            const std::string& w = walked_figures[i];
            const auto dot = w.find('.');
            const double unit = dot == std::string::npos ? 0.0 : std::pow(10.0, -static_cast<double>(w.size() - dot - 1));
            const bool same = own[i] == w || (!own[i].empty() && !w.empty() &&
                                               std::abs(std::stod(own[i]) - std::stod(w)) <= unit + 1e-9);
            EXPECT_TRUE(same) << v.report << ": perfwatch's figure " << i << " (idle %, launches, short %, delay "
                              << "outliers, max delay us, launches per iteration, start-up idle %, host-gap idle %) is " << own[i] << ", the walker's "
                              << walked_figures[i];
        }
        for (const auto& f : doc["findings"])
            if (f["labels"].contains("concern")) fired.insert(f["labels"]["concern"].get<std::string>());
        for (const auto& [concern, expected] : v.expected) {
            const bool got = fired.contains(concern);
            auto& c = counts[concern];
            if (got && expected) ++c[0];
            if (got && !expected) ++c[1];
            if (!got && expected) ++c[2];
            EXPECT_EQ(got, expected) << v.report << ": concern " << concern;
        }
    }
    std::cout << fmt::format("{:<14} {:>3} {:>3} {:>3} {:>10} {:>8}\n", "concern", "tp", "fp", "fn", "precision",
                             "recall");
    for (const auto& [concern, c] : counts) {
        const double precision = c[0] + c[1] > 0 ? 100.0 * c[0] / (c[0] + c[1]) : 100.0;
        const double recall = c[0] + c[2] > 0 ? 100.0 * c[0] / (c[0] + c[2]) : 100.0;
        std::cout << fmt::format("{:<14} {:>3} {:>3} {:>3} {:>9.1f}% {:>7.1f}%\n", concern, c[0], c[1], c[2], precision,
                                 recall);
        EXPECT_EQ(precision, 100.0) << concern;
        EXPECT_EQ(recall, 100.0) << concern;
    }
}

}  // namespace perfwatch

namespace perfwatch {

namespace {

// (report, rule, entity) of one finding; a report is "corpus:" and its path below the corpus.
using FindingKey = std::tuple<std::string, std::string, std::string>;

struct Label {
    bool truth = false;
    std::string useful;  // yes, no, or summary (a below-min_impact line: left out of usefulness)
};

}  // namespace

// Every finding perfwatch check gives on the shared corpus (each report alone, shipped rules) is a
// row of tests/fixtures/verdicts/corpus_findings.tsv, labelled by hand from the files' own figures;
// a finding without a row, or a row without a finding, fails. Prints precision and usefulness per
// rule and overall: precision at least 98% and usefulness at least 80% everywhere.
TEST(Verdicts, EveryCorpusFindingIsLabelledTrueAndMostAreWorthReading) {
    const auto corpus = test::corpus_dir();
    if (!corpus) GTEST_SKIP() << "corpus not found (../shared/corpus or $PERFWATCH_CORPUS)";
    std::map<FindingKey, std::vector<Label>> table;
    std::ifstream in(std::string(PERFWATCH_SOURCE_DIR) + "/tests/fixtures/verdicts/corpus_findings.tsv");
    bool header = true;
    for (std::string line; std::getline(in, line);) {
        if (line.empty() || line.starts_with("#")) continue;
        if (std::exchange(header, false)) continue;
        const auto f = split_tabs(line);
        ASSERT_GE(f.size(), 6u) << line;
        table[{f[0], f[1], f[2]}].push_back({f[3] == "yes", f[4]});
    }
    ASSERT_GE(table.size(), 50u);

    std::vector<std::filesystem::path> reports;
    for (const auto& e : std::filesystem::recursive_directory_iterator(*corpus))
        if (e.is_regular_file() && !e.path().filename().string().starts_with("README")) reports.push_back(e.path());
    std::sort(reports.begin(), reports.end());
    std::map<std::string, std::array<int, 4>> tally;  // rule -> findings, true, useful, judged for use
    int per_report_max = 0;
    for (const auto& path : reports) {
        test::TempDir dir;
        const auto r = test::run_perfwatch({"check", "--db", dir.file("v.db"), "--format", "json", path.string()});
        const std::string report = "corpus:" + std::filesystem::relative(path, *corpus).string();
        if (r.exit_code == 2) {
            EXPECT_NE(r.err.find("set aside"), std::string::npos) << report << ": " << r.err;
            continue;
        }
        ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << report << ": " << r.err;
        const auto doc = nlohmann::json::parse(r.out);
        per_report_max = std::max(per_report_max, static_cast<int>(doc["findings"].size()));
        for (const auto& f : doc["findings"]) {
            const FindingKey key{report, f["rule"].get<std::string>(), f["entity"]["name"].get<std::string>()};
            auto it = table.find(key);
            if (it == table.end() || it->second.empty()) {
                ADD_FAILURE() << "a finding no row labels: " << report << " / " << std::get<1>(key) << " / "
                              << std::get<2>(key) << ": " << f["message"];
                continue;
            }
            const Label label = it->second.back();
            it->second.pop_back();
            auto& t = tally[std::get<1>(key)];
            ++t[0];
            if (label.truth) ++t[1];
            if (label.useful != "summary") {
                ++t[3];
                if (label.useful == "yes") ++t[2];
            }
        }
    }
    for (const auto& [key, left] : table)
        for (std::size_t i = 0; i < left.size(); ++i)
            ADD_FAILURE() << "a labelled finding perfwatch no longer gives: " << std::get<0>(key) << " / "
                          << std::get<1>(key) << " / " << std::get<2>(key);

    std::array<int, 4> all{};
    std::cout << fmt::format("{:<36} {:>8} {:>10} {:>11}\n", "rule", "findings", "precision", "usefulness");
    const auto pct = [](int a, int b) { return b > 0 ? 100.0 * a / b : 100.0; };
    for (const auto& [rule, t] : tally) {
        std::cout << fmt::format("{:<36} {:>8} {:>9.1f}% {:>10.1f}%\n", rule, t[0], pct(t[1], t[0]), pct(t[2], t[3]));
        EXPECT_GE(pct(t[1], t[0]), 98.0) << rule;
        EXPECT_GE(pct(t[2], t[3]), 80.0) << rule;
        for (std::size_t i = 0; i < all.size(); ++i) all[i] += t[i];
    }
    std::cout << fmt::format("{:<36} {:>8} {:>9.1f}% {:>10.1f}%\n", "all", all[0], pct(all[1], all[0]), pct(all[2], all[3]))
              << fmt::format("at most {} findings on one report\n", per_report_max);
    EXPECT_GE(pct(all[1], all[0]), 98.0);
    EXPECT_GE(pct(all[2], all[3]), 80.0);
}

}  // namespace perfwatch
