import { readFileSync } from "node:fs";
import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { RedisClient } from "../../libs/redis/redis-client.js";
import { decodeJwt } from "jose";
import { z } from "zod";
import { deviceIdSchema } from "../../libs/auth/tokens.js";
import { opaqueIdSchema } from "../../libs/contract/identifiers.js";
import { BEARER, errorResponses, textResponse } from "../../libs/http/api-docs.js";
import type { OperatorGate } from "../../libs/http/operator-gate.js";
import type { Counter } from "prom-client";
import { activeDevices } from "../../libs/os-store/device-activity.js";
import { runStateSchema } from "../../libs/os-store/run-record.js";
import type { Keyspace } from "../../libs/redis/keyspace.js";
import { redriveDeadLetter } from "../../libs/streams/dead-letters.js";
import type { OsQueries } from "../../libs/os-store/os-queries.js";
import type { OsAuthenticator } from "../../libs/os-store/os-authenticator.js";
import { CONSOLE, CONSOLE_PATHS } from "./console-paths.js";
import { deviceOverviews } from "./device-overview.js";
import { html, type SafeHtml } from "./html.js";
import type { ConsoleLiveFeed } from "./live-feed.js";
import { CSRF_FIELD, guardStateChanges, refuseForgery, type CsrfGuard } from "./csrf-guard.js";
import { clearOperatorCookie, sessionCredential, setOperatorCookie } from "./operator-session.js";
import { deadLetters, GROUP_STREAMS, streamGroups } from "./pipeline-health.js";
import { problemsOf } from "./problems.js";
import { resultDetail } from "./result-detail.js";
import { groupSizes, runPage, type RunFilter } from "./run-pages.js";
import {
  devicesPanel,
  loginPage,
  page,
  pipelinePanel,
  problemsPanel,
  resultPanel,
  runFilterForm,
  runsPanel,
} from "./views.js";

export interface ConsoleDeps {
  redis: RedisClient;
  keys: Keyspace;
  partitions: number;
  queries: OsQueries;
  auth: OsAuthenticator;
  operators: OperatorGate;
  feed: ConsoleLiveFeed;
  csrf: CsrfGuard;
  /** Every refused console request, by reason. */
  refusals: Counter<"reason">;
}

const RUNS_PER_PAGE = 50;
const entryIdSchema = z.string().regex(/^\d+-\d+$/);
/** A `datetime-local` value, read as UTC; empty means no bound. */
const utcMinute = z
  .string()
  .optional()
  .transform((value, context) => {
    if (!value) return undefined;
    const ms = Date.parse(`${value}Z`);
    if (Number.isNaN(ms)) {
      context.addIssue({ code: "custom", message: "not a date and time" });
      return z.NEVER;
    }
    return ms;
  });
const emptyAsAbsent = <T extends z.ZodType>(schema: T) =>
  z.preprocess((value) => (value === "" ? undefined : value), schema.optional());

const runsQuerySchema = z.object({
  deviceId: emptyAsAbsent(deviceIdSchema),
  state: emptyAsAbsent(runStateSchema),
  from: utcMinute,
  to: utcMinute,
  after: emptyAsAbsent(z.string().max(512)),
});
const resultParamsSchema = z.object({ deviceId: deviceIdSchema, resultId: opaqueIdSchema });
const overviewQuerySchema = z.object({
  redrivenFrom: emptyAsAbsent(entryIdSchema),
  redrivenAs: emptyAsAbsent(entryIdSchema),
  stream: emptyAsAbsent(z.enum(GROUP_STREAMS)),
});
const redriveBodySchema = z.object({
  stream: z.enum(GROUP_STREAMS),
  id: entryIdSchema,
  [CSRF_FIELD]: z.string().optional(),
});
const loginBodySchema = z.object({ token: z.string().trim().min(1).max(4096) });

const ASSETS = {
  script: readFileSync(new URL("./assets/console.js", import.meta.url), "utf8"),
  stylesheet: readFileSync(new URL("./assets/console.css", import.meta.url), "utf8"),
};

const HTML = "text/html; charset=utf-8";
const htmlAnswer = (description: string) => textResponse("text/html", description);
const FORGERY_REFUSAL =
  "not an operator's token; or from another origin, or on the session cookie without the page's CSRF token";
const operatorRefusals = errorResponses({
  401: "no valid OS token (header or console cookie); browsers get the sign-in page",
  403: "the token is not an operator's",
});

function consoleSchema(
  summary: string,
  input: { querystring?: z.ZodType; params?: z.ZodType; body?: z.ZodType } = {},
  refusals: Record<number, unknown> = errorResponses({ 400: "malformed query" }),
) {
  return {
    summary,
    tags: ["console"],
    security: BEARER,
    ...input,
    response: { 200: htmlAnswer(summary), ...refusals, ...operatorRefusals },
  };
}

