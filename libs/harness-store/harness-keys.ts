import type { Keyspace } from "../redis/keyspace.js";

/**
 * The Harness store of one device (docs/architecture.md "Harness store"). Every key shares the device's hash tag,
 * so each Lua step of a device touches one Redis Cluster slot; scripts derive these names from the base key.
 */
export class HarnessDeviceKeys {
  readonly base: string;

  constructor(keys: Keyspace, deviceId: string) {
    this.base = keys.harnessDevice(deviceId);
  }

  reservation(idempotencyKey: string): string {
    return `${this.base}:res:${idempotencyKey}`;
  }

  /** zset idempotencyKey -> reservedAt (every retained reservation; its size is the capacity count). */
  get reservations(): string {
    return `${this.base}:res-order`;
  }

  /**
   * zset idempotencyKey -> terminalAt: the only reservations that may be evicted. Terminal receipts, and members of
   * a failed or cancelled result (their receipts stay `started` on the wire, but the input is over).
   */
  get terminalReservations(): string {
    return `${this.base}:res-terminal`;
  }

  /** zset idempotencyKey -> reservedAt: reserved but not yet appended to harness.dispatch. */
  get undispatched(): string {
    return `${this.base}:undispatched`;
  }

  result(resultId: string): string {
    return `${this.base}:result:${resultId}`;
  }

  /** zset resultId -> storedAt: the retained results, replayed on resync. */
  get results(): string {
    return `${this.base}:results`;
  }

  /**
   * stream: the device's event log, entry id `0-<eventId>`, field `e` = the stored event body (JSON); capped at
   * EVENT_CAPACITY entries by each append and by age by the retention sweep. Its first entry tells the floor: a
   * resume cursor below it missed events.
   */
  get eventLog(): string {
    return `${this.base}:event-log`;
  }

  /** The last eventId handed out; never reused while the Redis data lives. */
  get eventSequence(): string {
    return `${this.base}:event-seq`;
  }

  /** Epoch ms of the device's last revocation; kept when everything else of the device is deleted. */
  get revokedAt(): string {
    return `${this.base}:revoked-at`;
  }
}

/** The transport instance of this deployment's Harness: created once, lost only with the Redis data. */
export const instanceKey = (keys: Keyspace) => keys.key("h", "instance");

/** Live-delivery notifications: message = deviceId whose log grew. */
export const eventsChannel = (keys: Keyspace) => keys.key("h", "events");

/** Revocations: message = deviceId whose sessions must close. */
export const revocationsChannel = (keys: Keyspace) => keys.key("h", "revocations");

/**
 * zset deviceId -> reservedAt of its oldest undispatched reservation (at least: a reserve lists the device with
 * `ZADD NX`): where the dispatch sweep finds its work without scanning the keyspace.
 */
export const undispatchedDevicesKey = (keys: Keyspace) => keys.key("h", "undispatched-devices");
