/**
 * What the replay reads of a GraphQL output type: graphql-js's type classes, told apart by their
 * `Symbol.toStringTag` (`GraphQLNonNull`, `GraphQLObjectType`, ...), so the package is not loaded.
 * @internal
 */
export interface GraphqlOutputType {
  readonly [Symbol.toStringTag]?: string;
  readonly name?: string;
  /** A list's or a non-null type's inner type. */
  readonly ofType?: GraphqlOutputType;
  /** An object type's fields. */
  getFields?(): Record<string, { readonly type: GraphqlOutputType }>;
  /** A scalar's reading of its serialized value (`DateTime`: the ISO text into a `Date`). */
  parseValue?(value: unknown): unknown;
}

/** The scalars whose JSON is the value itself. */
const JSON_SCALARS: ReadonlySet<string | undefined> = new Set(['String', 'Int', 'Float', 'Boolean', 'ID']);

/**
 * A mutation's result as recorded (its JSON, parsed) read back as the resolver's value of the
 * field's type `type`: a custom scalar's value (a `Date` under `DateTime`) is given by the
 * scalar's `parseValue`, since its JSON is the text the scalar serializes it to (a `Date`'s ISO
 * text), which its `serialize` would not take again. Objects are read field by field, lists item
 * by item; enums, interfaces and unions are left as they are.
 */
export function revive(value: unknown, type: GraphqlOutputType): unknown {
  if (value === null || value === undefined) {
    return value;
  }
  switch (type[Symbol.toStringTag]) {
    case 'GraphQLNonNull':
      return revive(value, type.ofType!);
    case 'GraphQLList':
      return Array.isArray(value) ? value.map((item) => revive(item, type.ofType!)) : value;
    case 'GraphQLScalarType':
      return JSON_SCALARS.has(type.name) ? value : type.parseValue!(value);
    case 'GraphQLObjectType': {
      const fields = type.getFields!();
      return Object.fromEntries(Object.entries(value as object).map(([name, field]: [string, unknown]) => [name, fields[name] ? revive(field, fields[name].type) : field]));
    }
    default:
      return value;
  }
}
