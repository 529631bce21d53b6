import { runMain } from "../../libs/service/service-host.js";
import { runResolverService } from "./definition.js";

await runMain("run-resolver", [runResolverService]);
