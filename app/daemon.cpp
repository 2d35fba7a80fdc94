#include "app/daemon.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>

#include <atomic>
#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/thread_pool.hpp>
#include <chrono>
#include <fmt/chrono.h>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <unistd.h>
#include <memory>
#include <mutex>
#include <random>
#include <nlohmann/json.hpp>
#include <thread>
#include <unordered_map>
#include <unordered_set>
#include <set>
#include <map>

#include "app/config.hpp"
#include "app/crash_note.hpp"
#include "app/daemon_metrics.hpp"
#include "web/dashboard.hpp"
#include "web/http_server.hpp"
#include "web/page.hpp"
#include "app/log.hpp"
#include "app/quiet_queue.hpp"
#include "app/report.hpp"
#include "app/job_assembly.hpp"
#include "app/run_pipeline.hpp"
#include "core/vocabulary.hpp"
#include "collectors/collector.hpp"
#include "collectors/watcher.hpp"
#include "engine/pipeline.hpp"
#include "engine/retention.hpp"
#include "engine/rules.hpp"
#include "notify/alerts.hpp"
#include "notify/dispatcher.hpp"
#include "notify/sinks.hpp"
#include "storage/db.hpp"


namespace perfwatch {

namespace {

// The time of a quarantine, to the millisecond (its alert's key holds it).
std::string utc_ms_text() {
    const auto now = std::chrono::floor<std::chrono::milliseconds>(std::chrono::system_clock::now());
    const auto seconds = std::chrono::floor<std::chrono::seconds>(now);
    return fmt::format("{:%Y-%m-%dT%H:%M:%S}.{:03}Z", seconds, (now - seconds).count());
}

namespace asio = boost::asio;
using Clock = std::chrono::steady_clock;

// "host:/absolute/config.yaml", naming this daemon in the claims it holds on a shared database.
// A restart (after kill -9, say) is the same daemon and takes its predecessor's claims back at
// once; a daemon on another server waits for them to lapse.
std::string owner_name(const std::string& config_path) {
    char host[256] = {};
    ::gethostname(host, sizeof host - 1);
    std::error_code ec;
    const auto absolute = std::filesystem::absolute(config_path, ec);
    return fmt::format("{}:{}", host, ec ? config_path : absolute.lexically_normal().string());
}

// One validated configuration with its compiled rules; jobs keep the one they started with.
struct Settings {
    Config config;
    RuleSet rules;
};

// A diagnostic as one log line; the log line's level says error, a warning says so itself.
std::string one_line(const Diagnostic& d) { return d.headline(d.level == Diagnostic::Level::warning); }

// Reads and checks the configuration and its rules; nullptr with every problem in `problems`.
std::shared_ptr<const Settings> load_settings(const std::string& path, std::vector<std::string>& problems) {
    ConfigLoad load = load_config(path);
    for (const Diagnostic& d : load.diagnostics) problems.push_back(one_line(d));
    if (!load.ok()) return nullptr;
    auto settings = std::make_shared<Settings>();
    settings->config = std::move(load.config);
    if (settings->config.watch.empty())
        problems.push_back(fmt::format("{}: nothing to watch: add a 'watch' list of directories", path));
    std::vector<Diagnostic> diagnostics = check_watch_directories(settings->config);
    settings->rules = compile_rules(load_rule_files(settings->config.rules));
    diagnostics.insert(diagnostics.end(), settings->rules.diagnostics.begin(), settings->rules.diagnostics.end());
    for (const Diagnostic& d : diagnostics) problems.push_back(one_line(d));
    if (has_errors(diagnostics) || settings->config.watch.empty()) return nullptr;
    return settings;
}

std::int64_t wall_now_ns() {
    return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::system_clock::now().time_since_epoch())
        .count();
}

void notify_systemd(const std::string& state) { sd_notify(0, state.c_str()); }

struct Job {
    std::string path;
    std::size_t watch = 0;
    std::shared_ptr<const Settings> settings;
    Clock::time_point since;  // when its last write was seen
};

class Daemon {
public:
    Daemon(std::string config_path, std::shared_ptr<const Settings> settings, Db db, std::string db_path,
           std::unique_ptr<web::Dashboard> dashboard)
        : m_config_path(std::move(config_path)),
          m_settings(std::move(settings)),
          m_db(std::move(db)),
          m_db_path(std::move(db_path)),
          m_signals(m_io, SIGHUP, SIGTERM, SIGINT),
          m_tick(m_io),
          m_watchdog(m_io),
          m_stop_timer(m_io),
          m_workers(static_cast<std::size_t>(worker_count(m_settings->config))),
          m_writer_guard(asio::make_work_guard(m_writer_io)),
          m_watcher(
              m_io, [this](std::size_t w, const std::string& p, DirectoryWatcher::Event e) { on_file(w, p, e); },
              [](const std::string& message) { log(LogLevel::warning, "{}", message); },
              [this](const std::string& path, const std::string& why) { on_skip(path, why); }),
          m_http(m_io, [this](const HttpRequest& request) { return http(request); }),
          m_dashboard(std::move(dashboard)),
          m_started(Clock::now()) {}

