import { spawn, type ChildProcess, type SpawnOptions } from "node:child_process";
import { Socket } from "node:net";

export interface OwnedProcess {
  child: ChildProcess;
  /** Signals the child's whole process group (the child and everything it started). */
  signalGroup(signal: NodeJS.Signals): void;
}

interface Owned {
  child: ChildProcess;
  onOwnerExit: NodeJS.Signals;
}

const owned = new Set<Owned>();
let exitHookInstalled = false;

/**
 * Spawns a child in its own process group that cannot outlive this process: a group signal sent to us (Ctrl-C,
 * `kill -- -pgid`) does not reach it, so we stop it in our own order; when we exit, it gets `onOwnerExit`; and when
 * we die without running exit handlers (SIGKILL), a watchdog shell blocked on a pipe from us sees end-of-file and
 * signals the group. Linux has no portable parent-death signal for an arbitrary child, hence the watchdog.
 */
export function spawnOwned(
  command: string,
  args: readonly string[],
  options: SpawnOptions & { onOwnerExit: NodeJS.Signals },
): OwnedProcess {
  installExitHook();
  const { onOwnerExit, ...spawnOptions } = options;
  const child = spawn(command, args, { ...spawnOptions, detached: true });
  const entry: Owned = { child, onOwnerExit };
  owned.add(entry);
  const signalGroup = (signal: NodeJS.Signals) => signalProcessGroup(child, signal);
  if (child.pid === undefined) {
    owned.delete(entry);
    return { child, signalGroup };
  }
  const watchdog = spawnWatchdog(child.pid, onOwnerExit);
  child.once("exit", () => {
    owned.delete(entry);
    watchdog.kill("SIGKILL");
  });
  return { child, signalGroup };
}

/** Signals every owned process group at once, synchronously: for signal handlers and exit paths. */
export function signalOwnedProcesses(signal?: NodeJS.Signals): void {
  for (const entry of owned) signalProcessGroup(entry.child, signal ?? entry.onOwnerExit);
}

/** The group outlives its leader when the leader's children are still running, so it is signalled regardless. */
function signalProcessGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined) return;
  try {
    process.kill(-child.pid, signal);
  } catch {
    // ESRCH: the whole group has ended already
  }
}

/** `read` returns at end-of-file, which happens once every copy of the pipe's write end (ours) is closed. */
function spawnWatchdog(pgid: number, signal: NodeJS.Signals): ChildProcess {
  const watchdog = spawn(
    "sh",
    ["-c", 'read _line; kill -s "$1" -- "-$0" 2>/dev/null', String(pgid), signal.replace(/^SIG/, "")],
    { stdio: ["pipe", "ignore", "ignore"], detached: true },
  );
  watchdog.unref();
  // The pipe stays open for our whole life without holding the event loop; a write error cannot happen (we never write).
  if (watchdog.stdin instanceof Socket) watchdog.stdin.unref();
  return watchdog;
}

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on("exit", () => signalOwnedProcesses());
}
