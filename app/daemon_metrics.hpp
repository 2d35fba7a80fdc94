#pragma once

#include <prometheus/counter.h>
#include <prometheus/family.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include <memory>
#include <string>

#include "core/model.hpp"

namespace perfwatch {

// The daemon's counters, exposed at /metrics in the Prometheus text format. Thread-safe.
class DaemonMetrics {
public:
    DaemonMetrics();

    void report_seen() { m_seen.Increment(); }
    // `format` is the detected format id, or "unrecognized" when no collector knew the file.
    void report_ingested(const std::string& format) { m_ingested.Add({{"format", format}}).Increment(); }
    void report_duplicate(const std::string& format) { m_duplicate.Add({{"format", format}}).Increment(); }
    void report_failed(const std::string& format) { m_failed.Add({{"format", format}}).Increment(); }
    // Seconds from the report's last write to its findings stored.
    void ingest_latency(double seconds) { m_latency.Observe(seconds); }
    void rules_evaluated(double n) { m_rules.Increment(n); }
    void finding(Severity s) { m_findings.Add({{"severity", std::string(to_string(s))}}).Increment(); }
    void queue(double waiting, double in_flight) {
        m_waiting.Set(waiting);
        m_in_flight.Set(in_flight);
    }
    void reload(bool ok) { m_reloads.Add({{"result", ok ? "ok" : "failed"}}).Increment(); }
    void watched_directories(double n) { m_watched.Set(n); }
    void database_error() { m_db_errors.Increment(); }
    void outbox_depth(double n) { m_outbox.Set(n); }
    // Watched files quarantined (reading them ended the reader), not read again until retried.
    void quarantined_files(double n) { m_quarantined.Set(n); }
    void alert_sent(const std::string& receiver) { m_sent.Add({{"receiver", receiver}}).Increment(); }
    // A failed attempt: `permanent` when it will not be retried.
    void alert_failed(const std::string& receiver, bool permanent) {
        m_failed_alerts.Add({{"receiver", receiver}, {"permanent", permanent ? "true" : "false"}}).Increment();
    }

    // The exposition text of every metric.
    std::string text() const;

private:
    std::shared_ptr<prometheus::Registry> m_registry;
    prometheus::Counter& m_seen;
    prometheus::Family<prometheus::Counter>& m_ingested;
    prometheus::Family<prometheus::Counter>& m_duplicate;
    prometheus::Family<prometheus::Counter>& m_failed;
    prometheus::Histogram& m_latency;
    prometheus::Counter& m_rules;
    prometheus::Family<prometheus::Counter>& m_findings;
    prometheus::Gauge& m_waiting;
    prometheus::Gauge& m_in_flight;
    prometheus::Family<prometheus::Counter>& m_reloads;
    prometheus::Gauge& m_watched;
    prometheus::Counter& m_db_errors;
    prometheus::Gauge& m_outbox;
    prometheus::Gauge& m_quarantined;
    prometheus::Family<prometheus::Counter>& m_sent;
    prometheus::Family<prometheus::Counter>& m_failed_alerts;
};

}  // namespace perfwatch
