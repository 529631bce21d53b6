import { Agent, request } from "node:http";
import { connect } from "node:net";

export interface RawResponse {
  status: number;
  body: string;
  json: unknown;
}

const agent = new Agent({ keepAlive: true, maxSockets: 4 });

/** One HTTP request with the path sent exactly as given (no client-side normalization of `..`, `//` or `%`). */
export function rawRequest(
  baseUrl: string,
  method: string,
  path: string,
  headers: Record<string, string> = {},
  body?: string,
): Promise<RawResponse> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const outgoing = request(
      {
        host: url.hostname,
        port: url.port,
        method,
        path,
        // A sized body: Node's parser refuses a chunked body on a DELETE before any route sees it.
        headers:
          body === undefined ? headers : { ...headers, "content-length": String(Buffer.byteLength(body)) },
        agent,
      },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => {
          const text = Buffer.concat(chunks).toString("utf8");
          resolve({ status: response.statusCode ?? 0, body: text, json: jsonOf(text) });
        });
      },
    );
    outgoing.on("error", reject);
    outgoing.end(body);
  });
}

/** Writes `bytes` as they are on a fresh connection and reads the answer until the server closes it. */
export function rawExchange(baseUrl: string, bytes: string): Promise<RawResponse> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: url.hostname, port: Number(url.port) }, () => socket.end(bytes));
    const chunks: Buffer[] = [];
    socket.on("data", (chunk: Buffer) => chunks.push(chunk));
    socket.on("error", reject);
    socket.on("close", () => {
      const text = Buffer.concat(chunks).toString("utf8");
      const [head = "", ...rest] = text.split("\r\n\r\n");
      const body = rest.join("\r\n\r\n");
      resolve({ status: Number(/^HTTP\/1\.1 (\d{3})/.exec(head)?.[1] ?? 0), body, json: jsonOf(body) });
    });
  });
}

function jsonOf(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return undefined;
  }
}
