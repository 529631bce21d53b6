import { runMain } from "../../libs/service/service-host.js";
import { routerService } from "./definition.js";

await runMain("router", [routerService]);
