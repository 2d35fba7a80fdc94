#include <gtest/gtest.h>

#include <sstream>

#include <fmt/format.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <map>
#include <regex>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "tests/support.hpp"

namespace perfwatch {

namespace fs = std::filesystem;
using namespace std::chrono_literals;

namespace {

const std::string k_walker = std::string(PERFWATCH_SOURCE_DIR) + "/tests/fixtures/jobs/walk_job.py";

std::vector<std::string> files_in(const fs::path& dir, const std::string& ending) {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(dir))
        if (e.path().string().ends_with(ending)) out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
}

// `perfwatch check --format json` on `files` into `db`: the parsed document.
nlohmann::json check(const std::string& db, const std::vector<std::string>& files) {
    std::vector<std::string> args{"check", "--db", db, "--format", "json"};
    args.insert(args.end(), files.begin(), files.end());
    const auto r = test::run_perfwatch(args);
    EXPECT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
    return nlohmann::json::parse(r.out);
}

// The rank entities of stored run `id` (a job's run): rank number -> metrics.
std::map<std::string, nlohmann::json> ranks_of(const std::string& db, std::int64_t id) {
    const auto shown = test::run_perfwatch({"show", "--db", db, std::to_string(id), "--format", "json"});
    EXPECT_EQ(shown.exit_code, 0) << shown.err;
    std::map<std::string, nlohmann::json> out;
    const auto doc = nlohmann::json::parse(shown.out);
    for (const auto& e : doc["entities"])
        if (e["kind"] == "rank") out[e["name"].get<std::string>().substr(5)] = e["metrics"];
    return out;
}

std::vector<std::int64_t> job_runs(const nlohmann::json& doc) {
    std::vector<std::int64_t> out;
    for (const auto& r : doc["runs"])
        if (r["format"] == "job") out.push_back(r["id"].get<std::int64_t>());
    return out;
}

// Every figure the walker gives equals perfwatch's for the same rank (times within 5 ns: both
// sum microsecond fractions in doubles).
void expect_same_figures(const std::string& what, const nlohmann::json& walked,
                         const std::map<std::string, nlohmann::json>& own) {
    ASSERT_EQ(walked.size(), own.size()) << what;
    for (const auto& [rank, figures] : walked.items()) {
        ASSERT_TRUE(own.contains(rank)) << what << ": no rank " << rank;
        const nlohmann::json& mine = own.at(rank);
        for (const auto& [name, value] : figures.items()) {
            const double expected = value.get<double>();
            const double got = mine.contains(name) ? mine[name].get<double>() : 0.0;
            EXPECT_NEAR(got, expected, std::max(5.0, 1e-9 * std::abs(expected)))
                << what << ", rank " << rank << ": " << name;
        }
    }
}

}  // namespace

