import type { DeadLetter } from "../../libs/streams/dead-letters.js";
import type { RunRecord } from "../../libs/os-store/run-record.js";
import { DOCS_PREFIX } from "../../libs/http/api-docs.js";
import { CONSOLE_PATHS } from "./console-paths.js";
import { CSRF_FIELD } from "./csrf-guard.js";
import type { DeviceOverview } from "./device-overview.js";
import { html, type SafeHtml } from "./html.js";
import type { GroupHealth } from "./pipeline-health.js";
import type { Problem } from "./problems.js";
import type { ResultDetail } from "./result-detail.js";
import type { RunFilter, RunPage } from "./run-pages.js";

const iso = (ms: number | undefined) => (ms === undefined ? "" : new Date(ms).toISOString());

function age(ms: number, now: number): string {
  const seconds = Math.max(0, Math.round((now - ms) / 1000));
  if (seconds < 120) return `${seconds} s`;
  if (seconds < 7200) return `${Math.round(seconds / 60)} min`;
  if (seconds < 172_800) return `${Math.round(seconds / 3600)} h`;
  return `${Math.round(seconds / 86_400)} d`;
}

const time = (ms: number | undefined) =>
  ms === undefined ? "" : html`<time datetime="${iso(ms)}">${iso(ms)}</time>`;

/** A table with a header row of column names and the given body rows. */
function dataTable(columns: readonly string[], rows: SafeHtml[]): SafeHtml {
  return html`<table>
    <thead>
      <tr>
        ${columns.map((column) => html`<th scope="col">${column}</th>`)}
      </tr>
    </thead>
    <tbody>
      ${rows}
    </tbody>
  </table>`;
}

/** A panel refreshes itself from `data-src` when the live feed says something changed (console.js). */
function panel(name: string, src: string, title: string, body: SafeHtml): SafeHtml {
  return html`<section
    id="${name}"
    data-panel="${name}"
    data-src="${src}"
    aria-labelledby="${name}-title"
    aria-live="polite"
  >
    <h2 id="${name}-title">${title}</h2>
    ${body}
  </section>`;
}

/** The hidden field that carries the session's CSRF token in every form that changes something (csrf-guard.ts). */
const csrfField = (csrf: string) => html`<input type="hidden" name="${CSRF_FIELD}" value="${csrf}" />`;