    int run() {
        std::signal(SIGPIPE, SIG_IGN);
        wait_signal();
        std::atomic_store(&m_current, m_settings);
        install_crash_note(m_crash_note);
        m_writer_thread = std::thread([this] { m_writer_io.run(); });
        // The files the previous process was reading when it ended, before any is read again.
        asio::post(m_writer_io, [this] { recover_unfinished(); });
        // Messages left in the outbox by an earlier run (a crash mid-delivery) go out again.
        asio::post(m_writer_io, [this] { schedule_delivery(); });
        asio::post(m_writer_io, [this] { schedule_retention(k_first_retention); });
        const Config& config = m_settings->config;
        std::string http_at = "off";
        if (config.listen != "off") {
            const auto address = split_listen_address(config.listen);
            auto bound = m_http.listen(address->first, address->second);
            if (!bound) {
                log(LogLevel::error, "{}", bound.error().to_string());
                shutdown_threads();
                return 2;
            }
            http_at = "http://" + *bound;
        }
        if (auto watching = m_watcher.watch(config.watch); !watching) {
            log(LogLevel::error, "{}", watching.error().to_string());
            shutdown_threads();
            return 2;
        }
        start_watchdog();
        log(LogLevel::notice, "ready: {} rules; watching {} director{} ({} reports waiting); database {}; {} workers; "
                              "health, metrics and dashboard at {}",
            m_settings->rules.rules.size(), m_watcher.directories(), m_watcher.directories() == 1 ? "y" : "ies",
            m_pending.size() + m_ready.size(), m_db_path, worker_count(config), http_at);
        notify_systemd(fmt::format("READY=1\nSTATUS=watching {} directories", m_watcher.directories()));
        dispatch();
        arm_tick();
        m_io.run();
        shutdown_threads();
        log(LogLevel::notice, "stopped: {} reports stored, {} failed", m_stored, m_failed);
        return 0;
    }

private:
    // `workers`, or one per core; two per core when reports are read in reader processes (a
    // worker then mostly waits for its reader's answer).
    static int worker_count(const Config& config) {
        if (config.workers > 0) return config.workers;
        const auto cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
        return config.reader.isolation == ReaderIsolation::process ? 2 * cores : cores;
    }

    std::size_t in_flight_limit() const { return 2 * static_cast<std::size_t>(worker_count(m_settings->config)); }

    void shutdown_threads() {
        asio::post(m_writer_io, [this] {
            m_delivery_timer.cancel();
            m_retention_timer.cancel();
            m_jobs_timer.cancel();
            m_marks_timer.cancel();
            // Nothing is being read now: the files marked for reading that were not read are
            // forgotten (read as new at the next start), not held against them.
            if (auto forgotten = m_db.file_marks().forget_unfinished(m_owner); !forgotten)
                log(LogLevel::warning, "{}", forgotten.error().to_string());
            if (m_sending > 0) {
                // A delivery in flight is abandoned: it stays pending and goes out again, with the
                // same idempotency key, at the next start.
                log(LogLevel::notice, "abandoning {} alert deliveries in flight (resent with the same key at the "
                                      "next start)", m_sending);
                abandon();
            }
        });
        m_writer_guard.reset();
        if (m_writer_thread.joinable()) m_writer_thread.join();
        m_workers.join();
    }

    // Main thread: signals, watcher events, the quiet-period tick, dispatch and HTTP.

    void wait_signal() {
        m_signals.async_wait([this](const boost::system::error_code& ec, int signal) {
            if (ec) return;
            if (signal == SIGHUP)
                reload();
            else
                begin_stop(signal);
            wait_signal();
        });
    }

    // Each path that is named like a report but never read is said once, with what it is.
    void on_skip(const std::string& path, const std::string& why) {
        if (m_skipped.size() >= k_max_skipped_remembered || !m_skipped.insert(path).second) return;
        log(LogLevel::notice, "{}: skipped: {}", path, why);
    }

    void on_file(std::size_t watch, const std::string& path, DirectoryWatcher::Event event) {
        if (m_stopping) return;
        const auto now = Clock::now();
        const auto quiet = m_settings->config.quiet_period;
        if (event == DirectoryWatcher::Event::modified) {
            m_pending.written(path, now, quiet);
            return;
        }
        const auto stat = stat_file(path);
        if (!stat) return;
        if (event == DirectoryWatcher::Event::found && !m_pending.contains(path) && !m_busy.contains(path) &&
            wall_now_ns() - stat->mtime_ns >= std::chrono::nanoseconds(quiet).count()) {
            queue(Job{path, watch, m_settings, now});
            return;
        }
        m_pending.wait(path, watch, now + quiet, now, *stat);
        arm_tick();
    }

    void queue(Job job) {
        m_busy.insert(job.path);
        m_ready.push_back(std::move(job));
        if (m_running) dispatch();
    }

    void arm_tick() {
        const auto next = m_pending.next_deadline();
        if (!next || m_tick_armed || m_stopping) return;
        m_tick_armed = true;
        m_tick.expires_at(std::max(*next, Clock::now() + std::chrono::milliseconds(10)));
        m_tick.async_wait([this](const boost::system::error_code& ec) {
            m_tick_armed = false;
            if (!ec) tick();
        });
    }

    // Files unchanged for the quiet period go to the ready queue; changed ones wait again.
    void tick() {
        for (QuietQueue::Ready& r : m_pending.take_ready(Clock::now(), m_settings->config.quiet_period, m_busy))
            queue(Job{std::move(r.path), r.watch, m_settings, r.since});
        dispatch();
        arm_tick();
    }

    void dispatch() {
        m_running = true;
        while (!m_stopping && !m_ready.empty() && m_in_flight < in_flight_limit()) {
            Job job = std::move(m_ready.front());
            m_ready.pop_front();
            ++m_in_flight;
            asio::post(m_writer_io, [this, job = std::move(job)]() mutable { consider(std::move(job)); });
        }
        update_queue_metrics();
    }

    void update_queue_metrics() {
        m_metrics.queue(static_cast<double>(m_pending.size() + m_ready.size()), static_cast<double>(m_in_flight));
    }

    // What became of a report: nothing to do (unchanged, a duplicate, gone), stored, failed for
    // good (until it changes), or to retry (the database failed).
    // later: another daemon of the fleet holds the run; looked at again in a second, no failure.
    // quarantined: reading it ended the reader; never read again automatically.
    enum class Outcome { none, stored, failed, retry, later, quarantined };

