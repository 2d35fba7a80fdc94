#include <gtest/gtest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <set>

#include "tests/support.hpp"

namespace perfwatch {
namespace {

namespace fs = std::filesystem;
using test::run_perfwatch;

constexpr const char* k_hostile = "<script>alert(1)</script> @channel";
constexpr const char* k_token = "dashboard-token-0123456789";

// A Kineto trace of two kernels: gemm at `gemm_us` per launch and the hostile-named one at 30 us.
std::string write_trace(const test::TempDir& dir, const std::string& name, double gemm_us, double start_us) {
    nlohmann::json events = nlohmann::json::array();
    double t = start_us;
    for (int i = 0; i < 40; ++i)
        for (const auto& [kernel, us] : {std::pair<std::string, double>{"gemm", gemm_us}, {k_hostile, 30.0}}) {
            const double d = us * (1 + 0.002 * ((i * 7) % 5 - 2));
            events.push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", kernel}, {"pid", 0}, {"tid", 7}, {"ts", t},
                              {"dur", d}, {"args", {{"device", 0}, {"stream", 7}}}});
            t += d + 5;
        }
    const nlohmann::json trace = {
        {"schemaVersion", 1},
        {"deviceProperties", {{{"id", 0}, {"name", "NVIDIA H100"}, {"computeMajor", 9}, {"computeMinor", 0}, {"numSms", 132}}}},
        {"traceEvents", events}};
    const std::string path = dir.file(name);
    fs::create_directories(fs::path(path).parent_path());
    std::ofstream(path) << trace.dump();
    return path;
}

// Every match of group 1 of `pattern` in `text`.
std::vector<std::string> all_matches(const std::string& text, const std::string& pattern) {
    std::vector<std::string> out;
    const std::regex re(pattern);
    for (auto it = std::sregex_iterator(text.begin(), text.end(), re); it != std::sregex_iterator(); ++it)
        out.push_back((*it)[1]);
    return out;
}

std::string url_encoded(const std::string& text) {
    std::string out;
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        out += std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~' ? std::string(1, static_cast<char>(c)) : fmt::format("%{:02X}", c);
    }
    return out;
}

// The port `perfwatch serve` says it listens on; 0 when its log does not say.
unsigned short serve_port(const test::BackgroundProcess& serve) { return serve.logged_port(); }

std::int64_t query_pins(const std::string& db) { return test::query_int(db, "SELECT count(*) FROM baseline_pins"); }

std::string unescape(std::string s) {
    for (const auto& [from, to] : {std::pair<std::string, std::string>{"&amp;", "&"}, {"&quot;", "\""}, {"&#39;", "'"}}) {
        for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size()))
            s.replace(at, from.size(), to);
    }
    return s;
}

// Distinct colours of an 8-bit RGB or RGBA PNG (no interlace), read with zlib.
std::size_t png_distinct_colours(const std::string& path) {
    const std::string data = test::read_file(path);
    auto be32 = [&](std::size_t at) {
        return (static_cast<std::uint32_t>(static_cast<unsigned char>(data[at])) << 24) |
               (static_cast<std::uint32_t>(static_cast<unsigned char>(data[at + 1])) << 16) |
               (static_cast<std::uint32_t>(static_cast<unsigned char>(data[at + 2])) << 8) |
               static_cast<std::uint32_t>(static_cast<unsigned char>(data[at + 3]));
    };
    std::uint32_t width = 0, height = 0;
    int channels = 0;
    std::string idat;
    for (std::size_t at = 8; at + 8 <= data.size();) {
        const std::uint32_t len = be32(at);
        const std::string type = data.substr(at + 4, 4);
        if (type == "IHDR") {
            width = be32(at + 8);
            height = be32(at + 12);
            const int colour = static_cast<unsigned char>(data[at + 17]);
            channels = colour == 6 ? 4 : colour == 2 ? 3 : 0;
            if (data[at + 16] != 8 || data[at + 20] != 0) channels = 0;
        } else if (type == "IDAT") {
            idat += data.substr(at + 8, len);
        }
        at += 12 + len;
    }
    if (channels == 0 || width == 0) return 0;
    const std::size_t stride = width * static_cast<std::size_t>(channels);
    std::string raw((stride + 1) * height, '\0');
    uLongf raw_len = static_cast<uLongf>(raw.size());
    if (uncompress(reinterpret_cast<Bytef*>(raw.data()), &raw_len, reinterpret_cast<const Bytef*>(idat.data()),
                   static_cast<uLong>(idat.size())) != Z_OK)
        return 0;
    std::vector<unsigned char> prev(stride, 0), row(stride);
    std::set<std::uint32_t> colours;
    for (std::uint32_t y = 0; y < height; ++y) {
        const unsigned char filter = static_cast<unsigned char>(raw[y * (stride + 1)]);
        for (std::size_t x = 0; x < stride; ++x) {
            const int a = x >= static_cast<std::size_t>(channels) ? row[x - static_cast<std::size_t>(channels)] : 0;
            const int b = prev[x];
            const int c = x >= static_cast<std::size_t>(channels) ? prev[x - static_cast<std::size_t>(channels)] : 0;
            int predictor = 0;
            if (filter == 1) predictor = a;
            if (filter == 2) predictor = b;
            if (filter == 3) predictor = (a + b) / 2;
            if (filter == 4) {
                const int p = a + b - c, pa = std::abs(p - a), pb = std::abs(p - b), pc = std::abs(p - c);
                predictor = pa <= pb && pa <= pc ? a : pb <= pc ? b : c;
            }
            row[x] = static_cast<unsigned char>(static_cast<unsigned char>(raw[y * (stride + 1) + 1 + x]) + predictor);
        }
        for (std::size_t x = 0; x + 2 < stride; x += static_cast<std::size_t>(channels))
            colours.insert((std::uint32_t{row[x]} << 16) | (std::uint32_t{row[x + 1]} << 8) | row[x + 2]);
        prev = row;
    }
    return colours.size();
}

}  // namespace

