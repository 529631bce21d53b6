import { defineConfig } from "vitest/config";
import base from "./vitest.config.js";

/** `npm run test:real-engines`: the suites that drive the real engine CLIs (after `npm run engines:install`). */
export default defineConfig({
  test: { ...base.test, include: ["test/real-engines/**/*.test.ts"], exclude: ["**/node_modules/**"] },
});
