import { ESLint } from "eslint";
import { describe, expect, it } from "vitest";

const eslint = new ESLint();

async function boundaryErrors(file: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath: file });
  return (result?.messages ?? [])
    .filter((message) => message.ruleId === "lampline/service-boundaries")
    .map((message) => message.message);
}

describe("the service import boundary (npm run lint)", () => {
  it("fails a deliberately added import from one service folder into another", async () => {
    const errors = await boundaryErrors(
      "services/router/boundary-probe.ts",
      'import { ttsDispatcherService } from "../tts-dispatcher/definition.js";\nexport const probe = ttsDispatcherService;\n',
    );
    expect(errors).toEqual([
      "services/router must not import from services/tts-dispatcher: give shared code a home in libs/",
    ]);
  });

  it("fails libs importing a service", async () => {
    const errors = await boundaryErrors(
      "libs/os-store/boundary-probe.ts",
      'export { routerService } from "../../services/router/definition.js";\n',
    );
    expect(errors).toEqual(["libs/ must not import from services/router"]);
  });

  it("allows a service its own folder and libs, and the top-level wiring every service", async () => {
    expect(
      await boundaryErrors(
        "services/router/boundary-probe.ts",
        'import { RouterMetrics } from "./router-metrics.js";\nimport { sleep } from "../../libs/timing/sleep.js";\nexport const probe = [RouterMetrics, sleep];\n',
      ),
    ).toEqual([]);
    expect(
      await boundaryErrors(
        "services/all-in-one/boundary-probe.ts",
        'import { routerService } from "../router/definition.js";\nexport const probe = routerService;\n',
      ),
    ).toEqual([]);
  });

  it("fails an upward import inside libs, and allows a lower layer and a lib's own tests", async () => {
    expect(
      await boundaryErrors(
        "libs/contract/layer-probe.ts",
        'import { OsDeviceKeys } from "../os-store/os-keys.js";\nexport const probe = OsDeviceKeys;\n',
      ),
    ).toEqual([
      "libs/contract must not import from libs/os-store: a lib imports only lower layers (LIBS_LAYERS)",
    ]);
    expect(
      await boundaryErrors(
        "libs/os-store/layer-probe.ts",
        'import { nonEmpty } from "../contract/identifiers.js";\nexport const probe = nonEmpty;\n',
      ),
    ).toEqual([]);
    expect(
      await boundaryErrors(
        "libs/contract/layer-probe.test.ts",
        'import { OsDeviceKeys } from "../os-store/os-keys.js";\nexport const probe = OsDeviceKeys;\n',
      ),
    ).toEqual([]);
  });
});