// The daemon serves the dashboard over a history of real corpus reports and generated runs with a
// known regression; headless Chromium drives every page: the chart's points and markers are what
// the database holds, every link resolves, a screenshot is a drawn chart, actions need the token
// and a same-origin form, and a hostile kernel name is text.
TEST(Dashboard, ChromiumDrivesEveryPageAndItShowsWhatTheDatabaseHolds) {
    if (!fs::exists("/usr/bin/chromium"))
        GTEST_SKIP() << "chromium is not installed (Debian package chromium; scripts/deps.sh installs it)";
    test::TempDir dir;
    const std::string db = dir.file("history.db");
    // Real reports first, when the corpus is here.
    std::size_t corpus_runs = 0;
    if (const auto corpus = test::corpus_dir()) {
        for (const char* file : {"kineto/kineto__tb_plugin_samples_resnet50_profiler_api_num_workers_0__worker0.pt.trace.json.gz",
                                 "ncu/text_L4-cc89_ncu2025_fp16_wmma_512_basic.txt"}) {
            const auto r = run_perfwatch({"check", "--db", db, "--label", "commit=corpus1", (*corpus / file).string()});
            ASSERT_LE(r.exit_code, 1) << r.err;
            ++corpus_runs;
        }
    } else {
        std::cerr << "[ note ] ../shared/corpus is absent: the dashboard is driven on generated runs only\n";
    }
    // 24 generated runs: gemm 100 us, then 115 us from commit g16 on; the driver changes at g10.
    for (int i = 0; i < 24; ++i) {
        const std::string trace = write_trace(dir, fmt::format("g{}/train.json", i), i >= 16 ? 115 : 100, 1000.0 * (i + 1));
        const auto r = run_perfwatch({"check", "--db", db, "--label", "benchmark=train", "--label", fmt::format("commit=g{}", i),
                                      "--label", i >= 10 ? "driver=560.1" : "driver=550.2", trace});
        ASSERT_LE(r.exit_code, 1) << r.err;
    }
    SQLite::Database sql(db);
    const std::int64_t regression = sql.execAndGet(
        "SELECT id FROM regressions WHERE entity_kind = 'kernel' AND entity_name = 'gemm' AND status = 'open'").getInt64();
    ASSERT_GT(regression, 0);

    const fs::path token_file = dir.path() / "token";
    test::write_file(token_file, std::string(k_token) + "\n");
    fs::permissions(token_file, fs::perms::owner_read | fs::perms::owner_write);
    fs::create_directories(dir.path() / "reports");
    const fs::path cfg = dir.path() / "perfwatch.yaml";
    test::write_file(cfg, fmt::format("database: {}\nwatch:\n  - path: {}\nlisten: 127.0.0.1:0\nquiet_period: 300ms\n"
                                      "dashboard:\n  base_url: http://127.0.0.1/\n  token_file: {}\n",
                                      db, (dir.path() / "reports").string(), token_file.string()));
    test::BackgroundProcess daemon({"daemon", "--config", cfg.string()}, dir.file("daemon.log"));
    ASSERT_TRUE(daemon.wait_for_log("dashboard at", 20)) << daemon.log();
    const unsigned short port = daemon.logged_port();
    ASSERT_NE(port, 0) << daemon.log();
    const std::string base = fmt::format("http://127.0.0.1:{}", port);

    // The series of the generated runs, as the database groups it.
    const std::string series = sql.execAndGet(fmt::format("SELECT series FROM regressions WHERE id = {}", regression)).getString();
    const std::string series_url = "/series?key=" + [&] {
        std::string out;
        for (const char c : series) {
            const auto u = static_cast<unsigned char>(c);
            out += std::isalnum(u) ? std::string(1, c) : fmt::format("%{:02X}", u);
        }
        return out;
    }() + "&entity=gemm";

    std::map<std::string, std::string> doms;
    for (const std::string& page : {std::string("/"), series_url, fmt::format("/run/{}", corpus_runs + 20), std::string("/regressions?status=all"),
                                   fmt::format("/regression/{}", regression), std::string("/alerts"),
                                   fmt::format("/compare?a={}&b={}", corpus_runs + 16, corpus_runs + 17)}) {
        const auto rendered = test::chromium(base + page);
        ASSERT_EQ(rendered.exit_code, 0) << page << ": " << rendered.log;
        ASSERT_NE(rendered.dom.find("</main>"), std::string::npos) << page << ": " << rendered.dom.substr(0, 500);
        EXPECT_EQ(rendered.log.find("CONSOLE"), std::string::npos) << page << ": " << rendered.log;
        doms[page] = rendered.dom;
    }

    // Overview: every run and series counted as the database counts them.
    const std::int64_t runs = sql.execAndGet("SELECT count(*) FROM runs").getInt64();
    EXPECT_NE(doms["/"].find(fmt::format("series, {} runs in", runs)), std::string::npos) << doms["/"];
    EXPECT_NE(doms["/"].find("Open regressions"), std::string::npos);

    // The series chart: one circle per run with gemm, each at the value stored.
    SQLite::Statement values(sql,
                             "SELECT r.id, m.value FROM runs r JOIN run_labels l ON l.run_id = r.id AND l.key = 'benchmark' "
                             "AND l.value = 'train' JOIN entities e ON e.run_id = COALESCE(r.content_run, r.id) AND "
                             "e.kind = 'kernel' AND e.name = 'gemm' JOIN metrics m ON m.entity_id = e.id AND "
                             "m.name = 'duration' ORDER BY r.id");
    std::vector<std::pair<std::int64_t, double>> expected;
    while (values.executeStep()) expected.emplace_back(values.getColumn(0).getInt64(), values.getColumn(1).getDouble());
    ASSERT_EQ(expected.size(), 24u);
    const std::string& chart = doms[series_url];
    const auto point_runs = all_matches(chart, "data-run=\"([0-9]+)\"");
    const auto point_values = all_matches(chart, "data-value=\"([-0-9.e+]+)\"");
    ASSERT_EQ(point_runs.size(), expected.size()) << chart;
    ASSERT_EQ(point_values.size(), expected.size());
    for (std::size_t i = 0; i < expected.size(); ++i) {
        EXPECT_EQ(std::stoll(point_runs[i]), expected[i].first) << i;
        EXPECT_NEAR(std::stod(point_values[i]), expected[i].second, 1e-9 * expected[i].second) << i;
    }
    // Its markers: the regression's span from its first to its last bad run, and one environment change.
    const std::int64_t first_bad = sql.execAndGet(fmt::format("SELECT cmp_first_bad_run FROM findings WHERE rule = 'kernel-time-regression' "
                                                              "AND cmp_first_bad_run IS NOT NULL ORDER BY id DESC LIMIT 1"))
                                       .getInt64();
    const std::int64_t stored_first = sql.execAndGet(fmt::format("SELECT first_bad_run FROM regressions WHERE id = {}", regression)).getInt64();
    const std::int64_t last_bad = sql.execAndGet(fmt::format("SELECT last_bad_run FROM regressions WHERE id = {}", regression)).getInt64();
    EXPECT_EQ(first_bad, stored_first);
    const auto spans = all_matches(chart, "class=\"reg-open span\" data-first=\"([0-9]+)\"");
    const auto span_ends = all_matches(chart, "class=\"reg-open span\" data-first=\"[0-9]+\" data-last=\"([0-9]+)\"");
    ASSERT_EQ(spans.size(), 1u) << chart;
    EXPECT_EQ(std::stoll(spans[0]), stored_first);
    EXPECT_EQ(std::stoll(span_ends[0]), last_bad);
    const auto bad_points = all_matches(chart, "class=\"point bad\"[^>]*data-run=\"([0-9]+)\"");
    EXPECT_EQ(bad_points.size(), static_cast<std::size_t>(last_bad - stored_first + 1)) << chart;
    EXPECT_EQ(all_matches(chart, "class=\"(env) mark\"").size(), 1u) << chart;

    // A screenshot of the series page is a drawn chart, not a blank page.
    const std::string shot = dir.file("series.png");
    ASSERT_EQ(test::chromium(base + series_url, shot).exit_code, 0);
    EXPECT_GE(png_distinct_colours(shot), 16u) << shot;

    // Every link of every page resolves.
    std::set<std::string> links;
    for (const auto& [page, dom] : doms)
        for (const std::string& href : all_matches(dom, "href=\"(/[^\"]*)\"")) links.insert(unescape(href));
    EXPECT_GT(links.size(), 20u);
    for (const std::string& link : links) EXPECT_EQ(test::http_get(port, link).status, 200) << link;

    // A hostile kernel name is text wherever it appears.
    const std::string& run_dom = doms[fmt::format("/run/{}", corpus_runs + 20)];
    EXPECT_NE(run_dom.find("&lt;script&gt;alert(1)&lt;/script&gt; @channel"), std::string::npos) << run_dom;
    for (const auto& [page, dom] : doms) EXPECT_EQ(dom.find("<script"), std::string::npos) << page;
    const auto plain = test::http_get(port, fmt::format("/run/{}", corpus_runs + 20));
    EXPECT_EQ(plain.body.find(k_hostile), std::string::npos);

    // Accepting: refused without the token, refused cross-site with it, then done.
    const std::string accept = fmt::format("/regression/{}/accept", regression);
    const std::vector<std::pair<std::string, std::string>> form{{"Content-Type", "application/x-www-form-urlencoded"}};
    EXPECT_EQ(test::http_request(port, "POST", accept, "comment=intended", form).status, 403);
    EXPECT_EQ(test::http_request(port, "GET", accept, "", {}).status, 405);  // no state change on GET: a POST path
    auto cross = form;
    cross.emplace_back("Origin", "http://evil.example");
    EXPECT_EQ(test::http_request(port, "POST", accept, fmt::format("comment=x&token={}", k_token), cross).status, 403);
    auto same = form;
    same.emplace_back("Origin", base);
    const auto accepted = test::http_request(port, "POST", accept, fmt::format("comment=new+kernel+tiling&token={}", k_token), same);
    EXPECT_EQ(accepted.status, 303) << accepted.body;
    EXPECT_EQ(accepted.headers.count("location") ? accepted.headers.at("location") : "", fmt::format("/regression/{}", regression));
    const auto listed = run_perfwatch({"regressions", "list", "--db", db});
    EXPECT_NE(listed.out.find(fmt::format("#{} accepted", regression)), std::string::npos) << listed.out;
    EXPECT_NE(listed.out.find("new kernel tiling"), std::string::npos) << listed.out;
    // Pages carry a policy forbidding inline script.
    const auto page = test::http_get(port, "/");
    EXPECT_NE(page.headers.at("content-security-policy").find("default-src 'none'"), std::string::npos);
}