    void done(const Job& job, Outcome outcome) {
        --m_in_flight;
        m_busy.erase(job.path);
        m_stored += outcome == Outcome::stored ? 1 : 0;
        m_failed += outcome == Outcome::failed || outcome == Outcome::retry || outcome == Outcome::quarantined ? 1 : 0;
        if (m_stopping) {
            if (m_in_flight == 0) m_io.stop();
            return;
        }
        const auto now = Clock::now();
        // A job started before a reload names a watch entry of the old settings: the reload's
        // rescan has queued its file again under the new ones.
        if (job.settings != m_settings && (outcome == Outcome::retry || outcome == Outcome::later)) outcome = Outcome::none;
        if (outcome == Outcome::retry) {
            // The database failed (locked, full, read-only): read the report again later, waiting
            // longer each time (2 s doubling to 1 min) until a report is stored again.
            m_pending.wait(job.path, job.watch, now + m_retry_delay, job.since, stat_file(job.path).value_or(FileStat{}));
            log(LogLevel::warning, "{}: retried in {} s", job.path,
                std::chrono::duration_cast<std::chrono::seconds>(m_retry_delay).count());
            m_retry_delay = std::min<std::chrono::milliseconds>(m_retry_delay * 2, std::chrono::minutes(1));
        } else if (outcome == Outcome::later) {
            m_pending.wait(job.path, job.watch, now + std::chrono::seconds(1), job.since,
                           stat_file(job.path).value_or(FileStat{}));
        } else if (outcome == Outcome::stored) {
            m_retry_delay = k_first_retry;
        }
        dispatch();
        arm_tick();
        if (now - m_last_status > std::chrono::seconds(1)) {
            m_last_status = now;
            notify_systemd(fmt::format("STATUS={} reports stored, {} failed, {} waiting", m_stored, m_failed,
                                       m_pending.size() + m_ready.size()));
        }
    }

    void finish(const Job& job, Outcome outcome) {
        asio::post(m_io, [this, job, outcome] { done(job, outcome); });
    }

    // Writer thread: owns the database.

    void consider(Job job) {
        if (m_stopping) return finish(job, Outcome::none);
        const auto stat = stat_file(job.path);
        if (!stat) return finish(job, Outcome::none);
        auto mark = m_db.file_marks().get(job.path);
        if (!mark) {
            database_failed(mark.error());
            return finish(job, Outcome::retry);
        }
        int deaths = 0;
        if (*mark) {
            const FileMark& m = **mark;
            const bool unchanged = m.size == stat->size && m.mtime_ns == stat->mtime_ns;
            switch (m.state) {
                case ReadState::read:
                case ReadState::failed:
                    if (unchanged) {
                        log(LogLevel::debug, "{}: unchanged since it was read", job.path);
                        return finish(job, Outcome::none);
                    }
                    break;
                case ReadState::quarantined:
                    // A quarantined file that changed is another report: read as a new file.
                    if (unchanged) {
                        log(LogLevel::debug, "{}: quarantined; not read until retried", job.path);
                        return finish(job, Outcome::none);
                    }
                    break;
                case ReadState::reading:
                    // Left by the previous process (a death forgiven once), or a database failure.
                    if (m.reader == m_owner) deaths = m.deaths;
                    break;
                case ReadState::retry:
                    // Read once more on purpose, as a suspect: one more death quarantines it again.
                    deaths = std::max(m.deaths, 1);
                    log(LogLevel::notice, "{}: read once more (retry asked for); it was quarantined: {}", job.path,
                        m.error);
                    break;
            }
        }
        // Committed before a worker reads it: should the reading end this process, the next
        // start finds the mark.
        FileMark reading{job.path, stat->size, stat->mtime_ns, "", std::nullopt, ""};
        reading.state = ReadState::reading;
        reading.reader = m_owner;
        reading.deaths = deaths;
        if (*mark) reading.quarantined_at = (*mark)->quarantined_at;
        if (auto saved = m_db.file_marks().save(reading); !saved) {
            database_failed(saved.error());
            return finish(job, Outcome::retry);
        }
        asio::post(m_workers, [this, job = std::move(job)]() mutable { parse(std::move(job)); });
    }

    // Worker thread: reads and parses one report.
    void parse(Job job) {
        if (m_stopping) return finish(job, Outcome::none);
        const auto stat = stat_file(job.path);
        if (!stat) return finish(job, Outcome::none);
        const Settings& s = *job.settings;
        if (job.watch >= s.config.watch.size()) return finish(job, Outcome::none);
        LabelSources labels;
        const WatchSpec& watch = s.config.watch[job.watch];
        if (watch.path_template) labels.path_templates.push_back(*watch.path_template);
        labels.path_templates.insert(labels.path_templates.end(), s.config.path_templates.begin(),
                                     s.config.path_templates.end());
        labels.directory = watch.labels;
        labels.root = watch.path;
        // A bug in a collector costs this report, never the daemon; a crash names it in the crash note.
        Result<std::vector<RunBatch>> batch = fail(job.path, 0, "not read");
        {
            const CrashNoteReading reading(job.path);
            // Tests only: the reader crashing on a file (PERFWATCH_TEST_ABORT_ON=part of its path).
            if (!m_test_abort_on.empty() && job.path.find(m_test_abort_on) != std::string::npos) std::abort();
            try {
                batch = collect_labelled_runs(job.path, labels, s.config.converters, s.config.reader);
            } catch (const std::exception& e) {
                batch = fail(job.path, 0, fmt::format("internal error while reading the report: {}", e.what()));
            }
        }
        asio::post(m_writer_io, [this, job = std::move(job), stat = *stat, batch = std::move(batch)]() mutable {
            store(std::move(job), stat, std::move(batch));
        });
    }

    void store(Job job, FileStat stat, Result<std::vector<RunBatch>> batch) {
        try {
            store_and_evaluate(job, stat, std::move(batch));
        } catch (const std::exception& e) {
            // A bug costs this report (marked, so it is not read again until it changes), never the
            // daemon or the database's health.
            log(LogLevel::error, "{}: internal error while storing the report: {}", job.path, e.what());
            FileMark mark{job.path, stat.size, stat.mtime_ns, "", std::nullopt,
                          fmt::format("internal error: {}", e.what())};
            mark.state = ReadState::failed;
            if (auto saved = m_db.file_marks().save(mark); !saved) database_failed(saved.error());
            finish(job, Outcome::failed);
        }
    }

