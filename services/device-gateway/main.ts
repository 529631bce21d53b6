import { runMain } from "../../libs/service/service-host.js";
import { deviceGatewayService } from "./definition.js";

await runMain("device-gateway", [deviceGatewayService]);
