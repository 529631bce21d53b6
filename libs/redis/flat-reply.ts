/** A flat [field, value, field, value, …] reply (HGETALL in Lua, XINFO) as a record of its named fields. */
export function flatRecord<T>(flat: readonly T[]): Record<string, T> {
  const fields: Record<string, T> = {};
  for (let index = 0; index + 1 < flat.length; index += 2) fields[String(flat[index])] = flat[index + 1] as T;
  return fields;
}
