import { runMain } from "../libs/service/service-host.js";
import { allServices, serviceNamed } from "./catalog.js";

/** `SERVICE=<name> npm run service`: one service alone in this process (the container image's entry point). */
const name = process.env.SERVICE ?? "";
const definition = serviceNamed(name);
if (!definition) {
  const known = allServices.map((service) => service.name).join(", ");
  process.stderr.write(`invalid configuration: SERVICE: '${name}' is not one of: ${known}\n`);
  process.exit(78);
}
await runMain(definition.name, [definition]);
