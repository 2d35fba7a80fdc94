#include <gtest/gtest.h>
#include <zlib.h>

#include <algorithm>
#include <cstring>
#include <memory>
#include <optional>
#include <random>
#include <filesystem>
#include <fstream>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "collectors/readers/byte_source.hpp"
#include "collectors/collector.hpp"
#include "collectors/readers/json_stream.hpp"
#include "collectors/readers/json_stream_thread.hpp"
#include "tests/collectors/chunked_source.hpp"
#include "tests/support.hpp"

namespace perfwatch::test {

namespace {

// Escapes, nested objects and arrays, a key named like a hint inside args, numbers and
// literals, and members before and after the event array.
const std::string k_doc = R"({"schemaVersion": 1, "skipped": {"a": [1, {"b": "}]\"\\"}]},
 "traceEvents": [
  {"ph": "X", "cat": "kernel", "name": "k<\"a\\b\">", "ts": 1.5, "dur": 2, "args": {"ph": "nested", "grid": [1, 2, 3]}},
  {"name": "\\", "ph":"i","cat":"cpu_op","ts":3},
  {"ph": "X", "cat": "ker\u006eel", "name": "escaped cat", "ts": 4, "dur": true},
  {"args": {"cat": "inner"}, "ph": "f", "cat": "ac2g", "id": 7, "ts": 5, "bp": null},
  {"ph": 5, "cat": ["x"], "ts": -1e3}
 ],
 "displayTimeUnit": "ns"}
)";

struct Seen {
    std::vector<std::string> events, ph, cat, name, ts, dur, args;
    std::vector<bool> ascii;
    std::vector<std::pair<std::string, std::string>> members;
};

// A way to scan: in place with an instruction set's classifier, or on a thread (the best set's).
struct Scanner {
    bool threaded = false;
    ScanLevel level = ScanLevel::base;
    std::string name() const { return fmt::format("{} {}", threaded ? "threaded" : "in place", scan_level_name(level)); }
};

// Every level this CPU runs in place, then the thread.
std::vector<Scanner> scanners() {
    std::vector<Scanner> all;
    for (const ScanLevel level : usable_scan_levels()) all.push_back({false, level});
    all.push_back({true, best_scan_level()});
    return all;
}

// What a stream (JsonEventStream, or the same scanned on a thread) hands out.
template <typename Stream>
Result<Seen> scan_with(ByteSource& source, ScanLevel level) {
    Seen seen;
    const std::string path = "doc.json";
    // JsonEventStreamThread: on its thread however small the input.
    auto stream = [&] {
        if constexpr (std::is_same_v<Stream, JsonEventStream>) return JsonEventStream(path, source, level);
        else return JsonEventStreamThread(path, source, 0);
    }();
    auto r = stream.run([](std::string_view key) { return key == "schemaVersion" || key == "displayTimeUnit"; },
                        [&](std::string_view key, std::string_view json) -> Result<void> {
                            seen.members.emplace_back(key, json);
                            return {};
                        },
                        [&](std::string_view json, const JsonEventStream::Hints& hints) -> Result<void> {
                            seen.events.emplace_back(json);
                            seen.ph.emplace_back(hints.ph);
                            seen.cat.emplace_back(hints.cat);
                            seen.name.emplace_back(hints.name);
                            seen.ts.emplace_back(hints.ts);
                            seen.dur.emplace_back(hints.dur);
                            seen.args.emplace_back(hints.args);
                            seen.ascii.push_back(hints.ascii);
                            return {};
                        });
    if (!r) return std::unexpected(r.error());
    return seen;
}

Result<Seen> scan(ByteSource& source, const Scanner& scanner) {
    return scanner.threaded ? scan_with<JsonEventStreamThread>(source, scanner.level)
                            : scan_with<JsonEventStream>(source, scanner.level);
}

}  // namespace

