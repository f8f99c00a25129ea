import { GraphQLEnumType, GraphQLInt, GraphQLList, GraphQLNonNull, GraphQLObjectType, GraphQLScalarType, GraphQLString } from 'graphql';
import { type GraphqlOutputType, revive } from './graphql-replay.js';

const DateTime = new GraphQLScalarType({
  name: 'DateTime',
  serialize: (value) => (value instanceof Date ? value.toISOString() : null),
  parseValue: (value) => new Date(value as string),
});
const Status = new GraphQLEnumType({ name: 'Status', values: { DONE: { value: 'done' } } });
const Entry = new GraphQLObjectType({ name: 'Entry', fields: { at: { type: new GraphQLNonNull(DateTime) }, cents: { type: GraphQLInt } } });
const Grant = new GraphQLObjectType({
  name: 'Grant',
  fields: {
    account: { type: new GraphQLNonNull(GraphQLString) },
    grantedAt: { type: DateTime },
    status: { type: Status },
    entries: { type: new GraphQLNonNull(new GraphQLList(new GraphQLNonNull(Entry))) },
  },
});
const type = new GraphQLNonNull(Grant) as unknown as GraphqlOutputType;

describe('revive', () => {
  it('reads a recorded result back as the resolver gave it: custom scalars by their parseValue, at every depth', () => {
    const at = new Date('2026-12-05T07:41:42.684Z');
    const result = { account: 'acc-1', grantedAt: at, status: 'done', entries: [{ at, cents: 5 }], extra: { kept: true } };
    const revived = revive(JSON.parse(JSON.stringify(result)), type);
    expect(revived).toEqual(result);
    expect(DateTime.serialize((revived as typeof result).grantedAt)).toBe('2026-12-05T07:41:42.684Z');
  });

  it('leaves null, built-in scalars and enums as they are', () => {
    expect(revive(null, type)).toBeNull();
    expect(revive({ account: 'a', grantedAt: null, status: 'done', entries: [] }, type)).toEqual({ account: 'a', grantedAt: null, status: 'done', entries: [] });
    expect(revive('text', GraphQLString as unknown as GraphqlOutputType)).toBe('text');
  });
});
