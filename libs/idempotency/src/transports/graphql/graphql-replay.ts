import { IdempotencyUnsupportedHandlerError } from '../../errors/idempotency.errors.js';
import { graphqlMessages } from './graphql.messages.js';

/** A field of an object or interface type, as graphql-js defines it. @internal */
export interface GraphqlField {
  readonly type: GraphqlOutputType;
  /** Its arguments. */
  readonly args: readonly unknown[];
  /** Its resolver; graphql-js's default (the source's property of the field's name) when unset. */
  resolve?: GraphqlResolver;
}

/** A field resolver of graphql-js: `(source, args, context, info)`. @internal */
export type GraphqlResolver = (source: unknown, args: Record<string, unknown>, context: unknown, info: GraphqlResolveInfo) => unknown;

/** What the replay reads of graphql-js's `GraphQLResolveInfo`. @internal */
export interface GraphqlResolveInfo {
  readonly fieldName: string;
  readonly returnType: GraphqlOutputType;
  readonly path: unknown;
  readonly schema: GraphqlSchema;
}

/** What the replay reads of a `GraphQLSchema`. @internal */
export interface GraphqlSchema {
  getType(name: string): GraphqlOutputType | undefined;
  getPossibleTypes(abstractType: GraphqlOutputType): readonly GraphqlOutputType[];
}

type TypeResolver = (value: unknown, context: unknown, info: GraphqlResolveInfo, abstractType: GraphqlOutputType) => unknown;

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
  /** An object or interface type's fields. */
  getFields?(): Record<string, GraphqlField>;
  /** A scalar's (or an enum's) text of a value, as the client receives it. */
  serialize?(value: unknown): unknown;
  /** An enum's value of one of its names. */
  getValue?(name: string): { readonly value: unknown } | undefined;
  /** An interface's or a union's type of a value. */
  resolveType?: TypeResolver;
  /** An object type's test of a value. */
  isTypeOf?: (value: unknown, context: unknown, info: GraphqlResolveInfo) => unknown;
}

/** The scalars of the GraphQL specification: each serializes what it serialized (a number, a text, a boolean) to itself. */
const SPECIFIED_SCALARS: ReadonlySet<string | undefined> = new Set(['String', 'Int', 'Float', 'Boolean', 'ID']);

/** The property that names an object's type in its record. */
const TYPENAME = '__typename';

/**
 * A mutation's result as its client receives it, walking the field's type `type`: each scalar's and
 * enum's `serialize()` output, each object under its schema field names (read through each field's
 * resolver, so `@Field({ name: 'paid_at' }) paidAt` is read as the client gets it) with its
 * `__typename`, lists item by item. Every field of an object is recorded, not only those the
 * operation selected, so that a duplicate asking for other fields gets them too; but a field that
 * takes arguments, whose value depends on the operation's, is left to its resolver on every answer.
 * @throws IdempotencyUnsupportedHandlerError when the result refers to itself (a field whose value is one of its ancestors).
 */
export async function recordAnswer(value: unknown, type: GraphqlOutputType, context: unknown, info: GraphqlResolveInfo, handler: string): Promise<unknown> {
  return record(value, type, { context, info, handler, ancestors: [] });
}

/** Where a walk is: the operation's context and the field's info, and the objects above the value. */
interface RecordWalk {
  readonly context: unknown;
  readonly info: GraphqlResolveInfo;
  readonly handler: string;
  readonly ancestors: readonly unknown[];
}

async function record(pending: unknown, type: GraphqlOutputType, walk: RecordWalk): Promise<unknown> {
  const value = await pending;
  if (value === null || value === undefined) {
    return null;
  }
  switch (type[Symbol.toStringTag]) {
    case 'GraphQLNonNull':
      return record(value, type.ofType!, walk);
    case 'GraphQLList':
      return Promise.all(Array.from(value as Iterable<unknown>, (item) => record(item, type.ofType!, walk)));
    case 'GraphQLScalarType':
    case 'GraphQLEnumType':
      return type.serialize!(value);
    case 'GraphQLObjectType':
      return recordObject(value, type, walk);
    default: {
      const resolveType = type.resolveType ?? defaultTypeResolver;
      const typeName = (await resolveType(value, walk.context, walk.info, type)) as string;
      return recordObject(value, walk.info.schema.getType(typeName)!, walk);
    }
  }
}

async function recordObject(value: unknown, type: GraphqlOutputType, walk: RecordWalk): Promise<Record<string, unknown>> {
  if (walk.ancestors.includes(value)) {
    throw new IdempotencyUnsupportedHandlerError(graphqlMessages.cyclicResult(walk.handler, type.name!), walk.handler);
  }
  const inner: RecordWalk = { ...walk, ancestors: [...walk.ancestors, value] };
  const recorded: Record<string, unknown> = { [TYPENAME]: type.name };
  for (const [name, field] of Object.entries(type.getFields!())) {
    if (field.args.length > 0) {
      continue;
    }
    const info = { ...walk.info, fieldName: name, returnType: field.type, parentType: type, path: { prev: walk.info.path, key: name, typename: type.name } };
    recorded[name] = await record(field.resolve ? field.resolve(value, {}, walk.context, info) : defaultFieldResolver(value, name, walk.context, info), field.type, inner);
  }
  return recorded;
}

/** graphql-js's default field resolver: the source's property of the field's name, called when it is a method. */
function defaultFieldResolver(source: unknown, name: string, context: unknown, info: GraphqlResolveInfo): unknown {
  const property = (source as Record<string, unknown>)[name];
  return typeof property === 'function' ? (property as (...args: unknown[]) => unknown).call(source, {}, context, info) : property;
}