function wantsHtml(request: FastifyRequest): boolean {
  return (request.headers.accept ?? "").includes("text/html");
}

/** The operator each admitted request was admitted as (the live feed ends when that operator's credential does). */
const admittedOperators = new WeakMap<FastifyRequest, string>();

/** Refused console requests: browsers get the sign-in page with the reason, API clients the JSON error. */
function gateConsole({ operators, refusals }: ConsoleDeps) {
  return async (request: FastifyRequest, reply: FastifyReply) => {
    const verdict = await operators(request);
    if (verdict.admitted) {
      admittedOperators.set(request, verdict.operator);
      return;
    }
    refusals.inc({ reason: verdict.code });
    reply.code(verdict.status);
    if (wantsHtml(request)) return reply.type(HTML).send(loginPage(verdict.message));
    return reply.send({ error: { code: verdict.code, message: verdict.message } });
  };
}

/** The CSRF token the pages of this request's session put in their forms. */
function csrfTokenOf(deps: ConsoleDeps, request: FastifyRequest): string {
  return deps.csrf.tokenFor(sessionCredential(request));
}

function parseForm(
  _request: FastifyRequest,
  body: string,
  done: (error: Error | null, value?: unknown) => void,
) {
  done(null, Object.fromEntries(new URLSearchParams(body)));
}

/**
 * The operator console (docs/console.md): plain server-rendered pages whose panels are also served alone, so the
 * live feed can refresh one panel at a time. Everything but the sign-in page is behind the OS operator gate.
 */
export async function registerConsoleRoutes(http: FastifyInstance, deps: ConsoleDeps): Promise<void> {
  await http.register(async (site) => {
    site.addContentTypeParser("application/x-www-form-urlencoded", { parseAs: "string" }, parseForm);
    registerSignIn(site, deps);
    await site.register(async (gated) => {
      gated.addHook("onRequest", gateConsole(deps));
      gated.addHook("preHandler", guardStateChanges(deps.csrf, deps.refusals));
      registerPages(gated, deps);
      registerPanels(gated, deps);
      registerActions(gated, deps);
    });
  });
}

function registerSignIn(site: FastifyInstance, deps: ConsoleDeps): void {
  const { auth } = deps;
  const signInSchema = {
    summary: "The console's sign-in page",
    tags: ["console"],
    response: { 200: htmlAnswer("the sign-in form") },
  };
  site.get(
    CONSOLE,
    { schema: { ...signInSchema, summary: "Redirects to /console/" } },
    async (_request, reply) => reply.redirect(CONSOLE_PATHS.overview),
  );
  site.get(CONSOLE_PATHS.login, { schema: signInSchema }, async (_request, reply) =>
    reply.type(HTML).send(loginPage(undefined)),
  );
  site.post(
    CONSOLE_PATHS.login,
    {
      schema: {
        summary: "Signs an operator in: the token is kept in an HttpOnly, SameSite=Strict cookie",
        tags: ["console"],
        body: loginBodySchema,
        response: {
          303: z.null().describe("signed in; to /console/"),
          400: htmlAnswer("no token given"),
          401: htmlAnswer("not a valid OS token"),
          403: htmlAnswer("not an operator's token, or a sign-in from another origin"),
        },
      },
    },
    async (request, reply) => {
      const forged = deps.csrf.originRefusalOf(request, false);
      if (forged) return refuseForgery(reply, deps.refusals, forged);
      const body = loginBodySchema.safeParse(request.body);
      if (!body.success) return reply.code(400).type(HTML).send(loginPage("Paste an operator token."));
      const authentication = await auth.authenticateAuthorization(`Bearer ${body.data.token}`);
      if (!authentication.ok) return reply.code(401).type(HTML).send(loginPage(authentication.message));
      if (authentication.principal.role !== "operator")
        return reply
          .code(403)
          .type(HTML)
          .send(loginPage("That is a device token; the console needs an operator token."));
      setOperatorCookie(request, reply, body.data.token, decodeJwt(body.data.token).exp ?? 0);
      return reply.code(303).redirect(CONSOLE_PATHS.overview);
    },
  );
}

function knownDevices({ redis, keys, partitions }: ConsoleDeps): Promise<string[]> {
  return activeDevices(redis, keys, partitions);
}

function runFilterOf(query: z.infer<typeof runsQuerySchema>): RunFilter {
  return { ...query, limit: RUNS_PER_PAGE };
}

/** The query string of the runs view as the panel's own `data-src` carries it. */
function runsQueryString(raw: unknown): URLSearchParams {
  const entries = Object.entries(z.record(z.string(), z.unknown()).parse(raw ?? {}));
  return new URLSearchParams(
    entries.flatMap(([name, value]): [string, string][] =>
      typeof value === "string" && value !== "" ? [[name, value]] : [],
    ),
  );
}

