/** The naming rule for tenants, namespaces, streams, caches and nodes. */
import { InvalidNameError } from './errors.js';

const NAME = /^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$/;

/** True when `name` is 1-128 characters of [A-Za-z0-9_.-] starting alphanumeric. */
export function isValidName(name: string): boolean {
  return NAME.test(name);
}

/** Throws InvalidNameError naming the field when `name` breaks the rule. */
export function checkName(field: string, name: string): string {
  if (!isValidName(name)) throw new InvalidNameError(field, name);
  return name;
}
