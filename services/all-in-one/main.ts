import { baseEnvSchema } from "../../libs/config/env-fields.js";
import { parseConfig } from "../../libs/config/load-config.js";
import { hostSettingsOf, type HostSettings } from "../../libs/service/host-settings.js";
import {
  ensurePortFree,
  exitOnStartupError,
  hostServices,
  type HostedServices,
} from "../../libs/service/service-host.js";
import { drainOnSignals } from "../../libs/service/shutdown.js";
import { allServices } from "../catalog.js";
import { DataDirInUseError } from "./data-dir-lock.js";
import { EmbeddedRedisError, startEmbeddedRedis, type EmbeddedRedis } from "./embedded-redis.js";
import { withLocalDefaults } from "./local-defaults.js";

/** Every service in one process behind one HTTP port (127.0.0.1:8080 by default): the laptop mode. */
const env = withLocalDefaults(process.env);
let settings: HostSettings;
try {
  const base = parseConfig(baseEnvSchema, env);
  settings = hostSettingsOf(env);
  for (const definition of allServices) definition.checkConfig(env);
  await ensurePortFree("all-in-one", base.HOST, base.PORT);
} catch (error) {
  exitOnStartupError(error);
}

// Services drain first, the embedded Redis they write to stops last.
let embedded: EmbeddedRedis | undefined;
let hosted: HostedServices | undefined;
drainOnSignals(
  "all-in-one",
  async () => {
    await hosted?.stop();
    await embedded?.stop();
  },
  settings.SHUTDOWN_TIMEOUT_MS,
);

try {
  // A Redis Cluster (REDIS_CLUSTER_NODES) or a named Redis is used as it is; only neither starts a private one.
  embedded = env.REDIS_URL || env.REDIS_CLUSTER_NODES ? undefined : await startEmbeddedRedis(env);
} catch (error) {
  if (!(error instanceof EmbeddedRedisError || error instanceof DataDirInUseError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(1);
}
if (embedded) {
  env.REDIS_URL = embedded.url;
  process.stderr.write(
    `all-in-one: no REDIS_URL set, started redis-server at ${embedded.address} (data in ${embedded.dir})\n`,
  );
}

try {
  hosted = await hostServices("all-in-one", allServices, env);
} catch (error) {
  await embedded?.stop();
  exitOnStartupError(error);
}
process.stderr.write(`all-in-one: listening on ${hosted.url}\n`);