TEST(JsonEventStream, EveryChunkSizeYieldsTheSameEventsAndHints) {
    const auto doc = nlohmann::json::parse(k_doc);
    const auto& events = doc.at("traceEvents");
    for (std::size_t chunk : {1u, 2u, 3u, 5u, 7u, 13u, 64u, 4096u}) for (const Scanner& scanner : scanners()) {
        SCOPED_TRACE(scanner.name());
        ChunkedSource source(k_doc, chunk);
        auto seen = scan(source, scanner);
        ASSERT_TRUE(seen) << "chunk " << chunk << ": " << seen.error().to_string();
        ASSERT_EQ(seen->events.size(), events.size()) << "chunk " << chunk;
        for (std::size_t i = 0; i < events.size(); ++i) {
            EXPECT_EQ(nlohmann::json::parse(seen->events[i]), events[i]) << "chunk " << chunk << " event " << i;
            // A hint is the top-level plain string value, never a nested key's, never one with escapes.
            const auto& e = events[i];
            const bool plain_ph = e.at("ph").is_string(), plain_cat = e.at("cat").is_string() && i != 2;
            EXPECT_EQ(seen->ph[i], plain_ph ? e.at("ph").get<std::string>() : "") << "event " << i;
            EXPECT_EQ(seen->cat[i], plain_cat ? e.at("cat").get<std::string>() : "") << "event " << i;
            // "name" only without escapes (events 0 and 1 hold some); numbers as written; args as an object.
            EXPECT_EQ(seen->name[i], i >= 2 && e.contains("name") ? e.at("name").get<std::string>() : "") << "event " << i;
            for (const auto& [key, got] : {std::pair{"ts", seen->ts[i]}, std::pair{"dur", seen->dur[i]}}) {
                if (e.contains(key) && e.at(key).is_number())
                    EXPECT_EQ(std::stod(got), e.at(key).get<double>()) << key << " of event " << i;
                else if (e.contains(key) && e.at(key).is_boolean())
                    EXPECT_EQ(got, "true") << key << " of event " << i;  // a scalar, left for the reader to refuse
                else
                    EXPECT_EQ(got, "") << key << " of event " << i;
            }
            if (e.contains("args"))
                EXPECT_EQ(nlohmann::json::parse(seen->args[i]), e.at("args")) << "event " << i;
            else
                EXPECT_EQ(seen->args[i], "") << "event " << i;
        }
        ASSERT_EQ(seen->members.size(), 2u);
        EXPECT_EQ(seen->members[0], (std::pair<std::string, std::string>{"schemaVersion", "1"}));
        EXPECT_EQ(seen->members[1], (std::pair<std::string, std::string>{"displayTimeUnit", "\"ns\""}));
    }
}

TEST(JsonEventStream, EveryCutIsAnErrorWithItsOffset) {
    const std::size_t end = k_doc.rfind('}');
    for (std::size_t cut = 1; cut < end; ++cut) for (const Scanner& scanner : scanners()) {
        SCOPED_TRACE(scanner.name());
        ChunkedSource source(std::string_view(k_doc).substr(0, cut), 7);
        auto seen = scan(source, scanner);
        ASSERT_FALSE(seen) << "cut at " << cut << " was accepted";
        EXPECT_EQ(seen.error().file, "doc.json");
        EXPECT_TRUE(seen.error().has_offset) << seen.error().to_string();
        EXPECT_LE(seen.error().offset, cut) << seen.error().to_string();
    }
}

// The scanner classifies 64 bytes at a time: escaped quotes, runs of backslashes and brackets in
// strings are placed at every position of a block, and across its end.
TEST(JsonEventStream, EscapesAndBracketsInStringsAtEveryPositionOfABlock) {
    std::string doc = R"({"traceEvents": [)";
    std::vector<std::string> names;
    for (std::size_t pad = 0; pad < 140; ++pad) {
        for (const std::string_view tail : {R"(\")", R"(\\)", R"(\\\")", R"(\\}],:{[)", R"(\\\\\"]})"}) {
            const std::string name = std::string(pad, 'x') + std::string(tail);
            doc += fmt::format(R"({}{{"ph": "X", "name": "{}", "cat": "{}", "ts": 1, "args": {{"s": "{}]"}}}})",
                               names.empty() ? "" : ",", name, std::string(pad % 67, 'c'), name);
            names.push_back(name);
        }
    }
    doc += "]}";
    const auto parsed = nlohmann::json::parse(doc).at("traceEvents");
    for (const Scanner& scanner : scanners()) {
        SCOPED_TRACE(scanner.name());
        ChunkedSource source(doc, 1000);
        auto seen = scan(source, scanner);
        ASSERT_TRUE(seen) << seen.error().to_string();
        ASSERT_EQ(seen->events.size(), names.size());
        for (std::size_t i = 0; i < names.size(); ++i) {
            EXPECT_EQ(nlohmann::json::parse(seen->events[i]), parsed[i]) << "event " << i;
            EXPECT_EQ(seen->name[i], "") << "event " << i;  // every name holds a backslash: no hint
            EXPECT_EQ(seen->cat[i], parsed[i].at("cat").get<std::string>()) << "event " << i;
            EXPECT_EQ(seen->ts[i], "1") << "event " << i;
            EXPECT_EQ(nlohmann::json::parse(seen->args[i]), parsed[i].at("args")) << "event " << i;
        }
    }
}