// `perfwatch serve` without a token is read-only: no action form, and every POST refused.
TEST(Dashboard, ServeWithoutATokenIsReadOnly) {
    test::TempDir dir;
    const std::string db = dir.file("h.db");
    const std::string trace = write_trace(dir, "a/t.json", 100, 1000);
    ASSERT_LE(run_perfwatch({"check", "--db", db, "--label", "benchmark=x", trace}).exit_code, 1);
    test::BackgroundProcess serve({"serve", "--db", db, "--listen", "127.0.0.1:0"}, dir.file("serve.log"));
    ASSERT_TRUE(serve.wait_for_log("read-only", 20)) << serve.log();
    const auto port = serve_port(serve);
    ASSERT_NE(port, 0) << serve.log();
    const auto run = test::http_get(port, "/run/1");
    EXPECT_EQ(run.status, 200);
    EXPECT_EQ(run.body.find("method=\"post\""), std::string::npos);
    const std::vector<std::pair<std::string, std::string>> form{{"Content-Type", "application/x-www-form-urlencoded"}};
    EXPECT_EQ(test::http_request(port, "POST", "/run/1/pin", fmt::format("token={}", k_token), form).status, 403);
    EXPECT_EQ(test::http_request(port, "POST", "/silences", "matchers=rule%3Dx&hours=1", form).status, 403);
    // Bounded parameters: an overlong value or too many parameters is a 400, not a query.
    EXPECT_EQ(test::http_get(port, "/series?key=" + std::string(20000, 'a')).status, 400);
    std::string many = "/?";
    for (int i = 0; i < 80; ++i) many += fmt::format("label=a{}%3Db&", i);
    EXPECT_EQ(test::http_get(port, many).status, 400);
    EXPECT_EQ(test::http_get(port, "/run/999").status, 404);
    // A read-only dashboard serves the report file to whoever may read its pages.
    const auto file = test::http_get(port, "/run/1/report");
    EXPECT_EQ(file.status, 200);
    EXPECT_EQ(file.body, test::read_file(trace));
    EXPECT_NE(run.body.find("href=\"/run/1/report\""), std::string::npos);
}