    // A report that failed on its own content: logged, counted and marked, so it is read again
    // only once it changes.
    void report_failed(const Job& job, FileMark& mark, const Error& e) {
        const std::string format = e.skipped ? "set-aside" : detect_file_format(job.path);
        m_metrics.report_failed(format);
        // The message says it (its detail, the list of formats for an unknown one, is for the CLI).
        // The file's name stays whole, line breaks in it included (the log writes them as spaces).
        const std::string why = e.to_string();
        log(e.skipped ? LogLevel::notice : LogLevel::warning, "not ingested: {}", why);
        mark.error = why;
        mark.state = ReadState::failed;
        if (auto saved = m_db.file_marks().save(mark); !saved) database_failed(saved.error());
        finish(job, Outcome::failed);
    }

    // Writer thread: `job`'s file is quarantined for `reason` (reading it ended its reader: the
    // sandboxed reader's death, ErrorKind::reader_died, comes here): marked so it is never read
    // again automatically (until `perfwatch files retry` or a change), told once through the
    // receivers, and listed in /healthz, /metrics, the dashboard's alerts page and `perfwatch files`.
    void quarantine(const Job& job, const std::string& reason) {
        const FileStat stat = stat_file(job.path).value_or(FileStat{});
        FileMark mark{job.path, stat.size, stat.mtime_ns, "", std::nullopt, reason};
        if (auto previous = m_db.file_marks().get(job.path); previous && *previous) mark.deaths = (*previous)->deaths;
        quarantine_mark(std::move(mark));
        finish(job, Outcome::quarantined);
    }

    // Writer thread: `mark` (its error the reason) quarantined and its alert enqueued, in one transaction.
    void quarantine_mark(FileMark mark) {
        const auto settings = std::atomic_load(&m_current);
        const std::int64_t now = wall_now_ms();
        mark.quarantined_at = utc_ms_text();
        std::vector<OutboxMessage> alerts;
        if (settings->config.route) {
            auto silences = m_db.silences().list(now);
            if (!silences) return database_failed(silences.error());
            alerts = quarantine_messages(*settings->config.route, mark.path, mark.error, mark.quarantined_at, now,
                                         *silences);
        }
        auto quarantined = m_db.file_marks().quarantine(mark, m_db.outbox(), alerts);
        if (!quarantined) return database_failed(quarantined.error());
        m_metrics.report_failed("quarantined");
        log(LogLevel::error, "{}: quarantined: {}; not read again until `perfwatch files retry` (or it changes)",
            mark.path, mark.error);
        if (!alerts.empty()) schedule_delivery();
        refresh_marks();
    }

    // Writer thread, first of all: the files this daemon's previous process was reading when it
    // ended. The one the crash note names is quarantined (it crashed reading it) and the others
    // are read again; without a note (a kill, the OOM killer, a power cut) each is read again
    // once, and quarantined when that happens to it a second time.
    void recover_unfinished() {
        const auto note = take_crash_note(m_crash_note);
        auto marks = m_db.file_marks().reading_by(m_owner);
        if (!marks) return database_failed(marks.error());
        for (FileMark& mark : *marks) {
            if (note && note->path == mark.path) {
                mark.error = fmt::format("the daemon crashed ({}) while reading it", crash_signal_text(note->signal));
                quarantine_mark(std::move(mark));
            } else if (note) {
                log(LogLevel::notice, "{}: read again (the previous process crashed reading another file)", mark.path);
            } else if (++mark.deaths >= k_deaths_to_quarantine) {
                mark.error = fmt::format("the daemon ended while reading it ({} times)", mark.deaths);
                quarantine_mark(std::move(mark));
            } else {
                log(LogLevel::warning, "{}: the previous process ended while reading it; read again (should that "
                                       "happen again, it is quarantined)", mark.path);
                if (auto saved = m_db.file_marks().save(mark); !saved) database_failed(saved.error());
            }
        }
        if (note && std::none_of(marks->begin(), marks->end(), [&](const FileMark& m) { return m.path == note->path; }))
            log(LogLevel::warning, "{}: the previous process crashed ({}) while reading it, but it has no reading "
                                   "mark; not quarantined", note->path, crash_signal_text(note->signal));
        refresh_marks();
        schedule_marks();
    }

    // Writer thread: every k_marks_interval, the quarantined files counted for /healthz and
    // /metrics, and the files asked to be read once more (`perfwatch files retry`) queued.
    void schedule_marks() {
        m_marks_timer.expires_after(k_marks_interval);
        m_marks_timer.async_wait([this](const boost::system::error_code& ec) {
            if (ec || m_stopping) return;
            refresh_marks();
            schedule_marks();
        });
    }

    void refresh_marks() {
        auto quarantined = m_db.file_marks().list(ReadState::quarantined);
        if (!quarantined) return database_failed(quarantined.error());
        {
            std::lock_guard lock(m_quarantine_mutex);
            m_quarantined.clear();
            for (const FileMark& m : *quarantined) m_quarantined.push_back({m.path, m.error, m.quarantined_at});
        }
        m_metrics.quarantined_files(static_cast<double>(quarantined->size()));
        auto retry = m_db.file_marks().list(ReadState::retry);
        if (!retry) return database_failed(retry.error());
        for (const FileMark& m : *retry)
            asio::post(m_io, [this, path = m.path] { queue_retry(path); });
    }

    // Main thread: a file asked to be read once more, under the watch it lies in.
    void queue_retry(const std::string& path) {
        // One waiting for its quiet period is read once it is quiet (its retry mark is seen then).
        if (m_stopping || m_busy.contains(path) || m_pending.contains(path)) return;
        const auto& watch = m_settings->config.watch;
        std::optional<std::size_t> best;
        for (std::size_t w = 0; w < watch.size(); ++w) {
            const std::string& root = watch[w].path;
            const bool under = path.size() > root.size() && path.starts_with(root) &&
                               (root.ends_with('/') || path[root.size()] == '/');
            if (under && (!best || root.size() > watch[*best].path.size())) best = w;
        }
        if (!best) return;  // not watched here (another daemon's, or a watch since removed)
        queue(Job{path, *best, m_settings, Clock::now()});
    }