export function page(title: string, main: SafeHtml, csrf: string): string {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <meta name="viewport" content="width=device-width, initial-scale=1" />
        <title>${title} · Lampline console</title>
        <link rel="stylesheet" href="${CONSOLE_PATHS.stylesheet}" />
      </head>
      <body>
        <header>
          <nav aria-label="Console">
            <a href="${CONSOLE_PATHS.overview}">Overview</a> <a href="${CONSOLE_PATHS.runs}">Runs</a
            ><a href="${CONSOLE_PATHS.problems}">Rejections and protocol errors</a>
            <a href="${CONSOLE_PATHS.playbackQueue}/">Playback queue</a><a href="${DOCS_PREFIX}">API docs</a>
            <form method="post" action="${CONSOLE_PATHS.logout}">
              ${csrfField(csrf)}<button type="submit">Sign out</button>
            </form>
          </nav>
          <p id="live-status" role="status">Live updates: connecting…</p>
        </header>
        <main>
          <h1>${title}</h1>
          ${main}
        </main>
        <script src="${CONSOLE_PATHS.script}" defer></script>
      </body>
    </html>`.text;
}

export function loginPage(message: string | undefined): string {
  return html`<!doctype html>
    <html lang="en">
      <head>
        <meta charset="utf-8" />
        <title>Sign in · Lampline console</title>
        <link rel="stylesheet" href="${CONSOLE_PATHS.stylesheet}" />
      </head>
      <body>
        <main>
          <h1>Lampline operator console</h1>
          ${message ? html`<p role="alert">${message}</p>` : ""}
          <form method="post" action="${CONSOLE_PATHS.login}">
            <label for="token"
              >Operator token (<code>npm run -s token -- --device ops --role operator</code>)</label
            >
            <textarea id="token" name="token" rows="4" required autocomplete="off"></textarea
            ><button type="submit">Sign in</button>
          </form>
        </main>
      </body>
    </html>`.text;
}

export function devicesPanel(devices: DeviceOverview[], now: number): SafeHtml {
  const rows = devices.map(
    (device) =>
      html`<tr data-device="${device.deviceId}">
        <th scope="row">
          <a href="${CONSOLE_PATHS.runs}?deviceId=${encodeURIComponent(device.deviceId)}"
            >${device.deviceId}</a
          >
        </th>
        <td>
          ${device.lampGateway ? html`<span class="ok">connected</span> via ${device.lampGateway}` : html`<span class="off">offline</span>`}
        </td>
        <td>
          ${
            device.harness
              ? html`<span class="${device.harness.live ? "ok" : "off"}"
                    >${device.harness.live ? "open" : device.harness.state === "open" ? "stale" : "closed"}</span
                  >
                  since ${age(device.harness.closedAt ?? device.harness.openedAt, now)} · router
                  ${device.harness.router}`
              : html`<span class="off">none</span>`
          }
        </td>
        <td>${device.harness ? device.harness.capabilities.join(", ") || "none (legacy)" : ""}</td>
        <td>${device.harness?.transportInstanceId ?? ""}</td>
        <td>${device.cursor ? `${device.cursor.cursor} @ ${device.cursor.transportInstanceId}` : ""}</td>
        <td>${device.runs}</td>
        <td>${device.pendingRuns}</td>
      </tr>`,
  );
  return panel(
    "devices",
    CONSOLE_PATHS.panel("devices"),
    "Devices",
    devices.length === 0
      ? html`<p>No devices yet.</p>`
      : dataTable(
          [
            "Device",
            "Lamp session",
            "Harness session",
            "Capabilities",
            "Transport instance",
            "Cursor",
            "Runs",
            "Pending",
          ],
          rows,
        ),
  );
}

export function pipelinePanel(
  streams: { stream: string; length: number; groups: GroupHealth[] }[],
  letters: { stream: string; total: number; entries: DeadLetter[] }[],
  csrf: string,
  redriven: string | undefined,
): SafeHtml {
  const groupRows = streams.flatMap(({ stream, length, groups }) =>
    groups.length === 0
      ? [
          html`<tr>
            <th scope="row">${stream}</th>
            <td colspan="4">no consumer group yet</td>
            <td>${length}</td>
          </tr>`,
        ]
      : groups.map(
          (group) =>
            html`<tr data-group="${stream}/${group.group}">
              <th scope="row">${stream}</th>
              <td>${group.group}</td>
              <td>${group.consumers}</td>
              <td class="lag">${group.lag ?? "unknown"}</td>
              <td>${group.pending}</td>
              <td>${length}</td>
            </tr>`,
        ),
  );
  const entries = letters.flatMap(({ entries: list }) => list);
  const letterRows = entries.map(
    (letter) =>
      html`<tr data-dead-letter="${letter.id}">
        <th scope="row">${letter.stream}</th>
        <td>${letter.group}</td>
        <td><code>${letter.originalId}</code></td>
        <td class="error">${letter.error}</td>
        <td>${letter.deliveries}</td>
        <td>${letter.failedAt}</td>
        <td>
          <details>
            <summary>payload</summary>
            <pre>${letter.payload}</pre>
          </details>
        </td>
        <td>
          <form method="post" action="${CONSOLE_PATHS.redrive}">
            ${csrfField(csrf)}<input type="hidden" name="stream" value="${letter.stream}" /><input
              type="hidden"
              name="id"
              value="${letter.id}"
            />
            <button type="submit" aria-label="Redrive dead letter ${letter.id} of ${letter.stream}">
              Redrive
            </button>
          </form>
        </td>
      </tr>`,
  );
  const totals = letters.filter((list) => list.total > 0).map((list) => `${list.stream}: ${list.total}`);
  return panel(
    "pipeline",
    CONSOLE_PATHS.panel("pipeline"),
    "Streams and dead letters",
    html`<h3>Stream lag per consumer group</h3>
      ${dataTable(["Stream", "Group", "Consumers", "Lag", "Pending", "Length"], groupRows)}
      <h3 id="dead-letters">Dead letters</h3>
      ${redriven ? html`<p role="status" class="notice">${redriven}</p>` : ""}
      ${
        entries.length === 0
          ? html`<p>No dead letters.</p>`
          : html`<p>${totals.join(" · ")}</p>
              ${dataTable(["Stream", "Group", "Original entry", "Error", "Deliveries", "Failed at", "Payload", "Action"], letterRows)}`
      }`,
  );
}

const STATES = ["pending", "resolved", "unknown"] as const;

export function runFilterForm(filter: RunFilter, deviceIds: string[]): SafeHtml {
  const option = (value: string, label: string, selected: boolean) =>
    html`<option value="${value}" ${selected ? html` selected` : ""}>${label}</option>`;
  return html`<form method="get" action="${CONSOLE_PATHS.runs}" class="filters" aria-label="Filter runs">
    <label
      >Device
      <select name="deviceId">
        ${option("", "all devices", !filter.deviceId)}${deviceIds.map((id) => option(id, id, filter.deviceId === id))}
      </select></label
    >
    <label
      >State
      <select name="state">
        ${option("", "any", !filter.state)}${STATES.map((state) => option(state, state, filter.state === state))}
      </select></label
    >
    <label
      >Created from (UTC)
      <input
        type="datetime-local"
        name="from"
        value="${filter.from === undefined ? "" : iso(filter.from).slice(0, 16)}"
    /></label>
    <label
      >to (UTC)
      <input
        type="datetime-local"
        name="to"
        value="${filter.to === undefined ? "" : iso(filter.to).slice(0, 16)}"
    /></label>
    <button type="submit">Show</button>
  </form>`;
}

export function runsPanel(
  result: RunPage,
  query: URLSearchParams,
  groupSizes: Map<string, number>,
  now: number,
): SafeHtml {
  const rows = result.runs.map((run: RunRecord) => {
    const size = run.resultKey ? groupSizes.get(`${run.deviceId}|${run.resultKey}`) : undefined;
    return html`<tr data-run="${run.runId}" data-state="${run.state}">
      <td><code>${run.runId}</code></td>
      <td>${run.deviceId}</td>
      <td>${run.agentId}</td>
      <td>${run.text}</td>
      <td class="state">${run.state}</td>
      <td>${run.outcome ?? ""}</td>
      <td>${run.endReason ?? ""}</td>
      <td>${time(run.createdAt)} (${age(run.createdAt, now)} ago)</td>
      <td>
        ${run.resultId ? html`<a href="${CONSOLE_PATHS.result(run.deviceId, run.resultId)}">${run.resultId}</a>${size && size > 1 ? html` <span class="group">one answer for ${size} requests</span>` : ""}` : ""}
      </td>
    </tr>`;
  });
  const nextQuery = new URLSearchParams(query);
  if (result.next) nextQuery.set("after", result.next);
  const src = `${CONSOLE_PATHS.panel("runs")}?${query.toString()}`;
  return panel(
    "runs",
    src,
    "Runs",
    html`${
        result.runs.length === 0
          ? html`<p>No runs match.</p>`
          : dataTable(
              ["Run", "Device", "Agent", "Request", "State", "Outcome", "Reason", "Created", "Result"],
              rows,
            )
      }
      <nav aria-label="Pages">
        ${query.has("after") ? html`<a href="${CONSOLE_PATHS.runs}?${withoutAfter(query)}">First page</a>` : ""}
        ${result.next ? html`<a rel="next" href="${CONSOLE_PATHS.runs}?${nextQuery.toString()}">Next page</a>` : ""}
      </nav>`,
  );
}

function withoutAfter(query: URLSearchParams): string {
  const copy = new URLSearchParams(query);
  copy.delete("after");
  return copy.toString();
}

export function resultPanel(detail: ResultDetail): SafeHtml {
  const { result, members, outbox, timeline } = detail;
  const memberItems = members.map(
    (member) =>
      html`<li data-member="${member.runId}">
        <q>${member.run?.text ?? "(run no longer stored)"}</q>
        <small
          >run <code>${member.runId}</code> · key <code>${member.idempotencyKey}</code> · delivery
          <code>${member.deliveryId}</code
          >${member.run ? ` · ${member.run.replyRoute} route, target ${member.run.voiceTargetId}` : ""}</small
        >
      </li>`,
  );
  const steps = timeline.map(
    (step) =>
      html`<li data-step="${step.subject}:${step.what}">
        ${time(step.at)}
        <strong>${step.subject}</strong>
        ${step.what}${step.reason ? html` <span class="reason">(${step.reason})</span>` : ""}
      </li>`,
  );
  return panel(
    "result",
    CONSOLE_PATHS.panel(
      `result/${encodeURIComponent(result.deviceId)}/${encodeURIComponent(result.resultId)}`,
    ),
    `Result ${result.resultId}`,
    html`<dl>
        <dt>Device</dt>
        <dd>${result.deviceId}</dd>
        <dt>Agent</dt>
        <dd>${result.agentId}</dd>
        <dt>Outcome</dt>
        <dd class="outcome">${result.outcome}</dd>
        <dt>Origin instance</dt>
        <dd>${result.serverInstanceId}</dd>
        <dt>Stored</dt>
        <dd>${time(result.storedAt)}</dd>
        <dt>Playback</dt>
        <dd class="playback-state">
          ${outbox ? outbox.state : "no outbox entry"}${outbox?.reason ? html` <span class="reason">(${outbox.reason})</span>` : ""}
        </dd>
      </dl>
      <figure class="membership" aria-labelledby="membership-caption">
        <figcaption id="membership-caption">
          One answer for ${members.length} ${members.length === 1 ? "request" : "requests"}
        </figcaption>
        <ol class="members">
          ${memberItems}
        </ol>
        <div class="answer" aria-label="The one answer">
          <h3>Full text</h3>
          <pre class="full-text">${result.fullText}</pre>
          <h3>Speech text</h3>
          <p class="speech-text">${outbox?.speechText ?? ""}</p>
        </div>
      </figure>
      <h3>Playback timeline</h3>
      ${
        steps.length === 0
          ? html`<p>Nothing yet.</p>`
          : html`<ol class="timeline">
              ${steps}
            </ol>`
      }`,
  );
}

export function problemsPanel(problems: Problem[]): SafeHtml {
  const rows = problems.map(
    (problem) =>
      html`<tr data-problem="${problem.kind}">
        <td>${time(problem.at)}</td>
        <td>${problem.deviceId}</td>
        <td>${problem.kind}</td>
        <td class="reason">${problem.reason}</td>
        <td>${problem.resultId ?? ""}</td>
        <td>${problem.detail}</td>
      </tr>`,
  );
  return panel(
    "problems",
    CONSOLE_PATHS.panel("problems"),
    "Rejected events and protocol errors",
    problems.length === 0
      ? html`<p>None recorded.</p>`
      : dataTable(["At", "Device", "Kind", "Reason", "Result", "Detail"], rows),
  );
}
