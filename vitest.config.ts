import { configDefaults, defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["libs/**/*.test.ts", "services/**/*.test.ts", "tools/**/*.test.ts", "test/**/*.test.ts"],
    // The real engine CLIs are installed separately: `npm run test:real-engines` (vitest.real-engines.config.ts).
    exclude: [...configDefaults.exclude, "test/real-engines/**", "test/cluster/**"],
    globalSetup: ["test/setup/redis-global-setup.ts"],
    testTimeout: 30_000,
    hookTimeout: 60_000,
    pool: "forks",
    fileParallelism: true,
    maxWorkers: 2,
  },
});
