#include <gtest/gtest.h>

#include <boost/asio/io_context.hpp>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>

#include "collectors/watcher.hpp"
#include "tests/support.hpp"

namespace perfwatch {

namespace {

void touch(const std::filesystem::path& p, const std::string& text = "x") {
    std::filesystem::create_directories(p.parent_path());
    std::ofstream(p) << text;
}

WatchSpec spec_for(const test::TempDir& dir) {
    WatchSpec spec;
    spec.path = dir.path().string();
    return spec;
}

}  // namespace

TEST(Watcher, GlobsMatchNamesOrRelativePathsAndSkipSidecarsAndHiddenFiles) {
    test::TempDir dir;
    WatchSpec spec = spec_for(dir);
    const std::string root = spec.path;
    EXPECT_TRUE(watch_accepts(spec, root + "/a/report.csv"));
    EXPECT_FALSE(watch_accepts(spec, root + "/a/report.csv.labels.yaml"));
    EXPECT_FALSE(watch_accepts(spec, root + "/a/perfwatch-labels.yaml"));
    EXPECT_FALSE(watch_accepts(spec, root + "/a/.report.csv.swx"));
    EXPECT_FALSE(watch_accepts(spec, root + "/a/report.csv.part"));
    spec.include = {"*.csv", "nightly/*.json"};
    EXPECT_TRUE(watch_accepts(spec, root + "/x/y/k.csv"));
    EXPECT_FALSE(watch_accepts(spec, root + "/x/k.json"));
    EXPECT_TRUE(watch_accepts(spec, root + "/nightly/k.json"));
    EXPECT_TRUE(watch_enters(spec, root + "/x"));
    EXPECT_FALSE(watch_enters(spec, root + "/.git"));
    spec.recursive = false;
    EXPECT_FALSE(watch_enters(spec, root + "/x"));
}

TEST(Watcher, ScanFindsAcceptedFilesAndSkipsSymlinkedDirectories) {
    test::TempDir dir;
    touch(dir.path() / "a.csv");
    touch(dir.path() / "sub" / "deeper" / "b.json");
    touch(dir.path() / ".hidden" / "c.csv");
    touch(dir.path() / "sub" / "b.json.labels.yaml", "branch: main\n");
    std::filesystem::create_directory_symlink(dir.path(), dir.path() / "loop");
    std::vector<std::string> errors;
    const auto files = scan_watch(spec_for(dir), errors);
    EXPECT_TRUE(errors.empty());
    EXPECT_EQ(files, (std::vector<std::string>{(dir.path() / "a.csv").string(),
                                               (dir.path() / "sub" / "deeper" / "b.json").string()}));
}

// Drives the io_context until `done` or a deadline.
template <typename Pred>
bool run_until(boost::asio::io_context& io, Pred done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done() && std::chrono::steady_clock::now() < deadline) {
        io.restart();
        io.run_for(std::chrono::milliseconds(20));
    }
    return done();
}

TEST(Watcher, SeesWritesMovesNewDirectoriesAndExistingFiles) {
    test::TempDir dir;
    touch(dir.path() / "old.csv");
    boost::asio::io_context io;
    std::map<std::string, std::vector<DirectoryWatcher::Event>> seen;
    std::vector<std::string> errors;
    DirectoryWatcher watcher(
        io, [&](std::size_t, const std::string& p, DirectoryWatcher::Event e) { seen[p].push_back(e); },
        [&](const std::string& m) { errors.push_back(m); });
    ASSERT_TRUE(watcher.watch({spec_for(dir)}).has_value());
    const std::string old_csv = (dir.path() / "old.csv").string();
    ASSERT_EQ(seen[old_csv], std::vector<DirectoryWatcher::Event>{DirectoryWatcher::Event::found});

    // Written and closed, then a directory created later with a file in it, then a move into place.
    touch(dir.path() / "new.csv");
    const std::string new_csv = (dir.path() / "new.csv").string();
    ASSERT_TRUE(run_until(io, [&] {
        const auto& v = seen[new_csv];
        return std::find(v.begin(), v.end(), DirectoryWatcher::Event::written) != v.end();
    }));
    std::filesystem::create_directories(dir.path() / "later" / "deep");
    ASSERT_TRUE(run_until(io, [&] { return watcher.directories() == 3; }));
    touch(dir.path() / "later" / "deep" / "k.csv");
    const std::string deep = (dir.path() / "later" / "deep" / "k.csv").string();
    ASSERT_TRUE(run_until(io, [&] { return !seen[deep].empty(); }));
    touch(dir.path() / "staging.tmp");
    std::filesystem::rename(dir.path() / "staging.tmp", dir.path() / "moved.csv");
    const std::string moved = (dir.path() / "moved.csv").string();
    ASSERT_TRUE(run_until(io, [&] { return !seen[moved].empty(); }));
    EXPECT_EQ(seen[moved].back(), DirectoryWatcher::Event::written);
    // The excluded temporary name was never reported.
    EXPECT_FALSE(seen.contains((dir.path() / "staging.tmp").string()));
    EXPECT_TRUE(errors.empty()) << errors[0];
}

}  // namespace perfwatch