// What each path takes and whom the server answers: a foreign Host (a DNS-rebinding page) is
// refused on every path, an action answers GET with 405, an unknown page is a 404 with the
// security headers, a malformed compare is a 400; a 5 KB kernel name's history page answers 200;
// a pinned run says so and can be unpinned.
TEST(Dashboard, HostsMethodsLongNamesAndPins) {
    test::TempDir dir;
    const std::string db = dir.file("h.db");
    std::string long_name = "void at::native::elementwise_kernel<128, 4, at::native::gpu_kernel_impl_nocast<";
    while (long_name.size() < 5000) long_name += "at::native::BinaryFunctor<float, float, float, at::native::MulFunctor<float> >, ";
    long_name += ">(at::TensorIteratorBase&)";
    nlohmann::json events = nlohmann::json::array();
    for (int i = 0; i < 20; ++i)
        events.push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", long_name}, {"pid", 0}, {"tid", 7}, {"ts", 1000 + 60 * i},
                          {"dur", 50}, {"args", {{"device", 0}, {"stream", 7}}}});
    const nlohmann::json trace = {
        {"schemaVersion", 1},
        {"deviceProperties", {{{"id", 0}, {"name", "NVIDIA H100"}, {"computeMajor", 9}, {"computeMinor", 0}, {"numSms", 132}}}},
        {"traceEvents", events}};
    test::write_file(dir.path() / "t.json", trace.dump());
    ASSERT_LE(run_perfwatch({"check", "--db", db, "--label", "benchmark=x", "--label", "commit=c/1", dir.file("t.json")}).exit_code, 1);
    test::write_file(dir.path() / "token", std::string(k_token) + "\n");
    fs::permissions(dir.path() / "token", fs::perms::owner_read | fs::perms::owner_write);
    test::write_file(dir.path() / "perfwatch.yaml", "dashboard:\n  commit_url: https://git.example/org/app/commit/{commit}\n");
    test::BackgroundProcess serve({"--config", dir.file("perfwatch.yaml"), "serve", "--db", db, "--listen", "127.0.0.1:0",
                                   "--token-file", dir.file("token")},
                                  dir.file("serve.log"));
    ASSERT_TRUE(serve.wait_for_log("actions need the token", 20)) << serve.log();
    const auto port = serve_port(serve);
    ASSERT_NE(port, 0) << serve.log();

    for (const std::string& host : std::vector<std::string>{"evil.example", fmt::format("evil.example:{}", port), "127.0.0.1.nip.io", ""})
        EXPECT_EQ(test::http_request(port, "GET", "/run/1", "", {{"Host", host}}).status, 403) << host;
    for (const std::string& host : std::vector<std::string>{fmt::format("localhost:{}", port), "LOCALHOST", fmt::format("[::1]:{}", port), "10.1.2.3"})
        EXPECT_EQ(test::http_request(port, "GET", "/run/1", "", {{"Host", host}}).status, 200) << host;
    const auto action = test::http_get(port, "/run/1/pin");
    EXPECT_EQ(action.status, 405);
    EXPECT_EQ(action.headers.at("allow"), "POST");
    EXPECT_EQ(test::http_get(port, "/silences").status, 405);
    const auto missing = test::http_get(port, "/no/such/page");
    EXPECT_EQ(missing.status, 404);
    EXPECT_TRUE(missing.headers.contains("content-security-policy"));
    EXPECT_EQ(test::http_get(port, "/compare?a=abc&b=1").status, 400);
    EXPECT_EQ(test::http_get(port, "/compare?a=1&b=1").status, 200);

    // The long kernel's history link on its run page opens its chart.
    const auto run = test::http_get(port, "/run/1");
    ASSERT_EQ(run.status, 200);
    // (std::regex recurses per character: a 15 KB link is found by hand.)
    std::string link;
    for (std::size_t at = run.body.find("href=\"/series?"); at != std::string::npos && link.empty();
         at = run.body.find("href=\"/series?", at + 1)) {
        const std::string href = run.body.substr(at + 6, run.body.find('"', at + 6) - at - 6);
        if (href.find("entity=") != std::string::npos) link = href;
    }
    ASSERT_GT(link.size(), 5000u) << run.body.substr(0, 2000);
    const auto history = test::http_get(port, unescape(link));
    EXPECT_EQ(history.status, 200) << history.body.substr(0, 500);
    EXPECT_NE(history.body.find("<svg"), std::string::npos);
    EXPECT_NE(history.body.find("at::native::BinaryFunctor&lt;float"), std::string::npos);

    // The evidence: the commit on the code host; the report file, with the token only.
    EXPECT_NE(run.body.find("<a class=\"mono commit\" href=\"https://git.example/org/app/commit/c%2F1\">c/1</a>"), std::string::npos)
        << run.body.substr(0, 3000);
    EXPECT_EQ(test::http_get(port, "/run/1/report").status, 403);
    const auto file = test::http_request(port, "GET", "/run/1/report", "", {{"Authorization", std::string("Bearer ") + k_token}});
    EXPECT_EQ(file.status, 200);
    EXPECT_EQ(file.body, test::read_file(dir.file("t.json")));
    EXPECT_EQ(file.headers.at("content-disposition"), "attachment; filename=\"t.json\"");
    // The compare pages link the commits too, and the range form offers every series.
    const std::string commit_link = "<a class=\"mono commit\" href=\"https://git.example/org/app/commit/c%2F1\">c/1</a>";
    EXPECT_NE(test::http_get(port, "/compare?a=1&b=1").body.find(commit_link), std::string::npos);
    const auto keys = all_matches(test::http_get(port, "/").body, "data-series=\"([^\"]*)\"");
    ASSERT_EQ(keys.size(), 1u);
    const auto ranges = test::http_get(port, "/compare?a_series=" + url_encoded(unescape(keys[0])) + "&b_series=" + url_encoded(unescape(keys[0])));
    ASSERT_EQ(ranges.status, 200) << ranges.body.substr(0, 1000);
    EXPECT_NE(ranges.body.find(commit_link), std::string::npos);
    const auto form_only = test::http_get(port, "/compare?a_series=&b_series=");
    EXPECT_EQ(form_only.status, 200);
    EXPECT_NE(form_only.body.find("<datalist id=\"series-keys\"><option value=\"" + keys[0] + "\">"), std::string::npos) << form_only.body;
    EXPECT_NE(test::http_get(port, "/compare").body.find("href=\"/compare?a_series=&amp;b_series=\""), std::string::npos);

    // Search: the 5 KB kernel by a part of its name in any case, and the commit, each linked to
    // a page that answers.
    const auto found = test::http_get(port, "/?q=binaryfunctor%3Cfloat");
    ASSERT_EQ(found.status, 200);
    const std::size_t kernel_at = found.body.find("<ul id=\"search-kernels\"><li>kernel <a href=\"");
    ASSERT_NE(kernel_at, std::string::npos) << found.body.substr(0, 3000);
    const std::size_t href_at = found.body.find("href=\"", kernel_at) + 6;
    const auto kernel_page = test::http_get(port, unescape(found.body.substr(href_at, found.body.find('"', href_at) - href_at)));
    EXPECT_EQ(kernel_page.status, 200);
    EXPECT_NE(kernel_page.body.find("<svg"), std::string::npos);
    const auto by_commit = test::http_get(port, "/?q=C%2F");
    EXPECT_NE(by_commit.body.find("<a class=\"mono\" href=\"/commit/c%2F1\">c/1</a>"), std::string::npos) << by_commit.body.substr(0, 3000);
    EXPECT_EQ(test::http_get(port, "/commit/c%2F1").status, 200);
    const auto api_found = nlohmann::json::parse(test::http_get(port, "/api/v1/search?q=BinaryFunctor").body);
    ASSERT_EQ(api_found["kernels"].size(), 1u);
    EXPECT_EQ(api_found["kernels"][0]["name"], long_name);
    EXPECT_EQ(api_found["kernels"][0]["latest_run"], 1);
    EXPECT_TRUE(nlohmann::json::parse(test::http_get(port, "/api/v1/search?q=100%25_").body)["kernels"].empty()) << "% and _ are literal";
    EXPECT_EQ(test::http_get(port, "/api/v1/search").status, 400);

    // Pin, seen on the run page with an Unpin form; unpinned, gone.
    const std::vector<std::pair<std::string, std::string>> form{{"Content-Type", "application/x-www-form-urlencoded"}};
    EXPECT_EQ(test::http_request(port, "POST", "/run/1/pin", fmt::format("token={}&comment=known+good", k_token), form).status, 303);
    const auto pinned = test::http_get(port, "/run/1");
    EXPECT_NE(pinned.body.find("Pinned as the baseline of its series since"), std::string::npos);
    EXPECT_NE(pinned.body.find("known good"), std::string::npos);
    EXPECT_NE(pinned.body.find("action=\"/run/1/unpin\""), std::string::npos);
    EXPECT_EQ(query_pins(db), 1);
    EXPECT_EQ(test::http_request(port, "POST", "/run/1/unpin", fmt::format("token={}", k_token), form).status, 303);
    EXPECT_EQ(query_pins(db), 0);
    EXPECT_EQ(test::http_get(port, "/run/1").body.find("Pinned as the baseline"), std::string::npos);
    EXPECT_EQ(test::http_request(port, "POST", "/run/1/unpin", fmt::format("token={}", k_token), form).status, 404);
}

