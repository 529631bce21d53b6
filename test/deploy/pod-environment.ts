import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  configMapSchema,
  ofKind,
  type Container,
  type DeploymentDoc,
  type KubeDoc,
} from "./rendered-manifests.js";

/** Where a pod's in-cluster peers are on this machine: `host:port` as the manifests name them → loopback. */
export type AddressMap = Map<string, string>;

/**
 * The environment a container gets from its manifest, exactly: envFrom ConfigMaps and Secrets, then env (values,
 * ConfigMap and Secret keys, the pod name). Mounted ConfigMap volumes are written under `root` and any value naming
 * a mount path is pointed there; in-cluster addresses are mapped to loopback, and the listen address to 127.0.0.1
 * on `port` (every container listens on 0.0.0.0:8080 in its own pod).
 */
export function containerEnvironment(options: {
  docs: KubeDoc[];
  deployment: DeploymentDoc;
  container: Container;
  secret: Record<string, string>;
  root: string;
  addresses: AddressMap;
  port: number;
}): Record<string, string> {
  const { docs, deployment, container, secret } = options;
  const configMaps = new Map(
    ofKind(docs, configMapSchema, "ConfigMap").map((map) => [map.metadata.name, map.data]),
  );
  const env: Record<string, string> = {};
  for (const source of container.envFrom) {
    if (source.configMapRef)
      Object.assign(env, required(configMaps.get(source.configMapRef.name), source.configMapRef.name));
    if (source.secretRef) Object.assign(env, secret);
  }
  const podName = `${deployment.metadata.name}-0`;
  for (const variable of container.env) {
    const from = variable.valueFrom;
    if (variable.value !== undefined) env[variable.name] = variable.value;
    else if (from?.fieldRef?.fieldPath === "metadata.name") env[variable.name] = podName;
    else if (from?.secretKeyRef)
      env[variable.name] = required(secret[from.secretKeyRef.key], from.secretKeyRef.key);
    else if (from?.configMapKeyRef)
      env[variable.name] = required(
        configMaps.get(from.configMapKeyRef.name)?.[from.configMapKeyRef.key],
        variable.name,
      );
    else
      throw new Error(
        `${deployment.metadata.name}: env ${variable.name} has a source this test does not model`,
      );
  }
  const mounts = mountFiles(deployment, container, configMaps, options.root);
  for (const [name, value] of Object.entries(env)) env[name] = localised(value, mounts, options.addresses);
  if (env.HOST === "0.0.0.0") env.HOST = "127.0.0.1";
  if (env.PORT !== undefined) env.PORT = String(options.port);
  return env;
}

function required<T>(value: T | undefined, what: string): T {
  if (value === undefined) throw new Error(`missing in the manifests or the Secret: ${what}`);
  return value;
}

/** Writes each mounted ConfigMap's keys as files; returns mount path → local directory. */
function mountFiles(
  deployment: DeploymentDoc,
  container: Container,
  configMaps: Map<string, Record<string, string>>,
  root: string,
): Map<string, string> {
  const mounts = new Map<string, string>();
  const volumes = deployment.spec.template.spec.volumes;
  for (const mount of container.volumeMounts) {
    const volume = volumes.find((candidate) => candidate.name === mount.name);
    if (!volume?.configMap) continue;
    const dir = join(root, deployment.metadata.name, mount.name);
    mkdirSync(dir, { recursive: true });
    for (const [file, content] of Object.entries(
      required(configMaps.get(volume.configMap.name), volume.configMap.name),
    ))
      writeFileSync(join(dir, file), content);
    mounts.set(mount.mountPath, dir);
  }
  return mounts;
}

function localised(value: string, mounts: Map<string, string>, addresses: AddressMap): string {
  let local = value;
  for (const [mountPath, dir] of mounts)
    if (local.startsWith(`${mountPath}/`)) local = dir + local.slice(mountPath.length);
  for (const [address, loopback] of addresses) local = local.split(address).join(loopback);
  return local;
}