// Random events in the shapes traces take (keys in any order, white space or none around colons
// and commas, escapes, scalars, nested args): every hint is the raw text the generator wrote for
// that key, at every read size, scanned in place and on a thread.
TEST(JsonEventStream, HintsOfRandomEventsAreTheTextsWritten) {
    std::mt19937_64 random(27);
    const auto pick = [&](std::initializer_list<std::string_view> options) {
        return std::string(*(options.begin() + static_cast<std::ptrdiff_t>(random() % options.size())));
    };
    const auto space = [&] { return pick({"", "", "", " ", "\n  ", "\t"}); };
    const auto text = [&] {
        std::string t;
        for (std::size_t n = random() % 12; n > 0; --n)
            t += pick({"a", "Z", "_", ":", ",", "{", "]", " ", "\\\"", "\\\\", "\\u0041", "x"});
        return t;
    };
    const auto scalar = [&] {
        return pick({"0", "-1", "17121955152139008", "1712195515213900.8", "4.054", "1e3", "true", "false", "null"});
    };
    struct Want {
        std::string ph, cat, name, ts, dur, args;
    };
    std::string doc = R"({"traceEvents":[)";
    std::vector<Want> wants;
    for (int e = 0; e < 3000; ++e) {
        std::vector<std::pair<std::string, std::string>> members;  // key, raw value
        Want want;
        const auto string_member = [&](const char* key, std::string* hint) {
            const std::string t = text();
            members.emplace_back(key, '"' + t + '"');
            if (hint != nullptr && t.find('\\') == std::string::npos) *hint = t;
        };
        if (random() % 8 != 0) string_member("ph", &want.ph);
        if (random() % 8 != 0) string_member("cat", &want.cat);
        if (random() % 8 != 0) string_member("name", &want.name);
        for (auto [key, hint] : {std::pair{"ts", &want.ts}, std::pair{"dur", &want.dur}}) {
            if (random() % 6 == 0) continue;
            if (random() % 5 == 0) {
                string_member(key, nullptr);
            } else {
                const std::string v = scalar();
                members.emplace_back(key, v);
                *hint = v;
            }
        }
        if (random() % 3 != 0) {
            const std::string v = random() % 5 == 0 ? scalar()
                                  : fmt::format(R"({{"correlation":{},"grid":[1,{}2],"n":{{"s":"{}"}}, "e":"{}"}})",
                                                random() % 1000, space(), text(), text());
            members.emplace_back("args", v);
            if (v.front() == '{') want.args = v;
        }
        if (random() % 2 == 0) members.emplace_back("pid", scalar());
        if (random() % 2 == 0) members.emplace_back("bp", '"' + text() + '"');
        std::shuffle(members.begin(), members.end(), random);
        doc += e == 0 ? "" : "," + space();
        doc += "{" + space();
        for (std::size_t m = 0; m < members.size(); ++m)
            doc += (m == 0 ? "" : space() + "," + space()) + '"' + members[m].first + '"' + space() + ":" + space() +
                   members[m].second;
        doc += space() + "}";
        wants.push_back(want);
    }
    doc += "]}";
    ASSERT_NO_THROW((void)nlohmann::json::parse(doc));
    for (std::size_t chunk : {1u, 7u, 64u, 4096u}) for (const Scanner& scanner : scanners()) {
        SCOPED_TRACE(scanner.name());
        ChunkedSource source(doc, chunk);
        auto seen = scan(source, scanner);
        ASSERT_TRUE(seen) << seen.error().to_string();
        ASSERT_EQ(seen->events.size(), wants.size());
        for (std::size_t i = 0; i < wants.size(); ++i) {
            EXPECT_EQ(seen->ph[i], wants[i].ph) << "event " << i << ": " << seen->events[i];
            EXPECT_EQ(seen->cat[i], wants[i].cat) << "event " << i << ": " << seen->events[i];
            EXPECT_EQ(seen->name[i], wants[i].name) << "event " << i << ": " << seen->events[i];
            EXPECT_EQ(seen->ts[i], wants[i].ts) << "event " << i << ": " << seen->events[i];
            EXPECT_EQ(seen->dur[i], wants[i].dur) << "event " << i << ": " << seen->events[i];
            EXPECT_EQ(seen->args[i], wants[i].args) << "event " << i << ": " << seen->events[i];
        }
    }
}

