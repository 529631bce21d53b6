import { runMain } from "../../libs/service/service-host.js";
import { ttsDispatcherService } from "./definition.js";

await runMain("tts-dispatcher", [ttsDispatcherService]);
