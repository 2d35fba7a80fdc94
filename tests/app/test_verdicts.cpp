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

#include <SQLiteCpp/SQLiteCpp.h>
#include <yaml-cpp/yaml.h>

namespace perfwatch {

namespace {

// A concern's figure on the run, the shipped threshold it is judged against, and its labels.
struct ThresholdCase {
    std::string concern;
    std::string figure;              // run metric the rules compare with the threshold
    double shipped = 0;              // the rules' `let:` value
    std::map<std::string, double> value;
    std::map<std::string, bool> worth;  // acting on it gains k_worth of the step or more (measured)
    std::map<std::string, bool> fired;  // perfwatch check raised the concern
};

struct Tally {
    int tp = 0, fp = 0, fn = 0, tn = 0;
    void add(bool got, bool want) { ++(got ? (want ? tp : fp) : (want ? fn : tn)); }
    double precision() const { return tp + fp > 0 ? 100.0 * tp / (tp + fp) : 100.0; }
    double recall() const { return tp + fn > 0 ? 100.0 * tp / (tp + fn) : 100.0; }
    int right() const { return tp + tn; }
};

// A rule's `let:` value in a shipped rule file.
double shipped_let(const std::string& file, const std::string& rule, const std::string& key) {
    const YAML::Node doc = YAML::LoadFile(std::string(PERFWATCH_SOURCE_DIR) + "/rules/" + file);
    for (const auto& r : doc["rules"])
        if (r["id"].as<std::string>() == rule) return r["let"][key].as<double>();
    ADD_FAILURE() << rule << " not in " << file;
    return 0;
}

Tally judge(const ThresholdCase& c, const std::vector<std::string>& part, double threshold) {
    Tally t;
    for (const auto& name : part) t.add(c.value.at(name) >= threshold, c.worth.at(name));
    return t;
}

// The whole-percent threshold that labels `part` best; of equals, the nearest to the shipped one.
double choose(const ThresholdCase& c, const std::vector<std::string>& part) {
    double best = c.shipped;
    int best_right = judge(c, part, best).right();
    for (int t = 0; t <= 100; ++t) {
        const int right = judge(c, part, t).right();
        if (right > best_right || (right == best_right && std::abs(t - c.shipped) < std::abs(best - c.shipped))) {
            best = t;
            best_right = right;
        }
    }
    return best;
}

}  // namespace

// Thresholds chosen on one half of a sweep and reported on the other, with labels that are not
// thresholds: tests/fixtures/h100/sweep holds 37 PyTorch traces made on an H100 by
// tools/gpu_fixtures/sweep.py, each with what acting on the concern measurably gains, timed without
// the profiler: the step as a CUDA Graph against eager (launch-bound), the bursts without the host's
// sleep (host gaps). A concern is worth raising where that gain is 15% of the step or more. For each
// concern the whole-percent threshold on its figure that labels the traces at even places (sorted by
// name) best is chosen, nearest the shipped one of equals, and reported on the odd places; then the
// halves swap. The shipped threshold must be the one the first half chooses, and perfwatch check's
// own verdicts (every condition of the rules) are printed over all traces.
TEST(Verdicts, TimelineThresholdsChosenOnHalfAMeasuredSweepHoldOnTheOtherHalf) {
    const std::string sweep = std::string(PERFWATCH_SOURCE_DIR) + "/tests/fixtures/h100/sweep";
    std::ifstream manifest_in(sweep + "/sweep_manifest.json");
    const auto manifest = nlohmann::json::parse(manifest_in);
    constexpr double k_worth = 0.15;

    const double launch_threshold = shipped_let("launch_bound.yaml", "launch-gpu-idle", "min_launch_idle_pct");
    // Every launch-bound rule judges the launch gaps' share against one threshold.
    EXPECT_EQ(shipped_let("launch_bound.yaml", "launch-short-kernels", "min_idle_pct"), launch_threshold);
    EXPECT_EQ(shipped_let("launch_bound.yaml", "launch-many-kernels-per-iteration", "min_idle_pct"), launch_threshold);
    EXPECT_EQ(shipped_let("launch_bound.yaml", "many-kernels-per-iteration", "min_idle_pct"), launch_threshold);
    std::vector<ThresholdCase> cases{
        {"launch-bound", "idle_launch_pct", launch_threshold, {}, {}, {}},
        {"host-gaps", "idle_host_gaps_pct",
         shipped_let("timeline.yaml", "timeline-idle-between-bursts", "min_share_pct"), {}, {}, {}}};

    std::vector<std::string> files;
    std::vector<std::string> names;
    for (const auto& [name, facts] : manifest["traces"].items()) {
        names.push_back(name);
        files.push_back(sweep + "/sweep_" + name + ".json.gz");
        cases[0].worth[name] = facts["graph_saves"].get<double>() >= k_worth;
        cases[1].worth[name] = facts.value("sleep_saves", 0.0) >= k_worth;
    }
    ASSERT_GE(names.size(), 30u);

    test::TempDir dir;
    std::vector<std::string> args{"check", "--db", dir.file("sweep.db"), "--format", "json"};
    args.insert(args.end(), files.begin(), files.end());
    const auto r = test::run_perfwatch(args);
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
    const auto doc = nlohmann::json::parse(r.out);
    std::map<std::int64_t, std::string> run_name;
    for (const auto& run : doc["runs"]) {
        const std::string source = std::filesystem::path(run["source"].get<std::string>()).filename().string();
        run_name[run["id"].get<std::int64_t>()] = source.substr(6, source.size() - 6 - 8);  // sweep_NAME.json.gz
    }
    ASSERT_EQ(run_name.size(), names.size());
    for (auto& c : cases) {
        for (const auto& name : names) c.fired[name] = false;
        for (const auto& f : doc["findings"])
            if (f["labels"].value("concern", "") == c.concern) c.fired[run_name.at(f["run"].get<std::int64_t>())] = true;
    }
    SQLite::Database db(dir.file("sweep.db"), SQLite::OPEN_READONLY);
    SQLite::Statement figures(db,
                              "SELECT e.run_id, m.name, m.value FROM entities e JOIN metrics m ON m.entity_id = e.id "
                              "WHERE e.kind = 'run' AND m.name IN ('idle_launch_pct', 'idle_host_gaps_pct')");
    while (figures.executeStep()) {
        const std::string& name = run_name.at(figures.getColumn(0).getInt64());
        for (auto& c : cases)
            if (c.figure == figures.getColumn(1).getString()) c.value[name] = figures.getColumn(2).getDouble();
    }

    std::cout << fmt::format("{:<13} {:<11} {:>6} {:>8}   {:>15} {:>15}\n", "concern", "chosen on", "chosen", "shipped",
                             "held out: P / R", "shipped: P / R");
    for (const auto& c : cases) {
        ASSERT_EQ(c.value.size(), names.size()) << c.figure << " missing on some trace";
        std::array<std::vector<std::string>, 2> half;
        for (std::size_t i = 0; i < names.size(); ++i) half[i % 2].push_back(names[i]);
        for (int fold = 0; fold < 2; ++fold) {
            const auto& train = half[static_cast<std::size_t>(fold)];
            const auto& held = half[static_cast<std::size_t>(1 - fold)];
            const double chosen = choose(c, train);
            const Tally at_chosen = judge(c, held, chosen);
            const Tally at_shipped = judge(c, held, c.shipped);
            std::cout << fmt::format("{:<13} {:<11} {:>6.0f} {:>8.0f}   {:>6.1f} / {:>5.1f}  {:>6.1f} / {:>5.1f}\n",
                                     c.concern, fold == 0 ? "even half" : "odd half", chosen, c.shipped,
                                     at_chosen.precision(), at_chosen.recall(), at_shipped.precision(),
                                     at_shipped.recall());
            if (fold == 0) EXPECT_EQ(c.shipped, chosen) << c.concern << ": the shipped threshold is not the one the even half chooses";
            EXPECT_GE(at_chosen.precision(), 90.0) << c.concern;
            EXPECT_GE(at_chosen.recall(), 90.0) << c.concern;
        }
        Tally verdicts;
        for (const auto& name : names) {
            verdicts.add(c.fired.at(name), c.worth.at(name));
            if (c.fired.at(name) != c.worth.at(name))
                std::cout << fmt::format("  {} on {}: raised {}, measured gain {}, {} {:.2f}\n", c.concern, name,
                                         c.fired.at(name), c.worth.at(name) ? "worth it" : "not worth it", c.figure,
                                         c.value.at(name));
        }
        std::cout << fmt::format("{:<13} perfwatch check on all {}: tp {} fp {} fn {} tn {}: precision {:.1f}%, "
                                 "recall {:.1f}%\n",
                                 c.concern, names.size(), verdicts.tp, verdicts.fp, verdicts.fn, verdicts.tn,
                                 verdicts.precision(), verdicts.recall());
        EXPECT_GE(verdicts.precision(), 90.0) << c.concern;
        EXPECT_GE(verdicts.recall(), 90.0) << c.concern;
    }
}

}  // namespace perfwatch
