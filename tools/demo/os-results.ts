import { z } from "zod";

/** The fields of `GET /v1/results/:resultId` the story checks (docs/wire-protocol.md, "OS query API"). */
const storedResultSchema = z.object({
  resultId: z.string(),
  outcome: z.enum(["completed", "failed", "cancelled"]),
  fullText: z.string(),
  speechText: z.string().nullable(),
  members: z.array(z.object({ runId: z.string() })),
  playback: z.object({ state: z.string(), reason: z.string().nullable() }).nullable(),
});
export type StoredResult = z.infer<typeof storedResultSchema>;

/** Reads the OS's stored results as the Lamp's device may: with its own token, only its own results. */
export class OsResults {
  constructor(
    private readonly httpUrl: string,
    private readonly deviceToken: string,
  ) {}

  async get(resultId: string): Promise<StoredResult> {
    const response = await fetch(`${this.httpUrl}/v1/results/${encodeURIComponent(resultId)}`, {
      headers: { authorization: `Bearer ${this.deviceToken}` },
    });
    if (!response.ok) throw new Error(`GET /v1/results/${resultId}: HTTP ${response.status}`);
    return storedResultSchema.parse(await response.json());
  }
}