    // Stores and evaluates every run of one report (one per session of a log holding several),
    // then marks the file. A database failure leaves the file for a retry: the runs already
    // stored are found again by content and labels, and evaluated runs are not evaluated twice.
    void store_and_evaluate(const Job& job, FileStat stat, Result<std::vector<RunBatch>> batches) {
        m_metrics.report_seen();
        FileMark mark{job.path, stat.size, stat.mtime_ns, "", std::nullopt, ""};
        if (!batches && batches.error().kind == ErrorKind::reader_died)
            return quarantine(job, batches.error().message);
        if (!batches) return report_failed(job, mark, batches.error());
        bool inserted = false;
        for (RunBatch& batch : *batches) {
            const RunStep step = store_and_evaluate_run(job, batch, mark, inserted);
            if (step == RunStep::retry) return finish(job, Outcome::retry);
            if (step == RunStep::later) return finish(job, Outcome::later);
            if (step == RunStep::failed) return;
        }
        // The mark holds the file's own hash (a session's content hash carries "#N").
        if (!mark.sha256.empty()) mark.sha256 = mark.sha256.substr(0, mark.sha256.find('#'));
        if (auto saved = m_db.file_marks().save(mark); !saved) database_failed(saved.error());
        m_database_ok = true;
        finish(job, inserted ? Outcome::stored : Outcome::none);
    }

    enum class RunStep { done, retry, later, failed };

    // One run through the run pipeline (app/run_pipeline), then its logs and metrics.
    RunStep store_and_evaluate_run(const Job& job, const RunBatch& batch, FileMark& mark, bool& inserted) {
        RunPipeline pipeline(m_db, job.settings->rules, pipeline_options(*job.settings));
        auto step = pipeline.run(batch);
        if (!step && step.error().kind != ErrorKind::database) {
            Error e = step.error();
            e.file = job.path;
            report_failed(job, mark, e);
            return RunStep::failed;
        }
        if (!step) {
            database_failed(step.error());
            return RunStep::retry;
        }
        const StoreOutcome& stored = step->stored;
        mark.sha256 = batch.sha256;
        mark.run_id = stored.run_id;
        if (step->state == RunStepResult::State::held) {
            log(LogLevel::info, "{}: run {} is being evaluated by another daemon; looked at again later", job.path,
                stored.run_id);
            return RunStep::later;
        }
        std::string outcome = "already evaluated";
        if (step->state == RunStepResult::State::evaluated) {
            const RunOutcome& result = step->outcome;
            if (step->report_error)
                log(LogLevel::warning, "run {}: HTML report not written: {}", stored.run_id, *step->report_error);
            if (step->silenced > 0) log(LogLevel::info, "run {}: {} alerts silenced", stored.run_id, step->silenced);
            if (step->inhibited > 0) log(LogLevel::info, "run {}: {} alerts inhibited", stored.run_id, step->inhibited);
            if (step->queued > 0) schedule_delivery();
            m_metrics.rules_evaluated(static_cast<double>(result.evaluation.evaluated));
            std::map<Severity, int> by_severity;
            for (const Finding& f : result.evaluation.findings) {
                m_metrics.finding(f.severity);
                ++by_severity[f.severity];
            }
            outcome = fmt::format("{} findings ({} errors, {} warnings, {} info)", result.evaluation.findings.size(),
                                  by_severity[Severity::error], by_severity[Severity::warning],
                                  by_severity[Severity::info]);
            for (const RegressionEvent& e : result.events)
                log(LogLevel::notice, "run {}: regression {}: {} '{}' ({})", stored.run_id,
                    e.kind == RegressionEvent::Kind::opened ? "opened" : "resolved", to_string(e.state.entity_kind),
                    e.state.entity_name, e.state.rule);
        }
        // A rank of a distributed job: its job is judged (and told) once all its ranks are in.
        if (job_key(batch.labels)) assemble_jobs(job.settings);
        const double latency_s = std::chrono::duration<double>(Clock::now() - job.since).count();
        m_metrics.ingest_latency(latency_s);
        const std::string session =
            batch.labels.contains("session") ? fmt::format(" session {}", label_value(batch.labels, "session")) : "";
        if (stored.inserted) {
            inserted = true;
            m_metrics.report_ingested(batch.format);
            log(LogLevel::info, "run {}: {}{} ({}) in {:.0f} ms: {}", stored.run_id, job.path, session, batch.format,
                latency_s * 1000, outcome);
        } else {
            m_metrics.report_duplicate(batch.format);
            log(LogLevel::info, "{}{}: same content as run {} in {:.0f} ms: {}", job.path, session, stored.run_id,
                latency_s * 1000, outcome);
        }
        return RunStep::done;
    }

    static std::int64_t wall_now_ms() { return wall_now_ns() / 1'000'000; }

    // The daemon's run pipeline: claims for this daemon, the shared run cache, the wall clock, and
    // a job's ranks held until the job tells them.
    RunPipeline::Options pipeline_options(const Settings& settings) {
        return {&settings.config, m_owner, &m_runs, std::nullopt, false, &wall_now_ms, true};
    }

