import { runMain } from "../../libs/service/service-host.js";
import { evidenceExtractorService } from "./definition.js";

await runMain("evidence-extractor", [evidenceExtractorService]);
