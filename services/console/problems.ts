import type { OsQueries } from "../../libs/os-store/os-queries.js";

/** A rejected Harness event or a protocol error of one device, as the console lists them. */
export interface Problem {
  deviceId: string;
  kind: "rejected event" | "protocol error";
  reason: string;
  resultId: string | undefined;
  detail: string;
  at: number;
}

export const PROBLEMS_LISTED = 200;

/** Every device's rejections and protocol errors, newest first. */
export async function problemsOf(queries: OsQueries, deviceIds: string[]): Promise<Problem[]> {
  const perDevice = await Promise.all(
    deviceIds.map(async (deviceId): Promise<Problem[]> => {
      const [rejections, protocolErrors] = await Promise.all([
        queries.rejections(deviceId),
        queries.protocolErrors(deviceId),
      ]);
      return [
        ...rejections.map((rejection) => ({
          deviceId,
          kind: "rejected event" as const,
          reason: rejection.reason,
          resultId: rejection.resultId,
          detail: `${rejection.kind} by ${rejection.rejectedBy}: ${rejection.detail}`,
          at: rejection.at,
        })),
        ...protocolErrors.map((error) => ({
          deviceId,
          kind: "protocol error" as const,
          reason: error.code,
          resultId: error.resultId,
          detail: `stored ${error.storedHash.slice(0, 12)}…, received ${error.receivedHash.slice(0, 12)}… (event ${error.eventId})`,
          at: error.at,
        })),
      ];
    }),
  );
  return perDevice
    .flat()
    .sort((a, b) => b.at - a.at)
    .slice(0, PROBLEMS_LISTED);
}
