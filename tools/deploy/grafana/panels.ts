/**
 * What each dashboard shows, as PromQL over the series the services export (names and labels exactly as defined
 * in the `*-metrics.ts` files). `$__rate_interval` is Grafana's; the live observability test substitutes a window.
 */
export interface PanelSpec {
  title: string;
  expr: string;
  legend: string;
  unit: string;
  kind: "timeseries" | "stat";
}

export interface DashboardSpec {
  uid: string;
  title: string;
  description: string;
  panels: PanelSpec[];
}

const rate = (series: string, by: string) => `sum by (${by}) (rate(${series}[$__rate_interval]))`;

export const DASHBOARDS: readonly DashboardSpec[] = [
  {
    uid: "lampline-overview",
    title: "Lampline / Overview",
    description: "Inputs in, results out, what was spoken, what was not, and how long it took end to end.",
    panels: [
      {
        title: "Inputs accepted (reservations)",
        expr: rate("harness_gateway_reservations_total", "status"),
        legend: "{{status}}",
        unit: "reqps",
        kind: "timeseries",
      },
      {
        title: "Results by store outcome",
        expr: rate("os_results_applied_total", "outcome"),
        legend: "{{outcome}}",
        unit: "ops",
        kind: "timeseries",
      },
      {
        title: "Utterances by state",
        expr: rate('tts_playback_transitions_total{kind="answer"}', "state"),
        legend: "{{state}}",
        unit: "ops",
        kind: "timeseries",
      },
      {
        title: "Failure notices sent",
        expr: rate('tts_playback_starts_sent_total{kind="notice"}', "kind"),
        legend: "{{kind}}",
        unit: "ops",
        kind: "timeseries",
      },
      {
        title: "Suppressed, by reason",
        expr: rate("tts_suppressions_total", "reason"),
        legend: "{{reason}}",
        unit: "ops",
        kind: "timeseries",
      },
      {
        title: "Uncertain playbacks",
        expr: 'sum(increase(tts_playback_transitions_total{state="uncertain"}[$__rate_interval]))',
        legend: "uncertain",
        unit: "short",
        kind: "stat",
      },
      {
        title: "Errors: rejected events, protocol errors, dead letters",
        expr:
          'label_replace(sum(rate(os_rejected_events_total[$__rate_interval])), "kind", "rejected", "", "")' +
          ' or label_replace(sum(rate(os_protocol_errors_total[$__rate_interval])), "kind", "protocol", "", "")' +
          ' or label_replace(sum(rate(stream_entries_dead_lettered_total[$__rate_interval])), "kind", "dead_lettered", "", "")',
        legend: "{{kind}}",
        unit: "ops",
        kind: "timeseries",
      },
      {
        title: "End-to-end latency: engine completion → playback.start (p50, p95)",
        expr:
          'label_replace(histogram_quantile(0.5, sum by (le) (rate(lampline_completion_to_playback_start_seconds_bucket[$__rate_interval]))), "q", "p50", "", "")' +
          ' or label_replace(histogram_quantile(0.95, sum by (le) (rate(lampline_completion_to_playback_start_seconds_bucket[$__rate_interval]))), "q", "p95", "", "")',
        legend: "{{q}}",
        unit: "s",
        kind: "timeseries",
      },
    ],
  },
  {
    uid: "lampline-harness",
    title: "Lampline / Harness",
    description: "engine-runner, evidence-extractor, result-producer and the Harness gateway.",
    panels: [
      {
        title: "Engine records appended",
        expr: rate("engine_records_appended_total", "agent, direction"),
        legend: "{{agent}} {{direction}}",
        unit: "ops",
        kind: "timeseries",
      },
      {
        title: "Engine restarts",
        expr: "sum by (agent) (increase(engine_runtime_restarts_total[$__rate_interval]))",
        legend: "{{agent}}",
        unit: "short",
        kind: "timeseries",
      },
      {
        title: "Evidence emitted, by kind",
        expr: rate("evidence_extractor_evidence_total", "kind"),
        legend: "{{kind}}",
        unit: "ops",
        kind: "timeseries",
      },
      {
        title: "Results withheld, by reason",
        expr: rate("result_producer_withheld_results_total", "reason"),
        legend: "{{reason}}",
        unit: "ops",
        kind: "timeseries",
      },
      {
        title: "Harness requests answered with an error",
        expr: rate("harness_gateway_rejected_requests_total", "op, code"),
        legend: "{{op}} {{code}}",
        unit: "reqps",
        kind: "timeseries",
      },
      {
        title: "Harness sessions",
        expr: "sum by (service) (harness_gateway_sessions)",
        legend: "{{service}}",
        unit: "short",
        kind: "stat",
      },
    ],
  },
  {
    uid: "lampline-os",
    title: "Lampline / OS",
    description: "device-gateway, router, run-resolver and tts-dispatcher.",
    panels: [
      {
        title: "Lamp frames, by type and result",
        expr: rate("os_lamp_frames_total", "type, result"),
        legend: "{{type}} {{result}}",
        unit: "ops",
        kind: "timeseries",
      },
      {
        title: "Harness frames handled by the router",
        expr: rate("os_router_frames_total", "kind, verdict"),
        legend: "{{kind}} {{verdict}}",
        unit: "ops",
        kind: "timeseries",
      },
      {
        title: "Rejected events, by reason",
        expr: rate("os_rejected_events_total", "reason"),
        legend: "{{reason}}",
        unit: "ops",
        kind: "timeseries",
      },
      {
        title: "Runs ended unknown at their deadline, by reason",
        expr: "sum by (reason) (increase(os_run_deadlines_total[$__rate_interval]))",
        legend: "{{reason}}",
        unit: "short",
        kind: "timeseries",
      },
      {
        title: "Outbox entries entering each state",
        expr: rate("tts_outbox_transitions_total", "state"),
        legend: "{{state}}",
        unit: "ops",
        kind: "timeseries",
      },
      {
        title: "Lamp ack wait (p95)",
        expr: "histogram_quantile(0.95, sum by (le) (rate(tts_playback_ack_wait_seconds_bucket[$__rate_interval])))",
        legend: "p95",
        unit: "s",
        kind: "timeseries",
      },
      {
        title: "Open Lamp sockets",
        expr: "sum(os_lamp_sockets)",
        legend: "sockets",
        unit: "short",
        kind: "stat",
      },
    ],
  },
  {
    uid: "lampline-backlog",
    title: "Lampline / Redis and BullMQ backlog",
    description:
      "What KEDA scales on: per consumer group lag and pending entries, dead letters, and the playback queue.",
    panels: [
      {
        title: "Consumer group lag",
        expr: "max by (stream, group) (stream_group_lag)",
        legend: "{{stream}} / {{group}}",
        unit: "short",
        kind: "timeseries",
      },
      {
        title: "Consumer group pending entries",
        expr: "max by (stream, group) (stream_group_pending)",
        legend: "{{stream}} / {{group}}",
        unit: "short",
        kind: "timeseries",
      },
      {
        title: "Dead-letter streams",
        expr: "max by (stream) (stream_dead_letter_length)",
        legend: "{{stream}}",
        unit: "short",
        kind: "timeseries",
      },
      {
        title: "Handler p95 by group",
        expr: "histogram_quantile(0.95, sum by (le, group) (rate(stream_handler_duration_seconds_bucket[$__rate_interval])))",
        legend: "{{group}}",
        unit: "s",
        kind: "timeseries",
      },
      {
        title: "lamp-playback jobs by state",
        expr: "max by (state) (tts_playback_queue_jobs)",
        legend: "{{state}}",
        unit: "short",
        kind: "timeseries",
      },
      {
        title: "Process resident memory by service",
        expr: "sum by (service) (process_resident_memory_bytes)",
        legend: "{{service}}",
        unit: "bytes",
        kind: "timeseries",
      },
    ],
  },
];