// Both corpus jobs, read by perfwatch and by walk_job.py (Python's json only): per rank, the
// kernel-type times, exposed communication, collectives, HTA's idle categories, the wait in
// collectives and the last arrivals are the same.
TEST(Jobs, PerRankFiguresOfBothCorpusJobsEqualAnIndependentReading) {
    const auto jobs = test::jobs_dir();
    if (!jobs) GTEST_SKIP() << "jobs not found (../shared/jobs or $PERFWATCH_JOBS)";
    test::TempDir dir;

    const auto dlrm = files_in(*jobs / "param_dlrm_kineto_8ranks", ".pt.trace.json");
    ASSERT_EQ(dlrm.size(), 8u);
    const auto doc = check(dir.file("dlrm.db"), dlrm);
    const auto ids = job_runs(doc);
    ASSERT_EQ(ids.size(), 1u) << doc.dump();
    std::vector<std::string> walk{"/usr/bin/python3", k_walker};
    walk.insert(walk.end(), dlrm.begin(), dlrm.end());
    const auto walked = test::run_program(walk);
    ASSERT_EQ(walked.exit_code, 0) << walked.err;
    const auto walked_dlrm = nlohmann::json::parse(walked.out);
    expect_same_figures("DLRM", walked_dlrm, ranks_of(dir.file("dlrm.db"), ids[0]));
    // The job's HTML report: one row per rank, its last arrivals as the walker counts them.
    const auto html = test::run_perfwatch({"report", std::to_string(ids[0]), "--db", dir.file("dlrm.db"), "--html",
                                           dir.file("job.html")});
    ASSERT_EQ(html.exit_code, 0) << html.err;
    const std::string page = test::read_file(dir.file("job.html"));
    EXPECT_NE(page.find("<h2>Ranks of the job</h2>"), std::string::npos);
    for (const auto& [rank, f] : walked_dlrm.items()) {
        const std::regex row(fmt::format("<tr><td>rank {}</td>(<td>[^<]*</td>){{6}}<td>{}</td>", rank,
                                         f["last_arrivals"].get<int>()));
        EXPECT_TRUE(std::regex_search(page, row)) << "rank " << rank;
    }

    // The point-to-point benchmark: the first three windows of each rank that ran kernels (ranks 1
    // and 2 begin with a window of CPU work only), one job per window.
    const fs::path p2p = *jobs / "validation-studies_p2p_4xT4";
    std::vector<std::vector<std::string>> windows(3);
    std::vector<std::string> all;
    const std::regex kernel_event("\"cat\":\\s*\"kernel\"");
    for (int rank = 0; rank < 4; ++rank) {
        std::vector<std::string> files;
        for (const std::string& f : files_in(p2p / fmt::format("rank_{}", rank), ".json.gz"))
            if (files.size() < 3 && std::regex_search(test::read_maybe_gzip(f), kernel_event)) files.push_back(f);
        ASSERT_EQ(files.size(), 3u);
        for (std::size_t w = 0; w < 3; ++w) {
            windows[w].push_back(files[w]);
            all.push_back(files[w]);
        }
    }
    const auto p2p_doc = check(dir.file("p2p.db"), all);
    const auto p2p_ids = job_runs(p2p_doc);
    ASSERT_EQ(p2p_ids.size(), 3u) << p2p_doc.dump();
    for (std::size_t w = 0; w < 3; ++w) {
        std::vector<std::string> args{"/usr/bin/python3", k_walker};
        args.insert(args.end(), windows[w].begin(), windows[w].end());
        const auto window = test::run_program(args);
        ASSERT_EQ(window.exit_code, 0) << window.err;
        expect_same_figures(fmt::format("p2p window {}", w), nlohmann::json::parse(window.out),
                            ranks_of(dir.file("p2p.db"), p2p_ids[w]));
    }
    // The job view names its ranks, and `job list` the three jobs of the windows.
    const auto listed = test::run_perfwatch({"job", "list", "--db", dir.file("p2p.db")});
    ASSERT_EQ(listed.exit_code, 0) << listed.err;
    EXPECT_NE(listed.out.find("3 job(s)"), std::string::npos) << listed.out;
    EXPECT_NE(listed.out.find("ranks 0-3 of 4"), std::string::npos) << listed.out;
}