    // Writer thread: builds, evaluates and tells each job whose ranks are all stored, and each
    // waiting past job_timeout since this daemon first saw it (a missing rank being a finding),
    // then looks again in a second while some still wait.
    void assemble_jobs(const std::shared_ptr<const Settings>& settings) {
        auto pending = pending_jobs(m_db);
        if (!pending) return database_failed(pending.error());
        const auto now = Clock::now();
        std::map<std::string, Clock::time_point> still_waiting;
        for (const PendingJob& p : *pending) {
            const std::string id = fmt::format("{}#{}", p.key, p.ranks.front().run_id);
            auto since = m_job_since.find(id);
            const Clock::time_point first_seen = since == m_job_since.end() ? now : since->second;
            if (!p.complete() && now - first_seen < settings->config.job_timeout) {
                still_waiting.emplace(id, first_seen);
                continue;
            }
            RunPipeline pipeline(m_db, settings->rules, pipeline_options(*settings));
            auto assembled = assemble_job(m_db, pipeline, p);
            if (!assembled) {
                if (assembled.error().kind == ErrorKind::database) return database_failed(assembled.error());
                log(LogLevel::warning, "job of {} ranks not judged: {}", p.job.world_size, assembled.error().to_string());
                continue;
            }
            const RunStepResult& step = assembled->step;
            std::vector<int> ranks;
            for (const JobRank& r : assembled->ranks) ranks.push_back(r.rank);
            log(LogLevel::info, "job run {}: ranks {} of {}{}: {} findings, {} from its ranks", step.stored.run_id,
                rank_list(ranks), p.job.world_size, p.complete() ? "" : " (waited past job_timeout)",
                step.state == RunStepResult::State::evaluated ? step.outcome.evaluation.findings.size() : 0,
                assembled->rank_findings.size());
            if (step.queued > 0) schedule_delivery();
        }
        m_job_since = std::move(still_waiting);
        if (!m_job_since.empty() && !m_stopping) {
            m_jobs_timer.expires_after(std::chrono::seconds(1));
            m_jobs_timer.async_wait([this](const boost::system::error_code& ec) {
                if (!ec) assemble_jobs(std::atomic_load(&m_current));
            });
        }
    }

    // Writer thread: the retention policy, shortly after the start and then once a day, in
    // transactions of a few runs so reports keep being stored meanwhile.
    void schedule_retention(std::chrono::milliseconds delay) {
        m_retention_timer.expires_after(delay);
        m_retention_timer.async_wait([this](const boost::system::error_code& ec) {
            if (ec) return;
            retention_pass();
            schedule_retention(std::chrono::hours(24));
        });
    }

    void retention_pass() {
        const auto settings = std::atomic_load(&m_current);
        const Config& config = settings->config;
        if (!config.retention_samples_days && !config.retention_runs_days) return;
        auto pruned =
            apply_retention(m_db, settings->rules, config.retention_samples_days, config.retention_runs_days, false);
        if (!pruned) return database_failed(pruned.error());
        const auto bytes = [](std::int64_t b) { return format_in_unit(static_cast<double>(b), "bytes").value_or("?"); };
        log(LogLevel::notice,
            "retention: pruned {} runs and the per-launch samples of {} entities, {} delivered messages; kept {} old "
            "runs pinned or needed by open regressions; {} -> {} in use",
            pruned->runs, pruned->sample_sets, pruned->messages, pruned->kept_protected, bytes(pruned->bytes_before),
            bytes(pruned->bytes_after));
        m_runs.clear();
    }

    // Writer thread: sends what the dispatcher says is due (one message per receiver at a time, no
    // faster than its rate limit) on the sender pool; re-arms itself for the next due message.
    void schedule_delivery() {
        if (m_stopping) return;
        const auto settings = std::atomic_load(&m_current);
        const std::int64_t now = wall_now_ms();
        Dispatcher::Plan plan = m_dispatcher.plan(settings->config.receivers, settings->config.lease, now);
        for (const Dispatcher::GivenUp& g : plan.given_up) {
            log(LogLevel::error, "alert {}: not sent: {}", g.message.key, g.why);
            m_metrics.alert_failed(g.message.receiver, true);
        }
        for (Dispatcher::Send& send : plan.sends) {
            ++m_sending;
            asio::post(m_senders, [this, send = std::move(send)]() mutable {
                const Sink* sink = find_sink(send.receiver.type);
                Delivery d = sink != nullptr ? sink->deliver(send.receiver, send.group, send.message.key)
                                             : Delivery{Delivery::Outcome::permanent, 0, {}, "no sink for " + send.receiver.type};
                asio::post(m_writer_io, [this, send = std::move(send), d = std::move(d)] { delivered(send, d); });
            });
        }
        if (plan.error) database_failed(*plan.error);
        update_outbox_depth();
        if (plan.wake_ms > 0) {
            m_delivery_timer.expires_after(std::chrono::milliseconds(std::max<std::int64_t>(plan.wake_ms - now, 20)));
            m_delivery_timer.async_wait([this](const boost::system::error_code& ec) {
                if (!ec) schedule_delivery();
            });
        }
    }

    void delivered(const Dispatcher::Send& send, const Delivery& d) {
        --m_sending;
        const OutboxMessage& m = send.message;
        const Receiver& r = send.receiver;
        auto recorded = m_dispatcher.record(send, d, wall_now_ms());
        if (!recorded) {
            database_failed(recorded.error());
        } else if (recorded->recorded == Dispatcher::Recorded::sent) {
            m_metrics.alert_sent(r.name);
            log(LogLevel::info, "alert sent to '{}' ({}): {} ({} alerts, key {}, attempt {})", r.name, r.type,
                send.group.title(), send.group.alerts.size(), m.key, m.attempts + 1);
        } else if (recorded->recorded == Dispatcher::Recorded::retry) {
            m_metrics.alert_failed(r.name, false);
            log(LogLevel::warning, "alert to '{}' ({}) failed: {}; attempt {} of {}, retried in {:.1f} s{}", r.name,
                r.type, d.error, m.attempts + 1, r.max_attempts,
                static_cast<double>(recorded->retry_in.count()) / 1000.0, d.retry_after ? " (Retry-After)" : "");
        } else {
            m_metrics.alert_failed(r.name, true);
            log(LogLevel::error, "alert to '{}' ({}) failed permanently after {} attempt(s): {}; key {}", r.name, r.type,
                m.attempts + 1, d.error, m.key);
        }
        schedule_delivery();
    }

    void update_outbox_depth() {
        if (auto depth = m_db.outbox().outbox_depth()) m_metrics.outbox_depth(static_cast<double>(*depth));
    }

    void database_failed(const Error& e) {
        m_database_ok = false;
        m_metrics.database_error();
        log(LogLevel::error, "{}", e.to_string());
    }