// The ascii hint holds only for an event with no byte above 0x7F, wherever such bytes (UTF-8 or
// not) sit in the 64-byte blocks; it may be missed only by an event sharing a block with one.
TEST(JsonEventStream, AsciiHintOnlyForEventsWithoutHighBytes) {
    std::string doc = R"({"traceEvents": [)";
    std::vector<bool> has_high;
    for (std::size_t pad = 0; pad < 150; ++pad) {
        const bool high = pad % 3 != 0;
        const std::string odd = pad % 2 == 0 ? "\xc3\xa9" : "\xff";
        doc += fmt::format(R"({}{{"ph": "X", "name": "{}{}", "ts": 1, "args": {{"s": "{}"}}}})", pad == 0 ? "" : ",",
                           std::string(pad, 'x'), high && pad % 5 != 1 ? odd : "", high && pad % 5 == 1 ? odd : "");
        has_high.push_back(high);
    }
    doc += "]}";
    const std::string clean = R"({"traceEvents": [{"ph": "X", "name": "a", "ts": 1}, {"ph": "X", "name": "b", "ts": 2}]})";
    for (const Scanner& scanner : scanners()) {
        SCOPED_TRACE(scanner.name());
        ChunkedSource source(doc, 100);
        auto seen = scan(source, scanner);
        ASSERT_TRUE(seen) << seen.error().to_string();
        ASSERT_EQ(seen->events.size(), has_high.size());
        std::size_t told = 0;
        for (std::size_t i = 0; i < has_high.size(); ++i) {
            const bool high = std::any_of(seen->events[i].begin(), seen->events[i].end(),
                                          [](char c) { return static_cast<unsigned char>(c) > 0x7F; });
            ASSERT_EQ(high, has_high[i]) << "event " << i;
            if (high) EXPECT_FALSE(seen->ascii[i]) << "event " << i;
            told += seen->ascii[i] ? 1 : 0;
        }
        EXPECT_GT(told, 0u);  // most plain events sit apart from high bytes
        ChunkedSource clean_source(clean, 7);
        auto all = scan(clean_source, scanner);
        ASSERT_TRUE(all) << all.error().to_string();
        EXPECT_EQ(all->ascii, (std::vector<bool>{true, true}));
    }
}

