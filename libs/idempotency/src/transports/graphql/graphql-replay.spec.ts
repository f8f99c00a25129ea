import {
  type ExecutionResult,
  graphql,
  GraphQLEnumType,
  GraphQLFloat,
  GraphQLInterfaceType,
  GraphQLList,
  GraphQLNonNull,
  GraphQLObjectType,
  type GraphQLResolveInfo,
  GraphQLScalarType,
  GraphQLSchema,
  GraphQLString,
  GraphQLUnionType,
} from 'graphql';
import { IdempotencyUnsupportedHandlerError } from '../../errors/idempotency.errors.js';
import { answerOf, type GraphqlOutputType, type GraphqlResolveInfo, recordAnswer } from './graphql-replay.js';

const Cents = new GraphQLScalarType({
  name: 'Cents',
  serialize: (cents) => ((cents as number) / 100).toFixed(2),
  parseValue: (text) => Math.round(Number(text) * 100),
});
const Status = new GraphQLEnumType({ name: 'Status', values: { DONE: { value: 1 }, OPEN: { value: 2 } } });

class Card {
  constructor(readonly last4: string) {}
}
class Transfer {
  constructor(readonly iban: string) {}
}
const Method = new GraphQLInterfaceType({
  name: 'Method',
  fields: { label: { type: GraphQLString } },
  resolveType: (value) => (value instanceof Card ? 'Card' : 'Transfer'),
});
const CardType = new GraphQLObjectType({
  name: 'Card',
  interfaces: [Method],
  isTypeOf: (value) => value instanceof Card,
  fields: { label: { type: GraphQLString, resolve: (card: Card) => `card ${card.last4}` } },
});
const TransferType = new GraphQLObjectType({
  name: 'Transfer',
  interfaces: [Method],
  fields: { label: { type: GraphQLString, resolve: (transfer: Transfer) => `transfer ${transfer.iban}` } },
});
const Entry = new GraphQLObjectType({
  name: 'Entry',
  fields: {
    amount: { type: new GraphQLNonNull(Cents) },
    // A field with a name of its own in the schema, read from the property `paidAt`.
    paid_at: { type: GraphQLFloat, resolve: (entry: { paidAt: number }) => entry.paidAt },
  },
});
const Payment: GraphQLObjectType = new GraphQLObjectType({
  name: 'Payment',
  fields: () => ({
    amount: { type: Cents },
    status: { type: Status },
    entries: { type: new GraphQLList(new GraphQLList(Entry)) },
    method: { type: Method },
    self: { type: Payment },
    // A field with arguments, resolved on every answer, with the answer as its parent.
    note: { type: GraphQLString, args: { lang: { type: new GraphQLNonNull(GraphQLString) } }, resolve: (_parent, { lang }: { lang: string }) => (lang === 'fr' ? 'payé' : 'paid') },
  }),
});
const Refused = new GraphQLObjectType({ name: 'Refused', fields: { reason: { type: GraphQLString } } });
const Outcome = new GraphQLUnionType({ name: 'Outcome', types: [Payment, Refused], resolveType: (value) => ('reason' in (value as object) ? 'Refused' : 'Payment') });

/** A schema whose mutation `pay` answers `result`: as it is, or from its record, as the module answers it. */
function schemaAnswering(result: () => unknown, recorded: boolean): GraphQLSchema {
  return new GraphQLSchema({
    types: [CardType, TransferType],
    query: new GraphQLObjectType({ name: 'Query', fields: { ping: { type: GraphQLString } } }),
    mutation: new GraphQLObjectType({
      name: 'Mutation',
      fields: {
        pay: {
          type: new GraphQLNonNull(Outcome),
          resolve: async (_root, _args, context, info: GraphQLResolveInfo) => {
            if (!recorded) {
              return result();
            }
            const resolveInfo = info as unknown as GraphqlResolveInfo;
            const record = JSON.parse(JSON.stringify(await recordAnswer(result(), resolveInfo.returnType, context, resolveInfo, 'Payments.pay')));
            return answerOf(record, resolveInfo.returnType, resolveInfo.schema);
          },
        },
      },
    }),
  });
}

const payment = () => ({
  amount: 1234,
  status: 2,
  entries: [[{ amount: 1000, paidAt: 1_700_000_000_000 }, null], [], [{ amount: 234, paidAt: 1_700_000_000_001 }]],
  method: new Card('4242'),
});
const operation = `mutation {
  pay {
    __typename
    ... on Payment { total: amount status entries { amount paid_at } method { __typename label } self { amount } note(lang: "fr") }
    ... on Refused { reason }
  }
}`;

describe('recordAnswer and answerOf', () => {
  const run = (result: () => unknown, recorded: boolean): Promise<ExecutionResult> => graphql({ schema: schemaAnswering(result, recorded), source: operation });

  it('answer from the record exactly what the value itself answers: custom scalars, enums, named fields, nested lists, interfaces, unions, aliases', async () => {
    const direct = await run(payment, false);
    expect(direct.errors).toBeUndefined();
    expect((direct.data!.pay as { total: string }).total).toBe('12.34');
    expect(JSON.stringify(await run(payment, true))).toBe(JSON.stringify(direct));
    const refused = () => ({ reason: 'no funds' });
    expect(JSON.stringify(await run(refused, true))).toBe(JSON.stringify(await run(refused, false)));
  });

  it('records every field of an object under its schema name, as the client receives it, whatever the operation selected', async () => {
    const [type, info] = [Outcome as unknown as GraphqlOutputType, { schema: schemaAnswering(payment, false), path: undefined } as unknown as GraphqlResolveInfo];
    expect(await recordAnswer(Promise.resolve(new Transfer('FR76')), Method as unknown as GraphqlOutputType, undefined, info, 'Payments.pay')).toEqual({
      __typename: 'Transfer',
      label: 'transfer FR76',
    });
    const recorded = await recordAnswer(payment(), type, undefined, info, 'Payments.pay');
    expect(recorded).not.toHaveProperty('note');
    expect(recorded).toMatchObject({
      __typename: 'Payment',
      amount: '12.34',
      status: 'OPEN',
      entries: [[{ __typename: 'Entry', amount: '10.00', paid_at: 1_700_000_000_000 }, null], [], [{ __typename: 'Entry', amount: '2.34', paid_at: 1_700_000_000_001 }]],
      self: null,
    });
  });

  it('answers an object recorded by 0.6 or earlier, without a type name', () => {
    const schema = schemaAnswering(payment, false) as unknown as GraphqlResolveInfo['schema'];
    expect(answerOf({ reason: 'no funds' }, Refused as unknown as GraphqlOutputType, schema)).toEqual({ __typename: 'Refused', reason: 'no funds' });
    expect(answerOf({ reason: 'no funds' }, Outcome as unknown as GraphqlOutputType, schema)).toEqual({ reason: 'no funds' });
  });

  it('refuses a result that contains itself, naming the handler', async () => {
    const cyclic = { ...payment(), self: undefined as unknown };
    cyclic.self = cyclic;
    const info = { schema: schemaAnswering(payment, false), path: undefined } as unknown as GraphqlResolveInfo;
    const recording = recordAnswer(cyclic, Payment as unknown as GraphqlOutputType, undefined, info, 'Payments.pay');
    await expect(recording).rejects.toThrow(IdempotencyUnsupportedHandlerError);
    await expect(recording).rejects.toThrow(/^Payments.pay answered a Payment that contains itself/);
  });
});
