#!/usr/bin/env node
// engine-sandbox executable: a real engine CLI with a scripted model on loopback (tools/real-engines/sandbox.ts).
import { register } from "tsx/esm/api";

register();
await import(new URL("../tools/real-engines/sandbox.ts", import.meta.url).href);