// Many batches: 40,000 events of about 150 bytes, the last one cut short.
TEST(JsonEventStreamThread, HandsOverEveryEventInOrderThenTheScannersErrorAndStopsWhenACallbackFails) {
    std::string doc = R"({"traceEvents": [)";
    for (int i = 0; i < 40000; ++i)
        doc += fmt::format(R"({}{{"ph": "X", "cat": "kernel", "name": "k{}", "ts": {}, "dur": 2, "args": {{"grid": [1, 2, {}]}}}})",
                           i == 0 ? "" : ",\n", i % 97, i * 3, i);
    doc += R"(, {"ph": "X", "name": "cut)";
    struct Event {
        std::string text, name;
        std::uint64_t offset;
    };
    auto walk = [&](auto& stream, std::size_t stop_at, std::vector<Event>& seen) {
        return stream.run([](std::string_view) { return false; },
                          [](std::string_view, std::string_view) -> Result<void> { return {}; },
                          [&](std::string_view json, const JsonEventStream::Hints& hints) -> Result<void> {
                              if (seen.size() == stop_at) return std::unexpected(Error{.file = "doc.json", .message = "stop here"});
                              seen.push_back({std::string(json), std::string(hints.name), stream.offset()});
                              return {};
                          });
    };
    const std::string path = "doc.json";
    ChunkedSource plain_source(doc, 4096), threaded_source(doc, 4096);
    JsonEventStream plain(path, plain_source);
    JsonEventStreamThread threaded(path, threaded_source, 0);
    std::vector<Event> want, got;
    const auto want_end = walk(plain, SIZE_MAX, want);
    const auto got_end = walk(threaded, SIZE_MAX, got);
    ASSERT_EQ(want.size(), 40000u);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
        ASSERT_EQ(got[i].text, want[i].text) << "event " << i;
        EXPECT_EQ(got[i].name, fmt::format("k{}", i % 97)) << "event " << i;
        EXPECT_EQ(got[i].offset, want[i].offset) << "event " << i;
    }
    ASSERT_FALSE(want_end);
    ASSERT_FALSE(got_end);
    EXPECT_EQ(got_end.error().to_string(), want_end.error().to_string());
    EXPECT_NE(got_end.error().message.find("inside a string"), std::string::npos) << got_end.error().to_string();

    // A callback's error ends the run at once, with that error, whatever the scanner had queued.
    ChunkedSource again(doc, 4096);
    JsonEventStreamThread stopped(path, again, 0);
    std::vector<Event> some;
    const auto r = walk(stopped, 1234, some);
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().message, "stop here");
    EXPECT_EQ(some.size(), 1234u);
}

TEST(FileSource, AFileTruncatedWhileReadIsAnErrorNamingTheOffset) {
    TempDir dir;
    const std::string path = dir.file("report.json");
    write_file(path, std::string(3 << 20, 'x'));
    auto file = FileSource::open(path);
    ASSERT_TRUE(file) << file.error().to_string();
    std::vector<char> buf(1 << 20);
    ASSERT_EQ((*file)->read(buf.data(), buf.size()).value_or(0), buf.size());
    std::filesystem::resize_file(path, 1 << 20);  // another process truncates it
    auto r = (*file)->read(buf.data(), buf.size());
    ASSERT_FALSE(r);
    EXPECT_EQ(r.error().file, path);
    EXPECT_EQ(r.error().offset, 1u << 20);
    EXPECT_NE(r.error().message.find("shrank from 3145728 to 1048576 bytes"), std::string::npos) << r.error().message;
}

TEST(FileSource, AFileGrowingWhileReadIsAnError) {
    TempDir dir;
    const std::string path = dir.file("report.json");
    write_file(path, "abc");
    auto file = FileSource::open(path);
    ASSERT_TRUE(file);
    {
        std::ofstream out(path, std::ios::app);
        out << "def";
    }
    auto sha = (*file)->finish_sha256();
    ASSERT_FALSE(sha);
    EXPECT_NE(sha.error().message.find("grew from 3 to 6 bytes"), std::string::npos) << sha.error().message;
}

TEST(FileSource, AFileDeletedWhileReadIsReadToItsEnd) {
    TempDir dir;
    const std::string path = dir.file("report.json");
    std::string content;
    for (int i = 0; i < 300000; ++i) content += std::to_string(i) + "\n";
    write_file(path, content);
    auto file = FileSource::open(path);
    ASSERT_TRUE(file);
    std::vector<char> buf(4096);
    ASSERT_TRUE((*file)->read(buf.data(), buf.size()));
    std::filesystem::remove(path);
    auto sha = (*file)->finish_sha256();
    ASSERT_TRUE(sha) << sha.error().to_string();
    EXPECT_EQ(*sha, sha256_hex(content));
}

// A file from FileSource::k_hash_beside_bytes on is hashed on a thread of its own: read in uneven
// chunks, some bytes left to finish_sha256, its digest is sha256sum's.
TEST(FileSource, ALargeFileHashedBesideTheReaderGivesSha256sumsDigest) {
    TempDir dir;
    const std::string path = dir.file("large.txt");
    std::string content;
    for (std::uint64_t i = 0; content.size() < FileSource::k_hash_beside_bytes + 3'000'001; ++i)
        content += std::to_string(i * 2654435761u) + (i % 7 == 0 ? "\n" : ",");
    write_file(path, content);
    const auto sum = run_program({"/usr/bin/sha256sum", path});
    ASSERT_EQ(sum.exit_code, 0) << sum.err;
    auto file = FileSource::open(path);
    ASSERT_TRUE(file);
    std::vector<char> buf(1 << 20);
    std::size_t read = 0;
    for (std::size_t n = 1; read < content.size() / 2; n = n * 3 + 17) {
        auto got = (*file)->read(buf.data(), std::min(buf.size(), n));
        ASSERT_TRUE(got);
        read += *got;
    }
    auto sha = (*file)->finish_sha256();
    ASSERT_TRUE(sha) << sha.error().to_string();
    EXPECT_EQ(*sha, sum.out.substr(0, 64));
}