    // Main thread again: reload, stop, watchdog, HTTP.

    void reload() {
        notify_systemd("RELOADING=1");
        std::vector<std::string> problems;
        auto next = load_settings(m_config_path, problems);
        if (!next) {
            for (const std::string& p : problems) log(LogLevel::error, "{}", p);
            log(LogLevel::error, "configuration reload failed ({} problems); keeping the previous configuration",
                problems.size());
            m_metrics.reload(false);
            m_last_reload = fmt::format("failed: {} problems", problems.size());
            notify_systemd("READY=1");
            return;
        }
        for (const std::string& p : problems) log(LogLevel::warning, "{}", p);
        const Config& old = m_settings->config;
        const Config& now = next->config;
        if (now.database != old.database) log(LogLevel::warning, "'database' changed: takes effect after a restart");
        if (worker_count(now) != worker_count(old)) log(LogLevel::warning, "'workers' changed: takes effect after a restart");
        if (now.listen != old.listen) log(LogLevel::warning, "'listen' changed: takes effect after a restart");
        if (auto level = log_level_from_string(now.log_level)) set_log_level(*level);
        auto previous = m_settings;
        m_settings = next;
        m_pending.clear();  // the rescan finds them again under the new watch list
        if (auto watching = m_watcher.watch(now.watch); !watching) {
            log(LogLevel::error, "{}; keeping the previous configuration", watching.error().to_string());
            m_settings = previous;
            m_pending.clear();
            if (auto back = m_watcher.watch(previous->config.watch); !back) log(LogLevel::error, "{}", back.error().to_string());
            m_metrics.reload(false);
            m_last_reload = "failed: " + watching.error().to_string();
            notify_systemd("READY=1");
            return;
        }
        std::atomic_store(&m_current, m_settings);
        asio::post(m_writer_io, [this] { schedule_delivery(); });
        m_metrics.reload(true);
        m_last_reload = "ok";
        log(LogLevel::notice, "configuration reloaded: {} rules; watching {} directories", m_settings->rules.rules.size(),
            m_watcher.directories());
        notify_systemd("READY=1");
        dispatch();
        arm_tick();
    }

    void begin_stop(int signal) {
        if (m_stopping) {
            log(LogLevel::warning, "second stop signal: abandoning {} reports in flight", m_in_flight);
            abandon();
        }
        m_stopping = true;
        notify_systemd("STOPPING=1");
        log(LogLevel::notice, "stopping on {}: finishing {} reports in flight ({} waiting are left for the next start)",
            signal == SIGINT ? "SIGINT" : "SIGTERM", m_in_flight, m_pending.size() + m_ready.size());
        m_watcher.stop();
        m_http.stop();
        m_tick.cancel();
        m_watchdog.cancel();
        m_pending.clear();
        for (const Job& j : m_ready) m_busy.erase(j.path);
        m_ready.clear();
        if (m_in_flight == 0) {
            m_io.stop();
            return;
        }
        m_stop_timer.expires_after(m_settings->config.shutdown_timeout);
        m_stop_timer.async_wait([this](const boost::system::error_code& ec) {
            if (ec) return;
            log(LogLevel::warning, "shutdown_timeout reached: abandoning {} reports in flight (read again at the next "
                                   "start)", m_in_flight);
            abandon();
        });
    }

    // Leaves without waiting: an unfinished transaction is rolled back by SQLite at the next open.
    [[noreturn]] static void abandon() {
        std::fflush(stderr);
        std::_Exit(0);
    }

    void start_watchdog() {
        std::uint64_t usec = 0;
        if (sd_watchdog_enabled(0, &usec) <= 0 || usec == 0) return;
        m_watchdog_interval = std::chrono::microseconds(usec / 2);
        ping_watchdog();
    }

    void ping_watchdog() {
        notify_systemd("WATCHDOG=1");
        m_watchdog.expires_after(m_watchdog_interval);
        m_watchdog.async_wait([this](const boost::system::error_code& ec) {
            if (!ec && !m_stopping) ping_watchdog();
        });
    }