// Two branches of one benchmark, ten runs each: the branch made gemm 10% slower, and a noisy
// kernel wobbles by up to 15% from run to run on both. The range comparison names gemm slower
// with its confidence and the noisy kernel unchanged, on the page and in the JSON API, whose
// medians are the medians of the values SQL reads for the same runs.
TEST(Dashboard, ComparingTwoBranchesNamesTheChangeAndNotTheNoise) {
    test::TempDir dir;
    const std::string db = dir.file("h.db");
    for (const auto& [branch, gemm_us] : {std::pair<std::string, double>{"main", 100}, {"feat", 110}})
        for (int run = 0; run < 10; ++run) {
            const double noisy_us = 30 * (1 + 0.15 * std::sin(run * 2.1 + (branch == "main" ? 0 : 1)));
            nlohmann::json events = nlohmann::json::array();
            double t = 1000;
            for (int i = 0; i < 20; ++i)
                for (const auto& [kernel, us] : {std::pair<std::string, double>{"gemm", gemm_us * (1 + 0.001 * ((run + i) % 3 - 1))},
                                                 {"noisy", noisy_us}}) {
                    events.push_back({{"ph", "X"}, {"cat", "kernel"}, {"name", kernel}, {"pid", 0}, {"tid", 7}, {"ts", t},
                                      {"dur", us}, {"args", {{"device", 0}, {"stream", 7}}}});
                    t += us + 5;
                }
            const nlohmann::json trace = {
                {"schemaVersion", 1},
                {"deviceProperties", {{{"id", 0}, {"name", "NVIDIA H100"}, {"computeMajor", 9}, {"computeMinor", 0}, {"numSms", 132}}}},
                {"traceEvents", events}};
            const std::string path = dir.file(fmt::format("{}-{}.json", branch, run));
            test::write_file(path, trace.dump());
            ASSERT_LE(run_perfwatch({"check", "--db", db, "--label", "benchmark=train", "--label", "branch=" + branch, "--label",
                                     fmt::format("commit={}{}", branch, run), path})
                          .exit_code,
                      1);
        }
    test::BackgroundProcess serve({"serve", "--db", db, "--listen", "127.0.0.1:0"}, dir.file("serve.log"));
    ASSERT_TRUE(serve.wait_for_log("dashboard of", 20)) << serve.log();
    const auto port = serve_port(serve);
    ASSERT_NE(port, 0) << serve.log();
    const auto keys = all_matches(test::http_get(port, "/").body, "data-series=\"([^\"]*)\"");
    ASSERT_EQ(keys.size(), 2u);
    const std::string main_key = unescape(keys[0].find("branch=main") != std::string::npos ? keys[0] : keys[1]);
    const std::string feat_key = unescape(keys[0].find("branch=main") != std::string::npos ? keys[1] : keys[0]);
    ASSERT_NE(main_key, feat_key);
    const std::string query = "a_series=" + url_encoded(main_key) + "&b_series=" + url_encoded(feat_key);

    const auto page = test::http_get(port, "/compare?" + query);
    ASSERT_EQ(page.status, 200) << page.body;
    const auto row = [&](const std::string& entity) {
        const std::size_t at = page.body.find("<tr data-entity=\"" + entity + "\">");
        EXPECT_NE(at, std::string::npos) << entity;
        return at == std::string::npos ? std::string() : page.body.substr(at, page.body.find("</tr>", at) - at);
    };
    EXPECT_NE(row("gemm").find("verdict-slower"), std::string::npos) << row("gemm");
    EXPECT_NE(row("gemm").find("+10.0%"), std::string::npos) << row("gemm");
    EXPECT_NE(row("noisy").find("verdict-unchanged"), std::string::npos) << row("noisy");
    // The same page as Debian's headless Chromium renders it.
    if (fs::exists("/usr/bin/chromium")) {
        const auto rendered = test::chromium(fmt::format("http://127.0.0.1:{}/compare?{}", port, query));
        ASSERT_EQ(rendered.exit_code, 0) << rendered.log;
        const std::size_t gemm = rendered.dom.find("<tr data-entity=\"gemm\">");
        ASSERT_NE(gemm, std::string::npos) << rendered.dom.substr(0, 2000);
        const std::string gemm_row = rendered.dom.substr(gemm, rendered.dom.find("</tr>", gemm) - gemm);
        EXPECT_NE(gemm_row.find("verdict-slower"), std::string::npos) << gemm_row;
        EXPECT_NE(gemm_row.find("+10.0%"), std::string::npos) << gemm_row;
        const std::size_t noisy = rendered.dom.find("<tr data-entity=\"noisy\">");
        ASSERT_NE(noisy, std::string::npos);
        EXPECT_NE(rendered.dom.substr(noisy, rendered.dom.find("</tr>", noisy) - noisy).find("verdict-unchanged"), std::string::npos);
    }

    const auto api = test::http_get(port, "/api/v1/compare?" + query);
    ASSERT_EQ(api.status, 200);
    EXPECT_EQ(api.headers.at("content-type"), "application/json");
    const auto doc = nlohmann::json::parse(api.body);
    ASSERT_EQ(doc["a"]["runs"].size(), 10u);
    ASSERT_EQ(doc["b"]["runs"].size(), 10u);
    // The medians per side are what SQL reads for those runs.
    SQLite::Database sql(db, SQLite::OPEN_READONLY);
    const auto sql_median = [&](const nlohmann::json& runs, const std::string& kernel) {
        std::vector<double> values;
        for (const auto& id : runs) {
            SQLite::Statement st(sql, "SELECT v.value FROM runs r JOIN entities e ON e.run_id = COALESCE(r.content_run, r.id) "
                                      "JOIN metrics v ON v.entity_id = e.id AND v.name = 'duration' "
                                      "WHERE r.id = ? AND e.kind = 'kernel' AND e.name = ?");
            st.bind(1, id.get<std::int64_t>());
            st.bind(2, kernel);
            if (st.executeStep()) values.push_back(st.getColumn(0).getDouble());
        }
        std::sort(values.begin(), values.end());
        return values.size() % 2 ? values[values.size() / 2] : (values[values.size() / 2 - 1] + values[values.size() / 2]) / 2;
    };
    std::map<std::string, nlohmann::json> kernels;
    for (const auto& k : doc["kernels"]) kernels[k["name"]] = k;
    ASSERT_TRUE(kernels.contains("gemm") && kernels.contains("noisy")) << api.body;
    for (const std::string kernel : {"gemm", "noisy"}) {
        EXPECT_NEAR(kernels[kernel]["median_a"].get<double>(), sql_median(doc["a"]["runs"], kernel), 1e-6) << kernel;
        EXPECT_NEAR(kernels[kernel]["median_b"].get<double>(), sql_median(doc["b"]["runs"], kernel), 1e-6) << kernel;
    }
    EXPECT_EQ(kernels["gemm"]["verdict"], "slower");
    EXPECT_GE(kernels["gemm"]["confidence"].get<double>(), 0.99);
    EXPECT_EQ(kernels["noisy"]["verdict"], "unchanged");
    EXPECT_GT(kernels["noisy"]["noise_pct"].get<double>(), kernels["gemm"]["noise_pct"].get<double>());
    EXPECT_EQ(test::http_get(port, "/api/v1/compare?a_series=nope&b_series=x").status, 404);
    // Date ranges: the days the runs were stored hold all ten; a day before holds none.
    const std::string first_day = sql.execAndGet("SELECT substr(min(ingested_at), 1, 10) FROM runs").getString();
    const std::string last_day = sql.execAndGet("SELECT substr(max(ingested_at), 1, 10) FROM runs").getString();
    const auto dated = nlohmann::json::parse(
        test::http_get(port, "/api/v1/compare?" + query + "&a_since=" + first_day + "&a_until=" + last_day + "&b_since=" + first_day).body);
    EXPECT_EQ(dated["a"]["runs"].size(), 10u);
    EXPECT_EQ(dated["b"]["runs"].size(), 10u);
    const auto before_all = nlohmann::json::parse(test::http_get(port, "/api/v1/compare?" + query + "&a_until=2000-01-01").body);
    EXPECT_TRUE(before_all["a"]["runs"].empty());
    EXPECT_EQ(before_all["run"]["verdict"], "only in B");
    EXPECT_EQ(test::http_get(port, "/api/v1/compare?" + query + "&a_since=yesterday").status, 400);

    // The rest of the API against SQL over the same database.
    const auto series = nlohmann::json::parse(test::http_get(port, "/api/v1/series").body);
    ASSERT_EQ(series["series"].size(), 2u);
    for (const auto& one : series["series"])
        EXPECT_EQ(one["runs"].get<std::int64_t>(),
                  test::query_int(db, fmt::format("SELECT count(*) FROM run_labels WHERE key = 'branch' AND value = '{}'",
                                                  one["labels"]["branch"].get<std::string>())));
    const auto values = nlohmann::json::parse(test::http_get(port, "/api/v1/series?key=" + url_encoded(main_key) + "&entity=gemm").body);
    ASSERT_EQ(values["points"].size(), 10u);
    EXPECT_EQ(values["metric"], "duration");
    for (const auto& point : values["points"]) {
        SQLite::Statement st(sql, "SELECT v.value FROM runs r JOIN entities e ON e.run_id = COALESCE(r.content_run, r.id) "
                                  "JOIN metrics v ON v.entity_id = e.id AND v.name = 'duration' "
                                  "WHERE r.id = ? AND e.kind = 'kernel' AND e.name = 'gemm'");
        st.bind(1, point["run"].get<std::int64_t>());
        ASSERT_TRUE(st.executeStep());
        EXPECT_DOUBLE_EQ(point["value"].get<double>(), st.getColumn(0).getDouble());
    }
    const auto run = nlohmann::json::parse(test::http_get(port, "/api/v1/runs/3").body);
    EXPECT_EQ(run["id"], 3);
    EXPECT_EQ(run["labels"]["commit"], "main2");
    EXPECT_EQ(static_cast<std::int64_t>(run["labels"].size()), test::query_int(db, "SELECT count(*) FROM run_labels WHERE run_id = 3"));
    EXPECT_EQ(static_cast<std::int64_t>(run["findings"].size()), test::query_int(db, "SELECT count(*) FROM findings WHERE run_id = 3"));
    EXPECT_EQ(static_cast<std::int64_t>(run["kernels"].size()),
              test::query_int(db, "SELECT count(*) FROM entities WHERE kind = 'kernel' AND run_id = "
                                  "(SELECT COALESCE(content_run, id) FROM runs WHERE id = 3)"));
    EXPECT_EQ(test::http_get(port, "/api/v1/runs/999").status, 404);
    // A series' newest run's kernels, most GPU time first, as SQL sums them.
    const auto kernel_list = nlohmann::json::parse(test::http_get(port, "/api/v1/kernels?key=" + url_encoded(main_key)).body);
    const std::int64_t newest_main = test::query_int(db, "SELECT max(run_id) FROM run_labels WHERE key = 'branch' AND value = 'main'");
    EXPECT_EQ(kernel_list["run"], newest_main);
    ASSERT_EQ(kernel_list["kernels"].size(), 2u);
    EXPECT_EQ(kernel_list["kernels"][0]["name"], "gemm");
    for (const auto& k : kernel_list["kernels"]) {
        SQLite::Statement st(sql, "SELECT d.value * l.value FROM runs r JOIN entities e ON e.run_id = COALESCE(r.content_run, r.id) "
                                  "JOIN metrics d ON d.entity_id = e.id AND d.name = 'duration' "
                                  "JOIN metrics l ON l.entity_id = e.id AND l.name = 'launches' "
                                  "WHERE r.id = ? AND e.kind = 'kernel' AND e.name = ?");
        st.bind(1, newest_main);
        st.bind(2, k["name"].get<std::string>());
        ASSERT_TRUE(st.executeStep());
        EXPECT_NEAR(k["gpu_time"].get<double>(), st.getColumn(0).getDouble(), 1e-6);
    }
    EXPECT_EQ(nlohmann::json::parse(test::http_get(port, "/api/v1/kernels?run=3").body)["run"], 3);
    EXPECT_EQ(test::http_get(port, "/api/v1/kernels").status, 400);
    EXPECT_EQ(test::http_get(port, "/api/v1/kernels?run=999").status, 404);
    // Search finds a commit by part of it, with its run as SQL has it, and a branch's series.
    const auto searched = nlohmann::json::parse(test::http_get(port, "/api/v1/search?q=FEAT3").body);
    ASSERT_EQ(searched["commits"].size(), 1u);
    EXPECT_EQ(searched["commits"][0]["commit"], "feat3");
    EXPECT_EQ(searched["commits"][0]["latest_run"], test::query_int(db, "SELECT run_id FROM run_labels WHERE key = 'commit' AND value = 'feat3'"));
    const auto by_branch = nlohmann::json::parse(test::http_get(port, "/api/v1/search?q=branch%3Dfeat").body);
    ASSERT_EQ(by_branch["series"].size(), 1u);
    EXPECT_EQ(by_branch["series"][0]["key"], feat_key);
    const auto regressions = nlohmann::json::parse(test::http_get(port, "/api/v1/regressions?status=all").body);
    EXPECT_EQ(static_cast<std::int64_t>(regressions["regressions"].size()), test::query_int(db, "SELECT count(*) FROM regressions"));
    EXPECT_EQ(test::http_get(port, "/api/v1/regressions?status=maybe").status, 400);
    EXPECT_EQ(test::http_get(port, "/api/v1/nothing").status, 404);
}

