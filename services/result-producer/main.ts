import { runMain } from "../../libs/service/service-host.js";
import { resultProducerService } from "./definition.js";

await runMain("result-producer", [resultProducerService]);