const renderers = {
  async devices(deps: ConsoleDeps): Promise<SafeHtml> {
    return devicesPanel(await deviceOverviews(deps.redis, deps.keys, deps.partitions), Date.now());
  },
  async pipeline(deps: ConsoleDeps, csrf: string, redriven?: string): Promise<SafeHtml> {
    const [streams, letters] = await Promise.all([
      streamGroups(deps.redis, deps.keys),
      deadLetters(deps.redis, deps.keys),
    ]);
    return pipelinePanel(streams, letters, csrf, redriven);
  },
  async problems(deps: ConsoleDeps): Promise<SafeHtml> {
    return problemsPanel(await problemsOf(deps.queries, await knownDevices(deps)));
  },
  async runs(
    deps: ConsoleDeps,
    query: z.infer<typeof runsQuerySchema>,
    raw: URLSearchParams,
  ): Promise<SafeHtml> {
    const filter = runFilterOf(query);
    const deviceIds = filter.deviceId ? [filter.deviceId] : await knownDevices(deps);
    const result = await runPage(deps.redis, deps.keys, deviceIds, filter);
    return runsPanel(result, raw, await groupSizes(deps.redis, deps.keys, result.runs), Date.now());
  },
};

function redrivenNotice(query: z.infer<typeof overviewQuerySchema>): string | undefined {
  if (!query.redrivenFrom || !query.redrivenAs || !query.stream) return undefined;
  return `Dead letter ${query.redrivenFrom} moved back to ${query.stream} as entry ${query.redrivenAs}.`;
}

function badRequest(reply: FastifyReply, message: string) {
  return reply.code(400).send({ error: { code: "INVALID_REQUEST", message } });
}

function registerPages(gated: FastifyInstance, deps: ConsoleDeps): void {
  gated.get(
    CONSOLE_PATHS.overview,
    {
      schema: consoleSchema("Overview: devices and their sessions, stream lag, dead letters", {
        querystring: overviewQuerySchema,
      }),
    },
    async (request, reply) => {
      const query = overviewQuerySchema.safeParse(request.query);
      const notice = query.success ? redrivenNotice(query.data) : undefined;
      const csrf = csrfTokenOf(deps, request);
      const [devices, pipeline] = await Promise.all([
        renderers.devices(deps),
        renderers.pipeline(deps, csrf, notice),
      ]);
      return reply.type(HTML).send(page("Overview", html`${devices}${pipeline}`, csrf));
    },
  );
  gated.get(
    CONSOLE_PATHS.runs,
    {
      schema: consoleSchema("Runs, newest first, filtered by device, state and time, 50 a page", {
        querystring: runsQuerySchema,
      }),
    },
    async (request, reply) => {
      const query = runsQuerySchema.safeParse(request.query);
      if (!query.success) return badRequest(reply, "deviceId, state, from, to or after is malformed");
      const form = runFilterForm(runFilterOf(query.data), await knownDevices(deps));
      const runs = await renderers.runs(deps, query.data, runsQueryString(request.query));
      return reply.type(HTML).send(page("Runs", html`${form}${runs}`, csrfTokenOf(deps, request)));
    },
  );
  gated.get(
    CONSOLE_PATHS.problems,
    { schema: consoleSchema("Rejected Harness events and protocol errors of every device", {}, {}) },
    async (request, reply) =>
      reply
        .type(HTML)
        .send(
          page("Rejections and protocol errors", await renderers.problems(deps), csrfTokenOf(deps, request)),
        ),
  );
  gated.get(
    `${CONSOLE}/results/:deviceId/:resultId`,
    {
      schema: consoleSchema(
        "One result: its membership drawn as a group, outcome, full and speech text, playback timeline",
        { params: resultParamsSchema },
        errorResponses({ 400: "malformed deviceId or resultId", 404: "no such result" }),
      ),
    },
    async (request, reply) => {
      const detail = await readResult(deps, request.params, reply);
      return detail && reply.type(HTML).send(page("Result", resultPanel(detail), csrfTokenOf(deps, request)));
    },
  );
}

async function readResult(deps: ConsoleDeps, rawParams: unknown, reply: FastifyReply) {
  const params = resultParamsSchema.safeParse(rawParams);
  if (!params.success) {
    await badRequest(reply, "deviceId or resultId is malformed");
    return undefined;
  }
  const detail = await resultDetail(deps.redis, deps.keys, params.data.deviceId, params.data.resultId);
  if (!detail) await reply.code(404).send({ error: { code: "NOT_FOUND", message: "no such result" } });
  return detail;
}

