import { mkdirSync, writeFileSync } from "node:fs";
import { dirname, resolve } from "node:path";
import { REPO_ROOT, renderedFiles } from "./rendered-files.js";

/** `npx tsx tools/deploy/render.ts`: writes the Kubernetes overlays and the Grafana dashboards from their TypeScript. */
for (const [path, content] of await renderedFiles()) {
  const target = resolve(REPO_ROOT, path);
  mkdirSync(dirname(target), { recursive: true });
  writeFileSync(target, content);
  process.stdout.write(`${path}\n`);
}