// Verdicts of the straggler rule on the DLRM job: copies in which one rank's computation before
// its first collective is made longer (that kernel lengthened, the rank's later events moved; every
// other rank's events kept) must name that rank; the unchanged job names only the ranks the walker
// finds arriving last at half the collectives or more. Precision and recall are printed.
TEST(Jobs, AStragglerInjectedIntoTheDlrmJobIsNamed) {
    const auto jobs = test::jobs_dir();
    if (!jobs) GTEST_SKIP() << "jobs not found (../shared/jobs or $PERFWATCH_JOBS)";
    test::TempDir dir;
    const auto dlrm = files_in(*jobs / "param_dlrm_kineto_8ranks", ".pt.trace.json");
    ASSERT_EQ(dlrm.size(), 8u);
    // Every variant's ranks in one check: each variant is its own folder, so its own job.
    std::vector<std::string> all;
    std::map<std::string, int> variant_rank;  // folder -> the slowed rank (-1: unchanged)
    const fs::path unchanged_dir = dir.path() / "unchanged";
    fs::create_directories(unchanged_dir);
    for (const std::string& f : dlrm) {
        fs::copy_file(f, unchanged_dir / fs::path(f).filename());
        all.push_back((unchanged_dir / fs::path(f).filename()).string());
    }
    variant_rank["unchanged"] = -1;
    constexpr double k_delay_us = 3000;
    // Four of the eight ranks slowed in turn (first, last and two between): each check of 8 ranks
    // costs seconds under the sanitizers.
    for (const int rank : {0, 2, 5, 7}) {
        const std::string name = fmt::format("slowed-w{}", rank);
        std::vector<std::string> args{"/usr/bin/python3", k_walker, "--slow", std::to_string(rank),
                                      fmt::format("{}", k_delay_us), dir.file(name)};
        args.insert(args.end(), dlrm.begin(), dlrm.end());
        const auto made = test::run_program(args);
        ASSERT_EQ(made.exit_code, 0) << made.err;
        for (const std::string& f : files_in(dir.path() / name, ".json")) all.push_back(f);
        variant_rank[name] = rank;
    }
    const auto doc = check(dir.file("verdicts.db"), all);
    std::map<std::int64_t, std::string> variant_of;  // job run -> folder (its benchmark label)
    for (const auto& r : doc["runs"])
        if (r["format"] == "job") variant_of[r["id"].get<std::int64_t>()] = r["labels"]["benchmark"];
    ASSERT_EQ(variant_of.size(), 5u) << doc["runs"].dump();
    std::map<std::string, std::map<std::string, std::string>> named;  // folder -> rank -> message
    for (const auto& f : doc["findings"])
        if (f["rule"] == "job-straggler")
            named[variant_of.at(f["run"].get<std::int64_t>())][f["entity"]["name"].get<std::string>().substr(5)] =
                f["message"];

    // The unchanged job: the walker's ranks arriving last at >= half of the collectives.
    std::vector<std::string> walk{"/usr/bin/python3", k_walker};
    walk.insert(walk.end(), dlrm.begin(), dlrm.end());
    const auto walked = nlohmann::json::parse(test::run_program(walk).out);
    std::set<std::string> late, unchanged;
    for (const auto& [rank, f] : walked.items())
        if (2 * f["last_arrivals"].get<int>() >= f["collectives"].get<int>()) late.insert(rank);
    for (const auto& [rank, message] : named["unchanged"]) unchanged.insert(rank);
    EXPECT_EQ(unchanged, late);
    EXPECT_FALSE(late.empty());

    int variants = 0, found = 0, findings = 0, false_findings = 0;
    std::string table = "variant     straggler findings\n";
    for (const auto& [folder, rank] : variant_rank) {
        if (rank < 0) continue;
        ++variants;
        std::string names;
        for (const auto& [r, message] : named[folder]) {
            names += "rank " + r + " ";
            ++findings;
            // Not false: the slowed rank, or one the unchanged job already names.
            if (r != std::to_string(rank) && !late.contains(r)) ++false_findings;
        }
        if (auto it = named[folder].find(std::to_string(rank)); it != named[folder].end()) {
            ++found;
            // Its extra computation is what the message names.
            EXPECT_NE(it->second.find("take more time than the median rank's"), std::string::npos) << it->second;
        }
        table += fmt::format("{:<11} {}\n", folder, names);
    }
    const double recall = 100.0 * found / variants;
    const double precision = findings == 0 ? 100.0 : 100.0 * (findings - false_findings) / findings;
    std::cout << table << fmt::format("straggler verdicts: {} variants, recall {:.1f}%, precision {:.1f}%\n", variants,
                                      recall, precision);
    EXPECT_GE(recall, 90.0) << table;
    EXPECT_EQ(false_findings, 0) << table;
}

