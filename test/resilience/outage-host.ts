import { runMain } from "../../libs/service/service-host.js";
import { deviceGatewayService } from "../../services/device-gateway/definition.js";
import { evidenceExtractorService } from "../../services/evidence-extractor/definition.js";

/** A small real host for the Redis outage test: a stream pipeline (the extractor) and an HTTP API (the OS API). */
await runMain("outage-host", [evidenceExtractorService, deviceGatewayService]);
