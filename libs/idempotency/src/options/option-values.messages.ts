/** The message texts of option values checked the same way by several features. */
export const optionValueMessages = {
  invalidChoice: (name: string, value: unknown, allowed: readonly string[]) =>
    `${name} must be one of ${allowed.map((choice) => `'${choice}'`).join(', ')}; got ${JSON.stringify(value)}.`,
  invalidFlag: (name: string, value: unknown) => `${name} must be true or false; got ${JSON.stringify(value)}.`,
  invalidCount: (name: string, value: unknown) => `${name} must be a whole number above 0; got ${JSON.stringify(value)}.`,
  invalidPerEntry: (name: string, value: unknown, entries: readonly string[]) =>
    `${name} must be given per entry, an object of ${entries.map((entry) => `'${entry}'`).join(', ')}; got ${typeof value === 'function' ? 'a function' : JSON.stringify(value)}.`,
  optionsMissing: (moduleName: string, given: unknown) =>
    `${moduleName} was given ${String(given)} as its options: its forRootAsync() factory (useFactory, or the create() method ` +
    'of useClass or useExisting) returned no options object. Return the options object: {} for every default.',
};