    HttpResponse http(const HttpRequest& request) {
        const std::string_view method = request.method;
        const std::string_view target = request.target;
        const std::string_view path = target.substr(0, target.find('?'));
        if (auto refused = m_dashboard->refuse_host(request)) return std::move(*refused);
        if (path != "/healthz" && path != "/metrics") {
            // The dashboard reads on its own connection, on this thread.
            if (auto page = m_dashboard->handle(request)) return std::move(*page);
            return web::error_response(404, "no such page");
        }
        if (method != "GET" && method != "HEAD") return {405, "text/plain; charset=utf-8", "only GET\n", {}};
        m_metrics.watched_directories(static_cast<double>(m_watcher.directories()));
        if (path == "/metrics") return {200, "text/plain; version=0.0.4; charset=utf-8", m_metrics.text(), {}};
        const bool healthy = !m_stopping && m_database_ok;
        nlohmann::json doc = {
            {"status", m_stopping ? "stopping" : (m_database_ok ? "ok" : "database error")},
            {"uptime_seconds", std::chrono::duration<double>(Clock::now() - m_started).count()},
            {"watched_directories", m_watcher.directories()},
            {"waiting", m_pending.size() + m_ready.size()},
            {"in_flight", m_in_flight},
            {"stored", m_stored},
            {"failed", m_failed},
            {"last_reload", m_last_reload},
        };
        {
            std::lock_guard lock(m_quarantine_mutex);
            nlohmann::json files = nlohmann::json::array();
            for (std::size_t i = 0; i < m_quarantined.size() && i < k_max_quarantined_listed; ++i)
                files.push_back({{"path", m_quarantined[i].path},
                                 {"reason", m_quarantined[i].reason},
                                 {"at", m_quarantined[i].at}});
            doc["quarantined"] = {{"count", m_quarantined.size()}, {"files", std::move(files)}};
        }
        return {healthy ? 200u : 503u, "application/json", doc.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n", {}};
    }

    const std::string m_config_path;
    std::shared_ptr<const Settings> m_settings;
    Db m_db;         // used on the writer thread only
    RunCache m_runs;  // idem
    const std::string m_db_path;
    // This daemon among a fleet's: host name and configuration file.
    const std::string m_owner = owner_name(m_config_path);
    DaemonMetrics m_metrics;

    asio::io_context m_io;
    asio::signal_set m_signals;
    asio::steady_timer m_tick;
    asio::steady_timer m_watchdog;
    asio::steady_timer m_stop_timer;
    asio::thread_pool m_workers;
    asio::io_context m_writer_io;
    asio::executor_work_guard<asio::io_context::executor_type> m_writer_guard;
    std::thread m_writer_thread;
    DirectoryWatcher m_watcher;
    std::set<std::string> m_skipped;
    static constexpr std::size_t k_max_skipped_remembered = 100'000;
    HttpServer m_http;
    std::unique_ptr<web::Dashboard> m_dashboard;  // main thread
    asio::thread_pool m_senders{2};            // blocking deliveries (libcurl)
    asio::steady_timer m_delivery_timer{m_writer_io};
    asio::steady_timer m_retention_timer{m_writer_io};
    asio::steady_timer m_jobs_timer{m_writer_io};
    asio::steady_timer m_marks_timer{m_writer_io};
    std::map<std::string, Clock::time_point> m_job_since;  // a waiting job instance -> when first seen (writer)
    std::shared_ptr<const Settings> m_current;  // the settings deliveries use (atomic load/store)
    // Writer thread only:
    Dispatcher m_dispatcher{m_db.outbox(), m_owner};  // writer thread
    std::size_t m_sending = 0;

    QuietQueue m_pending;  // waiting for their quiet period
    std::deque<Job> m_ready;                             // waiting for a worker
    std::unordered_set<std::string> m_busy;              // ready or in flight
    std::size_t m_in_flight = 0;
    bool m_tick_armed = false;
    bool m_running = false;
    std::atomic<bool> m_stopping{false};
    std::atomic<bool> m_database_ok{true};
    std::chrono::microseconds m_watchdog_interval{0};
    Clock::time_point m_started;
    Clock::time_point m_last_status{};
    std::size_t m_stored = 0;
    std::size_t m_failed = 0;
    std::string m_last_reload = "none";
    // The quarantined files, as the writer last read them (for /healthz).
    struct Quarantined {
        std::string path;
        std::string reason;
        std::string at;
    };
    std::mutex m_quarantine_mutex;
    std::vector<Quarantined> m_quarantined;
    static constexpr std::size_t k_max_quarantined_listed = 100;
    static constexpr std::chrono::seconds k_marks_interval{2};
    static constexpr int k_deaths_to_quarantine = 2;
    const std::string m_crash_note = crash_note_path(m_db_path, m_db.is_postgresql(), m_owner);
    // Tests only: a worker aborts before reading a file whose path holds this.
    const std::string m_test_abort_on = [] {
        const char* v = std::getenv("PERFWATCH_TEST_ABORT_ON");
        return std::string(v != nullptr ? v : "");
    }();
    static constexpr std::chrono::milliseconds k_first_retry{2000};
    // The first retention pass, once the start's catch-up has begun.
    static constexpr std::chrono::milliseconds k_first_retention{5000};
    std::chrono::milliseconds m_retry_delay = k_first_retry;
};

}  // namespace

Result<std::unique_ptr<web::Dashboard>> open_dashboard(const std::string& db_path, const Config& config) {
    web::DashboardOptions options;
    // Host names the dashboard answers for besides addresses: where people reach it and this machine.
    if (!config.dashboard_base_url.empty()) {
        std::string_view host = config.dashboard_base_url;
        host.remove_prefix(host.find("://") + 3);
        host = host.substr(0, host.find_first_of("/?#"));
        if (const std::size_t at = host.rfind('@'); at != std::string_view::npos) host.remove_prefix(at + 1);
        if (!host.starts_with('[')) host = host.substr(0, host.find(':'));
        if (!host.empty()) options.host_names.emplace_back(host);
    }
    options.commit_url = config.dashboard_commit_url;
    options.token_name = config.dashboard_token_name;
    options.reports_base_url = config.reports_base_url;
    char name[256] = {};
    if (::gethostname(name, sizeof name - 1) == 0 && name[0] != '\0') options.host_names.emplace_back(name);
    if (!config.dashboard_token_file.empty()) {
        auto token = read_dashboard_token(config.dashboard_token_file);
        if (!token) return std::unexpected(token.error());
        options.token = std::move(*token);
    }
    auto db = Db::open(db_path);
    if (!db) return std::unexpected(db.error());
    return std::make_unique<web::Dashboard>(std::move(*db), std::move(options));
}

int run_daemon(const std::string& config_path, const std::string& db_override) {
    std::vector<std::string> problems;
    auto settings = load_settings(config_path, problems);
    for (const std::string& p : problems) log(settings ? LogLevel::warning : LogLevel::error, "{}", p);
    if (!settings) {
        log(LogLevel::error, "{}: the configuration has errors; not starting", config_path);
        return 2;
    }
    if (auto level = log_level_from_string(settings->config.log_level)) set_log_level(*level);
    const std::string db_path =
        !db_override.empty() ? db_override : settings->config.database.value_or("perfwatch.db");
    export_password_file(settings->config);
    auto db = Db::open(db_path);
    if (!db) {
        log(LogLevel::error, "{}", db.error().to_string());
        return 2;
    }
    // Named as Db names it: a PostgreSQL password is masked in the log and /healthz.
    const std::string db_name = db->name();
    auto dashboard = open_dashboard(db_path, settings->config);
    if (!dashboard) {
        log(LogLevel::error, "{}", dashboard.error().to_string());
        return 2;
    }
    Daemon daemon(config_path, std::move(settings), std::move(*db), db_name, std::move(*dashboard));
    return daemon.run();
}

}  // namespace perfwatch
