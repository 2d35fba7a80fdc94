#include "app/daemon_metrics.hpp"

#include <prometheus/text_serializer.h>

namespace perfwatch {

namespace {

prometheus::Family<prometheus::Counter>& counter(prometheus::Registry& r, const char* name, const char* help) {
    return prometheus::BuildCounter().Name(name).Help(help).Register(r);
}

prometheus::Family<prometheus::Gauge>& gauge(prometheus::Registry& r, const char* name, const char* help) {
    return prometheus::BuildGauge().Name(name).Help(help).Register(r);
}

}  // namespace

DaemonMetrics::DaemonMetrics()
    : m_registry(std::make_shared<prometheus::Registry>()),
      m_seen(counter(*m_registry, "perfwatch_reports_seen_total", "Report files read (new or changed)").Add({})),
      m_ingested(counter(*m_registry, "perfwatch_reports_ingested_total", "Reports stored as new runs")),
      m_duplicate(counter(*m_registry, "perfwatch_reports_duplicate_total",
                          "Reports whose content was already stored")),
      m_failed(counter(*m_registry, "perfwatch_reports_failed_total", "Reports that could not be read or stored")),
      m_latency(prometheus::BuildHistogram()
                    .Name("perfwatch_ingest_latency_seconds")
                    .Help("Seconds from a report's last write to its findings stored (includes the quiet period)")
                    .Register(*m_registry)
                    .Add({}, prometheus::Histogram::BucketBoundaries{0.05, 0.1, 0.25, 0.5, 1, 1.5, 2, 3, 5, 10, 30,
                                                                     60, 300})),
      m_rules(counter(*m_registry, "perfwatch_rules_evaluated_total", "Rule evaluations (rule x entity)").Add({})),
      m_findings(counter(*m_registry, "perfwatch_findings_total", "Findings stored, by severity")),
      m_waiting(gauge(*m_registry, "perfwatch_reports_waiting", "Reports waiting for their quiet period or a worker")
                    .Add({})),
      m_in_flight(gauge(*m_registry, "perfwatch_reports_in_flight", "Reports being read, stored or evaluated").Add({})),
      m_reloads(counter(*m_registry, "perfwatch_config_reloads_total", "Configuration reloads (SIGHUP), by result")),
      m_watched(gauge(*m_registry, "perfwatch_watched_directories", "Directories under inotify watch").Add({})),
      m_db_errors(counter(*m_registry, "perfwatch_database_errors_total",
                          "Reports not stored because the database failed (retried on their next change or restart)")
                      .Add({})),
      m_outbox(gauge(*m_registry, "perfwatch_outbox_depth", "Alert messages waiting to be delivered").Add({})),
      m_quarantined(gauge(*m_registry, "perfwatch_quarantined_files",
                          "Watched files whose reading ended the reader, not read again until retried")
                        .Add({})),
      m_sent(counter(*m_registry, "perfwatch_alerts_sent_total", "Alert messages delivered, by receiver")),
      m_failed_alerts(counter(*m_registry, "perfwatch_alerts_failed_total",
                              "Failed delivery attempts, by receiver; permanent=\"true\" when given up")) {}

std::string DaemonMetrics::text() const { return prometheus::TextSerializer().Serialize(m_registry->Collect()); }

}  // namespace perfwatch
