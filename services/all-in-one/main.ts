import { baseEnvSchema } from "../../libs/config/env-fields.js";
import { ConfigError, parseConfig } from "../../libs/config/load-config.js";
import { hostServices } from "../../libs/service/service-host.js";
import { allServices } from "../catalog.js";
import { startEmbeddedRedis } from "./embedded-redis.js";
import { withLocalDefaults } from "./local-defaults.js";

/** Every service in one process behind one HTTP port (127.0.0.1:8080 by default): the laptop mode. */
const env = withLocalDefaults(process.env);
try {
  parseConfig(baseEnvSchema, env);
  for (const definition of allServices) definition.checkConfig(env);
} catch (error) {
  if (!(error instanceof ConfigError)) throw error;
  process.stderr.write(`${error.message}\n`);
  process.exit(78);
}

const embedded = env.REDIS_URL ? undefined : await startEmbeddedRedis(env);
if (embedded) {
  env.REDIS_URL = embedded.url;
  process.stderr.write(
    `all-in-one: no REDIS_URL set, started redis-server at ${embedded.url} (data in ${embedded.dir})\n`,
  );
}

const hosted = await hostServices("all-in-one", allServices, env);
process.stderr.write(`all-in-one: listening on ${hosted.url}\n`);

const shutdown = async (signal: string) => {
  process.stderr.write(`all-in-one: ${signal}, draining\n`);
  await hosted.stop();
  await embedded?.stop();
  process.exit(0);
};
process.once("SIGTERM", () => void shutdown("SIGTERM"));
process.once("SIGINT", () => void shutdown("SIGINT"));
