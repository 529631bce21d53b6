import type { SendReply } from "../../libs/contract/device-commands.js";
import { setObservedTimeout } from "../../libs/timing/observed-timeout.js";

type Settle = (reply: SendReply | undefined) => void;

/** voice.request handlers waiting for the router's answer to their run's send, by runId. */
export class ReceiptWaiters {
  private readonly waiting = new Map<string, Set<Settle>>();

  /**
   * Resolves with the router's reply, or undefined after `timeoutMs` of time the process observed (a reply waiting
   * unread behind a pause of the process is still taken). Register before checking the store.
   */
  wait(runId: string, timeoutMs: number): { reply: Promise<SendReply | undefined>; cancel: () => void } {
    let settle: Settle = () => undefined;
    const reply = new Promise<SendReply | undefined>((resolve) => {
      const cancelTimeout = setObservedTimeout(() => done(undefined), timeoutMs);
      const done: Settle = (value) => {
        cancelTimeout();
        this.waiting.get(runId)?.delete(done);
        if (this.waiting.get(runId)?.size === 0) this.waiting.delete(runId);
        resolve(value);
      };
      settle = done;
      const set = this.waiting.get(runId) ?? new Set<Settle>();
      set.add(done);
      this.waiting.set(runId, set);
    });
    return { reply, cancel: () => settle(undefined) };
  }

  deliver(reply: SendReply): void {
    for (const settle of [...(this.waiting.get(reply.runId) ?? [])]) settle(reply);
  }
}
