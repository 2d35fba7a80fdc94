#include <gtest/gtest.h>

#include <SQLiteCpp/SQLiteCpp.h>
#include <fmt/format.h>

#include "storage/db.hpp"
#include "tests/support.hpp"
#include "web/dashboard.hpp"

namespace perfwatch::web {
namespace {

RunBatch run_of(const std::string& benchmark, int i) {
    RunBatch b;
    b.source = fmt::format("{}-{}.json", benchmark, i);
    b.sha256 = fmt::format("{:064x}", i);
    b.format = "kineto";
    b.labels = {{"benchmark", benchmark}, {"commit", fmt::format("c{}", i)}};
    b.entities[b.run_entity()].set({"gpu_time", 1e6 + i, "ns", "", ""});
    return b;
}

std::string overview(Dashboard& d) {
    HttpRequest r;
    r.method = "GET";
    r.target = "/";
    auto page = d.handle(r);
    return page ? page->body : "";
}

}  // namespace

// The dashboard keeps its series index between requests: runs stored since are added, and a
// deleted run (retention takes the oldest) makes it read the index again.
TEST(DashboardIndex, FollowsRunsAddedAndDeletedBetweenRequests) {
    test::TempDir dir;
    const std::string path = dir.file("d.db");
    auto writer = Db::open(path);
    ASSERT_TRUE(writer);
    for (int i = 1; i <= 3; ++i) ASSERT_TRUE(writer->store(run_of("a", i)));
    auto reader = Db::open(path);
    ASSERT_TRUE(reader);
    Dashboard dashboard(std::move(*reader), {});
    EXPECT_NE(overview(dashboard).find("1 series, 3 runs in"), std::string::npos);
    ASSERT_TRUE(writer->store(run_of("b", 4)));
    EXPECT_NE(overview(dashboard).find("2 series, 4 runs in"), std::string::npos);
    {
        SQLite::Database raw(path, SQLite::OPEN_READWRITE);
        raw.exec("PRAGMA foreign_keys = ON");
        raw.exec("DELETE FROM runs WHERE id = 1");
    }
    ASSERT_TRUE(writer->store(run_of("a", 5)));  // as many runs as before, the oldest gone
    const std::string page = overview(dashboard);
    EXPECT_NE(page.find("2 series, 4 runs in"), std::string::npos) << page;
    EXPECT_NE(page.find("href=\"/run/5\""), std::string::npos) << page;  // series a's latest run now
    HttpRequest gone;
    gone.method = "GET";
    gone.target = "/run/1";
    EXPECT_EQ(dashboard.handle(gone)->status, 404u);
}

}  // namespace perfwatch::web
