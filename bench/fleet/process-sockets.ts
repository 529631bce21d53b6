import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/**
 * Which process holds each TCP connection: `<local>|<remote>` (`127.0.0.1:<port>|127.0.0.1:<port>`, a Redis client's
 * `addr|laddr` in CLIENT LIST) to the pid among `pids` whose file descriptors include that socket, read from
 * /proc/net/tcp and /proc/<pid>/fd. Both ends are in the key: with thousands of loopback connections the kernel
 * gives one local port to connections with different peers. Sockets of other processes are left out.
 */
export function socketOwners(pids: readonly number[]): Map<string, number> {
  const ownerOfInode = new Map<string, number>();
  for (const pid of pids) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue; // the process ended
    }
    for (const fd of fds) {
      try {
        const inode = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`))?.[1];
        if (inode !== undefined) ownerOfInode.set(inode, pid);
      } catch {
        // the descriptor closed meanwhile
      }
    }
  }
  const owners = new Map<string, number>();
  for (const line of readFileSync("/proc/net/tcp", "utf8").split("\n").slice(1)) {
    const columns = line.trim().split(/\s+/);
    const [, local, remote] = columns;
    const inode = columns[9];
    if (local === undefined || remote === undefined || inode === undefined) continue;
    const pid = ownerOfInode.get(inode);
    if (pid !== undefined) owners.set(`${ipv4Address(local)}|${ipv4Address(remote)}`, pid);
  }
  return owners;
}

/** `0100007F:1F90` (little-endian address, hex port) as `127.0.0.1:8080`. */
function ipv4Address(hex: string): string {
  const [address = "", port = "0"] = hex.split(":");
  const octets = [6, 4, 2, 0].map((at) => parseInt(address.slice(at, at + 2), 16));
  return `${octets.join(".")}:${parseInt(port, 16)}`;
}
