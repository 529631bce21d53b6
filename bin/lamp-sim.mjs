#!/usr/bin/env node
// lamp-sim executable: runs the TypeScript entry through tsx's register API (no build step).
import { register } from "tsx/esm/api";

register();
await import(new URL("../tools/lamp-sim/main.ts", import.meta.url).href);