TEST(FileSource, NonRegularFilesAreRefused) {
    TempDir dir;
    auto d = FileSource::open(dir.path().string());
    ASSERT_FALSE(d);
    EXPECT_NE(d.error().message.find("is a directory"), std::string::npos);
    auto fifo = FileSource::open("/dev/null");
    ASSERT_FALSE(fifo);
    EXPECT_NE(fifo.error().message.find("not a regular file"), std::string::npos);
}

// The daemon's path: a gzip trace streamed from disk gives the same run as the same trace in
// memory, and the run's SHA-256 is that of the compressed file's bytes.
TEST(CollectFile, GzipTraceStreamedFromDiskEqualsTheInMemoryRead) {
    TempDir dir;
    const std::string plain = write_kineto_trace(dir, "t.json", 12.5, 300);
    const std::string text = read_file(plain);
    const std::string gz_path = dir.file("t.json.gz");
    {
        gzFile gz = gzopen(gz_path.c_str(), "wb6");
        ASSERT_NE(gz, nullptr);
        gzwrite(gz, text.data(), static_cast<unsigned>(text.size()));
        gzclose(gz);
    }
    auto from_disk = collect_file(gz_path);
    ASSERT_TRUE(from_disk) << from_disk.error().to_string();
    auto in_memory = collect_content(plain, text);
    ASSERT_TRUE(in_memory);
    EXPECT_EQ(from_disk->sha256, sha256_hex(read_file(gz_path)));
    EXPECT_EQ(from_disk->source, gz_path);
    ASSERT_EQ(from_disk->entities.size(), in_memory->entities.size());
    for (std::size_t i = 0; i < in_memory->entities.size(); ++i) {
        EXPECT_EQ(from_disk->entities[i].name, in_memory->entities[i].name);
        EXPECT_EQ(from_disk->entities[i].metrics.size(), in_memory->entities[i].metrics.size());
    }
    EXPECT_DOUBLE_EQ(from_disk->entities[0].value("launches").value_or(-1), 300);
}

// A plain report from 8 MB on is read on a thread beside its parser: the run is the one read in
// memory, metric for metric, and its SHA-256 is sha256sum's.
TEST(CollectFile, ALargePlainReportReadBesideItsParserEqualsTheInMemoryRead) {
    TempDir dir;
    const std::string fixture = read_file(std::string(PERFWATCH_SOURCE_DIR) + "/tests/fixtures/ncu/metrics_output.txt");
    std::string text;
    while (text.size() < (9u << 20)) text += fixture;
    const std::string path = dir.file("large.txt");
    write_file(path, text);
    auto from_disk = collect_file(path);
    ASSERT_TRUE(from_disk) << from_disk.error().to_string();
    auto in_memory = collect_content(path, text);
    ASSERT_TRUE(in_memory) << in_memory.error().to_string();
    const auto sum = run_program({"/usr/bin/sha256sum", path});
    ASSERT_EQ(sum.exit_code, 0) << sum.err;
    EXPECT_EQ(from_disk->sha256, sum.out.substr(0, 64));
    ASSERT_EQ(from_disk->entities.size(), in_memory->entities.size());
    ASSERT_GT(from_disk->entities.size(), 100u);
    for (std::size_t i = 0; i < in_memory->entities.size(); ++i) {
        const Entity &a = from_disk->entities[i], &b = in_memory->entities[i];
        EXPECT_EQ(a.name, b.name) << "entity " << i;
        ASSERT_EQ(a.metrics.size(), b.metrics.size()) << "entity " << i;
        for (std::size_t m = 0; m < a.metrics.size(); ++m) {
            EXPECT_EQ(a.metrics[m].name(), b.metrics[m].name()) << "entity " << i;
            EXPECT_EQ(a.metrics[m].value, b.metrics[m].value) << a.metrics[m].name() << " of entity " << i;
        }
    }
}

}  // namespace perfwatch::test

