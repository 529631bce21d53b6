import type { ServiceDefinition } from "../libs/service/service-context.js";

/** Every service of the system, in start order (consumers after the producers of their streams' groups). */
export const allServices: ServiceDefinition[] = [];

export function serviceNamed(name: string): ServiceDefinition | undefined {
  return allServices.find((definition) => definition.name === name);
}
