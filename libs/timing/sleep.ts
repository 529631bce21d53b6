/** Waits `ms`; an unref'd timer, so a pending backoff never keeps a stopping process alive. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms).unref());
}
