import Ajv2020 from "ajv/dist/2020.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { DOCS_PREFIX } from "../../libs/http/api-docs.js";
import { OperatorHost } from "./operator-host.js";

let host: OperatorHost;
let document: OpenApiDocument;
let operator: string;

const operationSchema = z.looseObject({
  summary: z.string().min(1),
  responses: z.record(
    z.string(),
    z.looseObject({
      description: z.string(),
      content: z.record(z.string(), z.looseObject({ schema: z.record(z.string(), z.unknown()) })).optional(),
    }),
  ),
});
const documentSchema = z.looseObject({
  openapi: z.literal("3.1.0"),
  paths: z.record(z.string(), z.record(z.string(), operationSchema)),
});
type OpenApiDocument = z.infer<typeof documentSchema>;

/** Fastify's `/v1/runs/:runId` is OpenAPI's `/v1/runs/{runId}`. */
const openApiPath = (url: string) => url.replace(/:([A-Za-z]+)/g, "{$1}");

/** Third-party UIs (Bull Board, Swagger UI) hide their own asset and API routes; ours never hide. */
const THIRD_PARTY_PREFIXES = ["/console/queues", DOCS_PREFIX];

beforeAll(async () => {
  host = await OperatorHost.start("openapi");
  operator = `Bearer ${await host.osToken("ops", "operator")}`;
  const response = await host.http.inject({ url: "/openapi.json", headers: { authorization: operator } });
  document = documentSchema.parse(response.json());
}, 60_000);
afterAll(() => host?.stop());

const ajv = new Ajv2020({ strict: false });

/** Validates a real answer against the response schema the document gives for its route, method and status. */
function expectDescribedAnswer(path: string, method: string, status: number, body: unknown): void {
  const operation = document.paths[path]?.[method];
  const response = operation?.responses[String(status)];
  const schema = response?.content?.["application/json"]?.schema;
  expect(schema, `${method} ${path} ${status} has a JSON response schema`).toBeDefined();
  const validate = ajv.compile(schema ?? {});
  expect(validate(body), `${method} ${path} ${status}: ${ajv.errorsText(validate.errors)}`).toBe(true);
}

describe("OpenAPI document generated from the route schemas", () => {
  it("describes every route the services register, with a summary and its answers", () => {
    const own = host.routes.filter((route) => route.method !== "HEAD");
    for (const route of own.filter((route) => route.hidden))
      expect(
        THIRD_PARTY_PREFIXES.some((prefix) => route.url.startsWith(prefix)),
        route.url,
      ).toBe(true);
    const described = own.filter((route) => !route.hidden);
    expect(described.length).toBeGreaterThan(25);
    for (const route of described) {
      const operation = document.paths[openApiPath(route.url)]?.[route.method.toLowerCase()];
      expect(operation, `${route.method} ${route.url}`).toBeDefined();
      expect(Object.keys(operation?.responses ?? {}).length, `${route.method} ${route.url}`).toBeGreaterThan(
        0,
      );
    }
    for (const probe of ["/healthz", "/readyz", "/metrics"]) expect(document.paths[probe]?.get).toBeDefined();
    expect(Object.keys(document.paths)).toEqual(
      expect.arrayContaining([
        "/v1/runs",
        "/v1/runs/{runId}",
        "/v1/results/{resultId}",
        "/v1/lamp/ws",
        "/v1/harness/ws",
        "/v1/admin/devices/{deviceId}",
        "/v1/lamp/devices/{deviceId}",
        "/console/",
        "/openapi.json",
      ]),
    );
  });

  it("states the query parameters the handlers check", () => {
    const runs = document.paths["/v1/runs"]?.get;
    expect(runs?.parameters).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ name: "state", in: "query" }),
        expect.objectContaining({ name: "deviceId", in: "query" }),
      ]),
    );
  });

  it("real answers of the JSON routes validate against their documented responses", async () => {
    const device = `Bearer ${await host.osToken("lamp-docs", "device")}`;
    const harnessOperator = `Bearer ${await host.harnessToken("ops", "operator")}`;
    const cases = [
      { method: "GET", url: "/healthz", path: "/healthz", authorization: undefined },
      { method: "GET", url: "/readyz", path: "/readyz", authorization: undefined },
      { method: "GET", url: "/v1/runs", path: "/v1/runs", authorization: device },
      {
        method: "GET",
        url: "/v1/runs?deviceId=lamp-docs&state=pending",
        path: "/v1/runs",
        authorization: operator,
      },
      { method: "GET", url: "/v1/runs", path: "/v1/runs", authorization: operator },
      { method: "GET", url: "/v1/runs/nope", path: "/v1/runs/{runId}", authorization: device },
      { method: "GET", url: "/v1/runs/nope", path: "/v1/runs/{runId}", authorization: undefined },
      { method: "GET", url: "/v1/results/nope", path: "/v1/results/{resultId}", authorization: device },
      {
        method: "GET",
        url: "/v1/held-results?state=expired",
        path: "/v1/held-results",
        authorization: device,
      },
      { method: "GET", url: "/v1/rejections", path: "/v1/rejections", authorization: device },
      { method: "GET", url: "/v1/protocol-errors", path: "/v1/protocol-errors", authorization: device },
      { method: "GET", url: "/v1/rejections?deviceId=other", path: "/v1/rejections", authorization: device },
      {
        method: "DELETE",
        url: "/v1/lamp/devices/lamp-gone",
        path: "/v1/lamp/devices/{deviceId}",
        authorization: operator,
      },
      {
        method: "DELETE",
        url: "/v1/lamp/devices/lamp-gone",
        path: "/v1/lamp/devices/{deviceId}",
        authorization: device,
      },
      {
        method: "DELETE",
        url: "/v1/admin/devices/lamp-gone",
        path: "/v1/admin/devices/{deviceId}",
        authorization: harnessOperator,
      },
      { method: "GET", url: "/v1/lamp/ws", path: "/v1/lamp/ws", authorization: undefined },
      { method: "GET", url: "/openapi.json", path: "/openapi.json", authorization: device },
    ] as const;
    const statuses = new Set<number>();
    for (const { method, url, path, authorization } of cases) {
      const response = await host.http.inject({
        method,
        url,
        headers: authorization ? { authorization } : {},
      });
      statuses.add(response.statusCode);
      expectDescribedAnswer(path, method.toLowerCase(), response.statusCode, response.json());
    }
    expect([...statuses].sort()).toEqual([200, 400, 401, 403, 404]);
  });
});