/** Each panel alone, as the live feed refreshes it. */
function registerPanels(gated: FastifyInstance, deps: ConsoleDeps): void {
  const fragment = (reply: FastifyReply, body: SafeHtml) => reply.type(HTML).send(body.text);
  gated.get(
    CONSOLE_PATHS.panel("devices"),
    { schema: consoleSchema("Panel: devices", {}, {}) },
    async (_request, reply) => fragment(reply, await renderers.devices(deps)),
  );
  gated.get(
    CONSOLE_PATHS.panel("pipeline"),
    { schema: consoleSchema("Panel: stream lag and dead letters", {}, {}) },
    async (request, reply) => fragment(reply, await renderers.pipeline(deps, csrfTokenOf(deps, request))),
  );
  gated.get(
    CONSOLE_PATHS.panel("problems"),
    { schema: consoleSchema("Panel: rejections and protocol errors", {}, {}) },
    async (_request, reply) => fragment(reply, await renderers.problems(deps)),
  );
  gated.get(
    CONSOLE_PATHS.panel("runs"),
    { schema: consoleSchema("Panel: one page of runs", { querystring: runsQuerySchema }) },
    async (request, reply) => {
      const query = runsQuerySchema.safeParse(request.query);
      if (!query.success) return badRequest(reply, "deviceId, state, from, to or after is malformed");
      return fragment(reply, await renderers.runs(deps, query.data, runsQueryString(request.query)));
    },
  );
  gated.get(
    `${CONSOLE_PATHS.panel("result")}/:deviceId/:resultId`,
    {
      schema: consoleSchema(
        "Panel: one result",
        { params: resultParamsSchema },
        errorResponses({ 400: "malformed deviceId or resultId", 404: "no such result" }),
      ),
    },
    async (request, reply) => {
      const detail = await readResult(deps, request.params, reply);
      return detail && fragment(reply, resultPanel(detail));
    },
  );
  gated.get(
    CONSOLE_PATHS.events,
    {
      schema: {
        summary:
          "Live feed (server-sent events): run-update with the deviceId, a tick every 2 s; signed-out and the end when the credential expires or is revoked",
        tags: ["console"],
        security: BEARER,
        response: {
          200: textResponse("text/event-stream", "events until the client goes away or its credential ends"),
          ...operatorRefusals,
        },
      },
    },
    async (request, reply) =>
      deps.feed.stream(reply, {
        operator: admittedOperators.get(request) ?? "",
        authorization: sessionCredential(request).authorization,
      }),
  );
  gated.get(
    CONSOLE_PATHS.script,
    { schema: consoleSchema("The console's script (live panel refresh)", {}, {}) },
    async (_request, reply) => reply.type("text/javascript; charset=utf-8").send(ASSETS.script),
  );
  gated.get(
    CONSOLE_PATHS.stylesheet,
    { schema: consoleSchema("The console's stylesheet", {}, {}) },
    async (_request, reply) => reply.type("text/css; charset=utf-8").send(ASSETS.stylesheet),
  );
}

function registerActions(gated: FastifyInstance, deps: ConsoleDeps): void {
  gated.post(
    CONSOLE_PATHS.redrive,
    {
      schema: {
        summary:
          "Moves a dead letter back onto its stream (form fields stream, id, csrf), then back to the overview",
        tags: ["console"],
        security: BEARER,
        body: redriveBodySchema,
        response: {
          303: z.null().describe("redriven; to the overview, which names the new entry"),
          ...operatorRefusals,
          ...errorResponses({
            400: "unknown stream or malformed id",
            403: FORGERY_REFUSAL,
            404: "no such dead letter (already redriven?)",
          }),
        },
      },
    },
    async (request, reply) => {
      const body = redriveBodySchema.safeParse(request.body);
      if (!body.success)
        return badRequest(reply, "stream must be a dead-lettered stream and id a stream entry id");
      const moved = await redriveDeadLetter(deps.redis, deps.keys, body.data.stream, body.data.id);
      if (!moved)
        return reply.code(404).send({ error: { code: "NOT_FOUND", message: "no such dead letter" } });
      const notice = new URLSearchParams({
        redrivenFrom: body.data.id,
        redrivenAs: moved.redrivenAs,
        stream: body.data.stream,
      });
      return reply.code(303).redirect(`${CONSOLE_PATHS.overview}?${notice.toString()}#dead-letters`);
    },
  );
  gated.post(
    CONSOLE_PATHS.logout,
    {
      schema: {
        summary: "Signs the operator out (clears the cookie; form field csrf)",
        tags: ["console"],
        security: BEARER,
        response: {
          303: z.null().describe("to the sign-in page"),
          ...operatorRefusals,
          ...errorResponses({ 403: FORGERY_REFUSAL }),
        },
      },
    },
    async (_request, reply) => {
      clearOperatorCookie(reply);
      return reply.code(303).redirect(CONSOLE_PATHS.login);
    },
  );
}
