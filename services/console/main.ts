import { runMain } from "../../libs/service/service-host.js";
import { consoleService } from "./definition.js";

await runMain("console", [consoleService]);