// Eight rank files arriving over several seconds: the daemon waits for all of them, then judges
// the job once and sends one message, carrying the job's finding and the ranks' findings merged.
TEST(Jobs, EightRankFilesArrivingOverSecondsGiveOneJobAndOneMessage) {
    const auto jobs = test::jobs_dir();
    if (!jobs) GTEST_SKIP() << "jobs not found (../shared/jobs or $PERFWATCH_JOBS)";
    const auto dlrm = files_in(*jobs / "param_dlrm_kineto_8ranks", ".pt.trace.json");
    ASSERT_EQ(dlrm.size(), 8u);
    test::TempDir dir;
    const fs::path reports = dir.path() / "reports", db = dir.path() / "perfwatch.db";
    fs::create_directories(reports);
    test::write_file(dir.path() / "perfwatch.yaml",
                     fmt::format("database: perfwatch.db\nwatch:\n  - path: {}\nlisten: off\nquiet_period: 200ms\n"
                                 "receivers:\n  - {{name: archive, type: jsonl, path: alerts.jsonl}}\nroute:\n"
                                 "  receiver: archive\n",
                                 reports.string()));
    test::BackgroundProcess daemon({"daemon", "--config", dir.file("perfwatch.yaml")}, dir.file("daemon.log"));
    ASSERT_TRUE(daemon.wait_for_log("ready:", 30)) << daemon.log();
    const fs::path job_dir = reports / "dlrm";
    fs::create_directories(job_dir);
    for (std::size_t i = 0; i < dlrm.size(); ++i) {
        fs::copy_file(dlrm[i], job_dir / fs::path(dlrm[i]).filename());
        if (i + 1 < dlrm.size()) std::this_thread::sleep_for(500ms);
    }
    ASSERT_TRUE(daemon.wait_for_log("job run ", 60)) << daemon.log();
    ASSERT_TRUE(test::eventually([&] { return fs::exists(dir.path() / "alerts.jsonl"); }, 30s)) << daemon.log();
    // Every rank stored and judged before the job: nothing else may follow.
    ASSERT_TRUE(test::eventually([&] { return test::query_int(db, "SELECT count(*) FROM runs WHERE processed_at IS NULL") == 0; }, 30s));
    std::this_thread::sleep_for(1500ms);
    std::vector<nlohmann::json> lines;
    {
        std::ifstream in(dir.file("alerts.jsonl"));
        for (std::string line; std::getline(in, line);) lines.push_back(nlohmann::json::parse(line));
    }
    ASSERT_EQ(lines.size(), 1u) << daemon.log();
    EXPECT_EQ(test::query_int(db, "SELECT count(*) FROM runs WHERE format = 'job'"), 1);
    EXPECT_EQ(test::query_int(db, "SELECT count(*) FROM job_ranks"), 8);
    EXPECT_EQ(test::query_int(db, "SELECT count(*) FROM outbox"), 1);
    const std::string text = lines[0].dump();
    EXPECT_NE(text.find("job-straggler"), std::string::npos) << text;
    EXPECT_NE(text.find("rank 7"), std::string::npos) << text;
    // A rank's finding found on several ranks is said once, naming them.
    EXPECT_NE(text.find("on ranks "), std::string::npos) << text;
    EXPECT_NE(daemon.log().find("job run 9: ranks 0-7 of 8"), std::string::npos) << daemon.log();
    daemon.signal(SIGTERM);
    EXPECT_EQ(daemon.wait_exit(10), 0);

    // The dashboard shows the job as one run with its 8 ranks, each linking to its own run, with
    // the share of collectives each reached last as stored.
    test::BackgroundProcess serve({"serve", "--db", db.string(), "--listen", "127.0.0.1:0"}, dir.file("serve.log"));
    ASSERT_TRUE(serve.wait_for_log("dashboard of", 20)) << serve.log();
    ASSERT_NE(serve.logged_port(), 0) << serve.log();
    const auto page = test::http_get(serve.logged_port(), "/run/9");
    ASSERT_EQ(page.status, 200) << page.body;
    const std::string ranks = page.body.substr(page.body.find("<table id=\"ranks\""));
    const std::string table = ranks.substr(0, ranks.find("</table>"));
    const std::regex row("<tr><td>rank ");
    EXPECT_EQ(std::distance(std::sregex_iterator(table.begin(), table.end(), row), std::sregex_iterator()), 8) << table;
    for (int rank = 0; rank < 8; ++rank) {
        const std::int64_t member = test::query_int(db, fmt::format("SELECT run_id FROM job_ranks WHERE job_run = 9 AND rank_no = {}", rank));
        EXPECT_NE(ranks.find(fmt::format("<tr><td>rank {}</td><td><a href=\"/run/{}\">", rank, member)), std::string::npos) << ranks;
    }
    // Rank 7's row: its share of last arrivals in tenths of a percent, as the database holds it.
    const std::int64_t tenths = test::query_int(
        db, "SELECT CAST(round(m.value * 10) AS INTEGER) FROM entities e JOIN metrics m ON m.entity_id = e.id "
            "WHERE e.run_id = 9 AND e.kind = 'rank' AND e.name = 'rank 7' AND m.name = 'last_arrival_pct'");
    const std::string row7 = ranks.substr(ranks.find("<tr><td>rank 7</td>"));
    EXPECT_NE(row7.substr(0, row7.find("</tr>")).find(fmt::format("<td class=\"num\">{}.{}%</td>", tenths / 10, tenths % 10)),
              std::string::npos)
        << row7;

    // Its Reproduce command checks the 8 rank files (not the directory), and it runs.
    const std::string commands = page.body.substr(page.body.find("<pre class=\"box mono\" id=\"commands\">"));
    const std::size_t check_at = commands.find("perfwatch check ");
    ASSERT_NE(check_at, std::string::npos) << commands;
    std::istringstream words(commands.substr(check_at, commands.find('\n', check_at) - check_at));
    std::vector<std::string> argv{PERFWATCH_BINARY};
    for (std::string w; words >> w;)
        if (w != "perfwatch") argv.push_back(w);
    ASSERT_EQ(argv.size(), 10u) << commands;
    for (std::size_t i = 2; i < argv.size(); ++i) EXPECT_TRUE(fs::is_regular_file(argv[i])) << argv[i];
    EXPECT_NE(test::run_program(argv).exit_code, 2);
    // The overview shows the job as one row: its 8 ranks' series are folded into it (and listed
    // on request).
    const auto overview = test::http_get(serve.logged_port(), "/");
    const auto rows = [](const std::string& body) {
        std::size_t n = 0;
        for (std::size_t at = body.find("<tr data-series="); at != std::string::npos; at = body.find("<tr data-series=", at + 1)) ++n;
        return n;
    };
    EXPECT_EQ(rows(overview.body), 1u) << overview.body;
    EXPECT_NE(overview.body.find("<td>job</td>"), std::string::npos);
    EXPECT_NE(overview.body.find("8 series of distributed jobs' ranks are shown as their jobs"), std::string::npos);
    EXPECT_EQ(rows(test::http_get(serve.logged_port(), "/?ranks=1").body), 9u);
    // Its series opens on the job's step time, which jobs have, and the overview draws it.
    const auto port = serve.logged_port();
    const std::size_t series_at = page.body.find("href=\"/series?key=");
    ASSERT_NE(series_at, std::string::npos);
    std::string series_link = page.body.substr(series_at + 6, page.body.find('"', series_at + 6) - series_at - 6);
    for (std::size_t at = series_link.find("&amp;"); at != std::string::npos; at = series_link.find("&amp;")) series_link.replace(at, 5, "&");
    const auto series = test::http_get(port, series_link);
    ASSERT_EQ(series.status, 200);
    EXPECT_NE(series.body.find("<h2>job_step_time of the run</h2>"), std::string::npos) << series.body.substr(0, 3000);
    EXPECT_NE(series.body.find("data-run=\"9\""), std::string::npos) << "the job run is a point of its chart";
}

}  // namespace perfwatch

