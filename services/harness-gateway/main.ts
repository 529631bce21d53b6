import { runMain } from "../../libs/service/service-host.js";
import { harnessGatewayService } from "./definition.js";

await runMain("harness-gateway", [harnessGatewayService]);
