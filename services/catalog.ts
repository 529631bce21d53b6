import type { ServiceDefinition } from "../libs/service/service-context.js";
import { consoleService } from "./console/definition.js";
import { deviceGatewayService } from "./device-gateway/definition.js";
import { engineRunnerService } from "./engine-runner/definition.js";
import { evidenceExtractorService } from "./evidence-extractor/definition.js";
import { harnessGatewayService } from "./harness-gateway/definition.js";
import { resultProducerService } from "./result-producer/definition.js";
import { routerService } from "./router/definition.js";
import { runResolverService } from "./run-resolver/definition.js";
import { ttsDispatcherService } from "./tts-dispatcher/definition.js";

/**
 * Every service of the system: Harness side first (engine to gateway), then the OS side (gateway to speech), then
 * the operator console, which only reads the stores and redrives dead letters.
 */
export const allServices: ServiceDefinition[] = [
  engineRunnerService,
  evidenceExtractorService,
  resultProducerService,
  harnessGatewayService,
  deviceGatewayService,
  routerService,
  runResolverService,
  ttsDispatcherService,
  consoleService,
];

export function serviceNamed(name: string): ServiceDefinition | undefined {
  return allServices.find((definition) => definition.name === name);
}