namespace perfwatch::test {

namespace {

std::string generated_text(std::size_t bytes) {
    std::string text;
    for (std::uint64_t i = 0; text.size() < bytes; ++i) text += std::to_string(i * 2654435761u % 1000003) + (i % 9 ? " " : "\n");
    return text;
}

std::string gzipped(const std::string& text) {
    z_stream z{};
    EXPECT_EQ(deflateInit2(&z, 6, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY), Z_OK);
    std::string out(deflateBound(&z, static_cast<uLong>(text.size())), '\0');
    z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
    z.avail_in = static_cast<uInt>(text.size());
    z.next_out = reinterpret_cast<Bytef*>(out.data());
    z.avail_out = static_cast<uInt>(out.size());
    EXPECT_EQ(deflate(&z, Z_FINISH), Z_STREAM_END);
    out.resize(z.total_out);
    deflateEnd(&z);
    return out;
}

// Reads `source` to its end or first error in reads of uneven sizes.
std::pair<std::string, std::optional<Error>> drain(ByteSource& source) {
    std::string out;
    std::vector<char> buf(1 << 20);
    for (std::size_t n = 7;; n = (n * 5 + 3) % buf.size() + 1) {
        auto got = source.read(buf.data(), n);
        if (!got) return {out, got.error()};
        if (*got == 0) return {out, std::nullopt};
        out.append(buf.data(), *got);
    }
}

}  // namespace

// A source read ahead on its own thread hands out the same bytes in the same order.
TEST(ReadAhead, GivesTheBytesOfItsSourceInOrder) {
    const std::string text = generated_text(5'500'000);
    auto ahead = read_ahead(std::make_unique<ChunkedSource>(text, 300'001));
    const auto [bytes, error] = drain(*ahead);
    EXPECT_FALSE(error.has_value());
    EXPECT_EQ(bytes.size(), text.size());
    EXPECT_TRUE(bytes == text);
}

// A gzip stream cut in half, inflated on the thread: text from the start comes out, then the error
// the inflater gives when read directly (a read that fails loses what it inflated, so how much
// text came before depends on the reads' sizes: within one 1 MB chunk of the direct reading).
TEST(ReadAhead, AnErrorComesBackWhereItHappened) {
    const std::string text = generated_text(6'000'000);
    const std::string gz = gzipped(text);
    const std::string cut = gz.substr(0, gz.size() / 2);
    ChunkedSource direct_in(cut, 1 << 16), ahead_in(cut, 1 << 16);
    auto direct = gunzip("cut.gz", direct_in);
    const auto [direct_bytes, direct_error] = drain(*direct);
    ASSERT_TRUE(direct_error.has_value());
    auto ahead = read_ahead(gunzip("cut.gz", ahead_in));
    const auto [ahead_bytes, ahead_error] = drain(*ahead);
    ASSERT_TRUE(ahead_error.has_value());
    EXPECT_EQ(ahead_error->to_string(), direct_error->to_string());
    EXPECT_GT(ahead_bytes.size(), 1'000'000u);
    EXPECT_LE(ahead_bytes.size() + (1 << 20), direct_bytes.size() + (2 << 20));
    EXPECT_GE(ahead_bytes.size() + (1 << 20), direct_bytes.size());
    EXPECT_TRUE(text.starts_with(ahead_bytes));
    EXPECT_TRUE(text.starts_with(direct_bytes));
}

// Destroyed before its end, it stops its thread (the test ends; ASan sees no leak or race).
TEST(ReadAhead, StopsWhenDestroyedEarly) {
    const std::string text = generated_text(8'000'000);
    auto ahead = read_ahead(std::make_unique<ChunkedSource>(text, 1 << 20));
    std::vector<char> buf(1000);
    auto got = ahead->read(buf.data(), buf.size());
    ASSERT_TRUE(got);
    EXPECT_EQ(std::string(buf.data(), *got), text.substr(0, *got));
}

}  // namespace perfwatch::test
