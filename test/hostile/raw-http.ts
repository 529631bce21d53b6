import { Agent, request } from "node:http";

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
): Promise<RawResponse> {
  const url = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const outgoing = request(
      { host: url.hostname, port: url.port, method, path, headers, agent },
      (response) => {
        const chunks: Buffer[] = [];
        response.on("data", (chunk: Buffer) => chunks.push(chunk));
        response.on("end", () => {
          const body = Buffer.concat(chunks).toString("utf8");
          let json: unknown;
          try {
            json = JSON.parse(body);
          } catch {
            json = undefined;
          }
          resolve({ status: response.statusCode ?? 0, body, json });
        });
      },
    );
    outgoing.on("error", reject);
    outgoing.end();
  });
}
