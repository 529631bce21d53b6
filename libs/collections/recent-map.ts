/**
 * A map that keeps only its `capacity` most recently set entries: a set past the capacity forgets the entry set
 * longest ago. For what a process remembers to spare a Redis read, where forgetting costs only that read again.
 */
export class RecentMap<K, V> {
  private readonly entries = new Map<K, V>();

  constructor(private readonly capacity: number) {}

  get(key: K): V | undefined {
    return this.entries.get(key);
  }

  has(key: K): boolean {
    return this.entries.has(key);
  }

  set(key: K, value: V): void {
    this.entries.delete(key);
    this.entries.set(key, value);
    if (this.entries.size <= this.capacity) return;
    const oldest = this.entries.keys().next();
    if (!oldest.done) this.entries.delete(oldest.value);
  }

  delete(key: K): void {
    this.entries.delete(key);
  }
}