// Triage: a regression gets a state, an assignee, a bug and notes, each change kept with who
// (the token's name) and when; marked invalid it is closed and its runs are no longer bad runs of
// the chart (the band takes them back), and the API and SQL agree.
TEST(Dashboard, TriageKeepsEveryChangeAndInvalidGivesTheRunsBackToTheBaseline) {
    test::TempDir dir;
    const std::string db = dir.file("h.db");
    for (int i = 0; i < 20; ++i) {
        const std::string trace = write_trace(dir, fmt::format("g{}/train.json", i), i >= 14 ? 115 : 100, 1000.0 * (i + 1));
        ASSERT_LE(run_perfwatch({"check", "--db", db, "--label", "benchmark=train", "--label", fmt::format("commit=g{}", i), trace})
                      .exit_code,
                  1);
    }
    const std::int64_t regression =
        test::query_int(db, "SELECT id FROM regressions WHERE entity_kind = 'kernel' AND entity_name = 'gemm' AND status = 'open'");
    ASSERT_GT(regression, 0);
    test::write_file(dir.path() / "token", std::string(k_token) + "\n");
    fs::permissions(dir.path() / "token", fs::perms::owner_read | fs::perms::owner_write);
    test::write_file(dir.path() / "perfwatch.yaml", "dashboard:\n  token_name: perf-bot\n");
    test::BackgroundProcess serve({"--config", dir.file("perfwatch.yaml"), "serve", "--db", db, "--listen", "127.0.0.1:0",
                                   "--token-file", dir.file("token")},
                                  dir.file("serve.log"));
    ASSERT_TRUE(serve.wait_for_log("actions need the token", 20)) << serve.log();
    const auto port = serve_port(serve);
    ASSERT_NE(port, 0) << serve.log();
    const std::vector<std::pair<std::string, std::string>> form{{"Content-Type", "application/x-www-form-urlencoded"}};
    const std::string path = fmt::format("/regression/{}", regression);
    const auto bad_points = [&] {
        const std::string page = test::http_get(port, path).body;
        return all_matches(page, "class=\"point (bad)\"").size();
    };
    const std::size_t bad_before = bad_points();
    EXPECT_GE(bad_before, 4u);
    // The overview's sparkline marks the runs of its open regressions, as SQL counts them.
    EXPECT_EQ(static_cast<std::int64_t>(all_matches(test::http_get(port, "/").body, "class=\"(spark-bad)\"").size()),
              test::query_int(db, "SELECT count(*) FROM runs WHERE id >= (SELECT min(COALESCE(first_bad_run, opened_run)) "
                                  "FROM regressions WHERE status = 'open')"));
    // How sharp: the opening finding's confidence as stored, and the noise of the 10 runs before
    // the first bad one: all equal here (one value), so no spread, tested at the 0.5% floor.
    {
        const std::string page = test::http_get(port, path).body;
        const std::int64_t confidence_tenths = test::query_int(
            db, fmt::format("SELECT CAST(round(cmp_confidence_pct * 10) AS INTEGER) FROM findings f JOIN regressions r ON "
                            "f.run_id = r.opened_run AND f.rule = r.rule AND f.entity_name = r.entity_name WHERE r.id = {}",
                            regression));
        EXPECT_NE(page.find(fmt::format("confidence {}.{}%", confidence_tenths / 10, confidence_tenths % 10)), std::string::npos) << page;
        EXPECT_EQ(test::query_int(db, "SELECT count(DISTINCT v.value) FROM metrics v JOIN entities e ON e.id = v.entity_id "
                                      "WHERE e.name = 'gemm' AND v.name = 'duration' AND e.run_id BETWEEN 5 AND 14"),
                  1);
        EXPECT_NE(page.find("noise (run-to-run spread of the 10 runs before) 0.00% (tested as 0.50%, the floor)"), std::string::npos)
            << page;
        EXPECT_NE(page.find("smallest change these runs could show: "), std::string::npos);
        // The list says the same on the regression's row, and the API in numbers.
        const std::string list = test::http_get(port, "/regressions").body;
        const std::size_t row = list.find(fmt::format("<tr data-regression=\"{}\">", regression));
        ASSERT_NE(row, std::string::npos);
        const std::string row_html = list.substr(row, list.find("</tr>", row) - row);
        EXPECT_NE(row_html.find(fmt::format("<td class=\"sharpness note\">confidence {}.{}%; noise (run-to-run spread of the 10 runs "
                                            "before) 0.00% (tested as 0.50%, the floor)",
                                            confidence_tenths / 10, confidence_tenths % 10)),
                  std::string::npos)
            << row_html;
        const auto one = nlohmann::json::parse(test::http_get(port, fmt::format("/api/v1/regressions/{}", regression)).body);
        EXPECT_EQ(one["id"], regression);
        EXPECT_EQ(std::llround(one["sharpness"]["confidence_pct"].get<double>() * 10), confidence_tenths);
        EXPECT_EQ(one["sharpness"]["noise_pct"].get<double>(), 0.0);
        EXPECT_TRUE(one["sharpness"]["noise_floored"].get<bool>());
        EXPECT_EQ(one["sharpness"]["runs_before"], 10);
        EXPECT_GT(one["sharpness"]["detectable_pct"].get<double>(), 0.0);
        EXPECT_EQ(test::http_get(port, "/api/v1/regressions/99999").status, 404);
    }
    // The numbers of the bisection line are the chart's points for the same runs.
    {
        const std::string page = test::http_get(port, path).body;
        const std::size_t bisect = page.find("<th>Bisect</th>");
        ASSERT_NE(bisect, std::string::npos);
        const std::string line = page.substr(bisect, page.find("</tr>", bisect) - bisect);
        const auto runs = all_matches(line, "<a href=\"/run/([0-9]+)\">run");
        const auto shown = all_matches(line, "</a> \\(([^)]*)\\)");
        ASSERT_EQ(runs.size(), 2u) << line;
        ASSERT_EQ(shown.size(), 2u) << line;
        for (std::size_t i = 0; i < 2; ++i) {
            const auto value = all_matches(page, "data-run=\"" + runs[i] + "\" data-value=\"([0-9.e+]+)\"");
            ASSERT_EQ(value.size(), 1u) << runs[i];
            EXPECT_EQ(fmt::format("{:.0f} us", std::stod(value[0]) / 1000), shown[i]) << line;
        }
    }
    // Each number says which statistic it is: the change is a median per launch, the chart's
    // points and the bisection's values are means.
    const std::string before = test::http_get(port, path).body;
    EXPECT_NE(before.find("median per launch (the chart's points are means)"), std::string::npos);
    EXPECT_NE(before.find("(each run's mean per launch, as the chart's points)"), std::string::npos);
    EXPECT_NE(before.find("points and solid line: each run's <b>mean</b> per launch"), std::string::npos);
    // Both statistics are drawn: the median per launch (what the change is judged on) as a
    // dashed line whose values are the medians of each run's stored launch samples.
    EXPECT_NE(before.find("dashed orange: each run's median per launch"), std::string::npos);
    EXPECT_NE(before.find("<polyline class=\"second\""), std::string::npos);
    const auto seconds = all_matches(before, "data-run=\"([0-9]+)\" data-value=\"[0-9.e+]+\" data-second=\"[0-9.e+]+\"");
    const auto second_values = all_matches(before, "data-second=\"([0-9.e+]+)\"");
    ASSERT_GE(seconds.size(), 15u);
    ASSERT_EQ(seconds.size(), second_values.size());
    {
        SQLite::Database sql(db, SQLite::OPEN_READONLY);
        for (std::size_t i = 0; i < seconds.size(); ++i) {
            SQLite::Statement st(sql, "SELECT s.data FROM runs r JOIN entities e ON e.run_id = COALESCE(r.content_run, r.id) "
                                      "JOIN entity_samples s ON s.entity_id = e.id AND s.metric = 'duration' "
                                      "WHERE r.id = ? AND e.kind = 'kernel' AND e.name = 'gemm'");
            st.bind(1, static_cast<std::int64_t>(std::stoll(seconds[i])));
            ASSERT_TRUE(st.executeStep()) << seconds[i];
            const SQLite::Column blob = st.getColumn(0);
            std::vector<double> launches(static_cast<std::size_t>(blob.getBytes()) / sizeof(double));
            std::memcpy(launches.data(), blob.getBlob(), launches.size() * sizeof(double));
            ASSERT_GE(launches.size(), 3u);
            std::sort(launches.begin(), launches.end());
            const std::size_t n = launches.size();
            const double mid = n % 2 ? launches[n / 2] : (launches[n / 2 - 1] + launches[n / 2]) / 2;
            EXPECT_NEAR(std::stod(second_values[i]), mid, 1e-6 * mid) << seconds[i];
        }
    }

    EXPECT_EQ(test::http_get(port, path + "/triage").status, 405);
    EXPECT_EQ(test::http_request(port, "POST", path + "/triage", "state=investigating", form).status, 403);  // no token
    EXPECT_EQ(test::http_request(port, "POST", path + "/triage", fmt::format("token={}&state=maybe", k_token), form).status, 400);
    EXPECT_EQ(test::http_request(port, "POST", path + "/triage",
                                 fmt::format("token={}&state=investigating&assignee=alice&bug_url=https%3A%2F%2Fbugs.example%2F42"
                                             "&note=looks+real",
                                             k_token),
                                 form)
                  .status,
              303);
    const auto page = test::http_get(port, path).body;
    EXPECT_NE(page.find("<span class=\"triage-investigating\">investigating</span>, alice, <a href=\"https://bugs.example/42\">bug</a>"),
              std::string::npos)
        << page;
    EXPECT_EQ(test::query_int(db, fmt::format("SELECT count(*) FROM regression_events WHERE regression_id = {}", regression)), 4);
    EXPECT_EQ(test::query_int(db, fmt::format("SELECT count(*) FROM regression_events WHERE regression_id = {} AND author = 'perf-bot'",
                                              regression)),
              4);
    EXPECT_NE(page.find("<td>perf-bot</td><td>note: looks real</td>"), std::string::npos) << page;
    // The same state again changes nothing and keeps nothing.
    EXPECT_EQ(test::http_request(port, "POST", path + "/triage", fmt::format("token={}&state=investigating&assignee=alice", k_token), form)
                  .status,
              303);
    EXPECT_EQ(test::query_int(db, fmt::format("SELECT count(*) FROM regression_events WHERE regression_id = {}", regression)), 4);

    // Through the API: the token as Bearer, the answer the regression as JSON with every change kept.
    const std::string api_path = fmt::format("/api/v1/regressions/{}/triage", regression);
    const auto refused = test::http_request(port, "POST", api_path, "state=fixed", form);
    EXPECT_EQ(refused.status, 403);
    EXPECT_EQ(refused.headers.at("content-type"), "application/json");
    EXPECT_EQ(test::http_get(port, api_path).status, 405);
    auto bearer = form;
    bearer.emplace_back("Authorization", std::string("Bearer ") + k_token);
    EXPECT_EQ(test::http_request(port, "POST", api_path, "state=maybe", bearer).status, 400);
    const auto triaged = test::http_request(port, "POST", api_path, "assignee=bob&note=handed+over", bearer);
    ASSERT_EQ(triaged.status, 200) << triaged.body;
    const auto triaged_doc = nlohmann::json::parse(triaged.body);
    EXPECT_EQ(triaged_doc["assignee"], "bob");
    EXPECT_EQ(triaged_doc["triage"], "investigating");
    EXPECT_EQ(static_cast<std::int64_t>(triaged_doc["triage_history"].size()),
              test::query_int(db, fmt::format("SELECT count(*) FROM regression_events WHERE regression_id = {}", regression)));
    EXPECT_EQ(triaged_doc["triage_history"].back()["value"], "handed over");
    EXPECT_EQ(test::http_request(port, "POST", "/api/v1/regressions/99999/triage", "assignee=x", bearer).status, 404);

    // Invalid: closed, its runs no longer bad, the band takes them back.
    EXPECT_EQ(test::http_request(port, "POST", path + "/triage", fmt::format("token={}&state=invalid&note=noisy+host", k_token), form)
                  .status,
              303);
    EXPECT_EQ(test::query_int(db, fmt::format("SELECT count(*) FROM regressions WHERE id = {} AND status = 'invalid' AND "
                                              "triage = 'invalid' AND resolved_run IS NOT NULL",
                                              regression)),
              1);
    EXPECT_EQ(bad_points(), 0u);
    if (fs::exists("/usr/bin/chromium")) {
        const auto rendered = test::chromium(fmt::format("http://127.0.0.1:{}{}", port, path));
        ASSERT_EQ(rendered.exit_code, 0) << rendered.log;
        EXPECT_EQ(rendered.dom.find("point bad"), std::string::npos) << "the invalid regression's runs are baseline runs";
        EXPECT_NE(rendered.dom.find("reg-invalid"), std::string::npos);
        EXPECT_NE(rendered.dom.find("<td>perf-bot</td><td>state: invalid</td>"), std::string::npos);
    }
    const auto api = nlohmann::json::parse(test::http_get(port, "/api/v1/regressions?status=invalid").body);
    ASSERT_EQ(api["regressions"].size(), 1u);
    EXPECT_EQ(api["regressions"][0]["id"], regression);
    EXPECT_EQ(api["regressions"][0]["assignee"], "bob");
    EXPECT_EQ(api["regressions"][0]["bug_url"], "https://bugs.example/42");
    EXPECT_EQ(api["regressions"][0]["triage"], "invalid");
    // The run's GPU time regression of the same shift is a false alarm too; then the next run's
    // baseline takes their runs back (115 us), and the same level opens nothing again.
    const std::int64_t run_regression = test::query_int(db, "SELECT id FROM regressions WHERE entity_kind = 'run' AND status = 'open'");
    ASSERT_GT(run_regression, 0);
    EXPECT_EQ(test::http_request(port, "POST", fmt::format("/regression/{}/triage", run_regression),
                                 fmt::format("token={}&state=invalid", k_token), form)
                  .status,
              303);
    const std::string next = write_trace(dir, "g20/train.json", 115, 21000.0);
    ASSERT_LE(run_perfwatch({"check", "--db", db, "--label", "benchmark=train", "--label", "commit=g20", next}).exit_code, 1);
    EXPECT_EQ(test::query_int(db, "SELECT count(*) FROM regressions WHERE status = 'open'"), 0);

    // The commit where the shift began: both regressions, with their state and triage, and its run.
    const auto commit = test::http_get(port, "/commit/g14");
    ASSERT_EQ(commit.status, 200);
    EXPECT_NE(commit.body.find(fmt::format("<tr data-regression=\"{}\">", regression)), std::string::npos) << commit.body;
    EXPECT_NE(commit.body.find(fmt::format("<tr data-regression=\"{}\">", run_regression)), std::string::npos);
    EXPECT_EQ(all_matches(commit.body, "class=\"state-(invalid)\"").size(), 2u);
    EXPECT_NE(commit.body.find(fmt::format("<a href=\"/run/{0}\">run {0}</a>",
                                           test::query_int(db, "SELECT run_id FROM run_labels WHERE key = 'commit' AND value = 'g14'"))),
              std::string::npos);
    EXPECT_EQ(test::http_get(port, "/commit/nope").status, 404);
}

}  // namespace perfwatch