/** graphql-js's default type resolver: the value's `__typename`, else the possible type whose `isTypeOf` accepts it. */
function defaultTypeResolver(value: unknown, context: unknown, info: GraphqlResolveInfo, abstractType: GraphqlOutputType): string | undefined {
  const typeName = (value as Record<string, unknown>)[TYPENAME];
  if (typeof typeName === 'string') {
    return typeName;
  }
  return info.schema.getPossibleTypes(abstractType).find((possible) => possible.isTypeOf?.(value, context, info) === true)?.name;
}

/** A custom scalar's recorded text, which the scalar's `serialize` (wrapped by `answerOf`) gives back as it is. */
class RecordedScalar {
  constructor(readonly serialized: unknown) {}
}

/** The objects `answerOf` made of records: resolvers (wrapped by `answerOf`) read their fields by schema name. */
const ANSWERS = new WeakSet<object>();

/** The types whose resolvers and serializers read answers; a scalar shared by two schemas is wrapped once. */
const WRAPPED = new WeakSet<object>();

/**
 * The value graphql-js is handed for a recorded answer of the field's type `type` (`recordAnswer`),
 * to the first delivery and to every duplicate alike, which it completes to exactly the recorded
 * answer. graphql-js runs each scalar's `serialize` on what a resolver returns, and the record
 * holds what `serialize` gave, which it would not take again (`Cents` turns 1234 into `"12.34"`,
 * and `"12.34"` into `"0.12"`); no scalar can be asked for the value that serializes to a given
 * text (`parseValue` reads a client's input, which need not be the same text). So the types the
 * answer reaches are wrapped, once: a custom scalar's `serialize` gives a recorded text back as it
 * is, a field's resolver reads an answer's recorded field by its schema name (one with arguments,
 * not recorded, is resolved with the answer as its parent), an interface's or union's
 * `resolveType` (and an object's `isTypeOf`) reads its `__typename`; any other value goes to the
 * type's own function. A specified scalar (`Int`, `String`, ...) serializes its own output to
 * itself, an enum its value of a name to the name: those are handed over as such.
 */
export function answerOf(recorded: unknown, type: GraphqlOutputType, schema: GraphqlSchema): unknown {
  wrapReachable(type, schema);
  return answer(recorded, type, schema);
}

function answer(recorded: unknown, type: GraphqlOutputType, schema: GraphqlSchema): unknown {
  if (recorded === null || recorded === undefined) {
    return null;
  }
  switch (type[Symbol.toStringTag]) {
    case 'GraphQLNonNull':
      return answer(recorded, type.ofType!, schema);
    case 'GraphQLList':
      return (recorded as unknown[]).map((item) => answer(item, type.ofType!, schema));
    case 'GraphQLScalarType':
      return SPECIFIED_SCALARS.has(type.name) ? recorded : new RecordedScalar(recorded);
    case 'GraphQLEnumType':
      return type.getValue!(recorded as string)?.value;
    default: {
      const fields = recorded as Record<string, unknown>;
      const concrete = type[Symbol.toStringTag] === 'GraphQLObjectType' ? type : schema.getType(fields[TYPENAME] as string);
      if (!concrete) {
        // An interface or union recorded by 0.6 or earlier, which kept no type name: answered as it was then.
        return recorded;
      }
      const object: Record<string, unknown> = { [TYPENAME]: concrete.name };
      for (const [name, field] of Object.entries(concrete.getFields!())) {
        if (name in fields) {
          object[name] = answer(fields[name], field.type, schema);
        }
      }
      ANSWERS.add(object);
      return object;
    }
  }
}

/** Wraps `type` and every type its values reach (fields, list items, an abstract type's possible types), each once. */
function wrapReachable(type: GraphqlOutputType, schema: GraphqlSchema): void {
  const named = namedType(type);
  if (WRAPPED.has(named)) {
    return;
  }
  WRAPPED.add(named);
  switch (named[Symbol.toStringTag]) {
    case 'GraphQLScalarType': {
      if (!SPECIFIED_SCALARS.has(named.name)) {
        const serialize = named.serialize!.bind(named);
        (named as { serialize: (value: unknown) => unknown }).serialize = (value) => (value instanceof RecordedScalar ? value.serialized : serialize(value));
      }
      return;
    }
    case 'GraphQLObjectType': {
      const isTypeOf = named.isTypeOf;
      if (isTypeOf) {
        (named as { isTypeOf: typeof isTypeOf }).isTypeOf = (value, context, info) => (ANSWERS.has(value as object) ? (value as Record<string, unknown>)[TYPENAME] === named.name : isTypeOf(value, context, info));
      }
      for (const field of Object.values(named.getFields!())) {
        const resolve = field.resolve;
        if (resolve) {
          field.resolve = (source, args, context, info) =>
            ANSWERS.has(source as object) && info.fieldName in (source as object) ? (source as Record<string, unknown>)[info.fieldName] : resolve(source, args, context, info);
        }
        wrapReachable(field.type, schema);
      }
      return;
    }
    case 'GraphQLInterfaceType':
    case 'GraphQLUnionType': {
      const resolveType = named.resolveType;
      if (resolveType) {
        (named as { resolveType: TypeResolver }).resolveType = (value, context, info, abstractType) =>
          ANSWERS.has(value as object) ? (value as Record<string, unknown>)[TYPENAME] : resolveType(value, context, info, abstractType);
      }
      for (const possible of schema.getPossibleTypes(named)) {
        wrapReachable(possible, schema);
      }
      return;
    }
    default:
      return;
  }
}

/** The named type under a list's and a non-null's wrapping. */
function namedType(type: GraphqlOutputType): GraphqlOutputType {
  return type.ofType ? namedType(type.ofType) : type;
}