namespace perfwatch {

// One rank's trace of an 8-rank job cannot measure the wait for the last rank or the compute
// imbalance (both compare ranks): the job's run leaves them out and the view says why, where it
// used to print "waiting for the last rank 0.00 ns (0.0%)".
TEST(Jobs, OneRankAloneClaimsNoWaitForTheLastRank) {
    const auto jobs = test::jobs_dir();
    if (!jobs) GTEST_SKIP() << "no jobs at ../shared/jobs";
    const std::string rank0 = files_in(*jobs / "param_dlrm_kineto_8ranks", ".pt.trace.json").front();
    test::TempDir dir;
    const std::string db = dir.file("pw.db");
    const auto r = test::run_perfwatch({"check", "--db", db, rank0});
    ASSERT_TRUE(r.exit_code == 0 || r.exit_code == 1) << r.err;
    EXPECT_NE(r.out.find("the wait for the last rank and the compute imbalance need the other ranks' traces"),
              std::string::npos)
        << r.out;
    EXPECT_EQ(r.out.find("waiting for the last rank 0.00"), std::string::npos) << r.out;
    const std::int64_t job = test::query_int(db, "SELECT id FROM runs WHERE format = 'job'");
    const auto shown = nlohmann::json::parse(test::run_perfwatch({"show", "--db", db, std::to_string(job), "--format", "json"}).out);
    for (const auto& e : shown["entities"]) {
        EXPECT_FALSE(e["metrics"].contains("comm_wait_pct")) << e["name"];
        EXPECT_FALSE(e["metrics"].contains("collective_wait_time")) << e["name"];
        EXPECT_FALSE(e["metrics"].contains("compute_imbalance_pct")) << e["name"];
    }
}

}  // namespace perfwatch
