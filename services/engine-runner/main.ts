import { runMain } from "../../libs/service/service-host.js";
import { engineRunnerService } from "./definition.js";

await runMain("engine-runner", [engineRunnerService]);
