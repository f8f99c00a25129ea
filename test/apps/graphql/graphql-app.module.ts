import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Injectable, Module } from '@nestjs/common';
import {
  Args,
  createUnionType,
  Field,
  GraphQLISODateTime,
  GraphQLModule,
  GraphQLTimestamp,
  InputType,
  Int,
  InterfaceType,
  Mutation,
  ObjectType,
  Query,
  Resolver,
} from '@nestjs/graphql';
import { GraphQLScalarType } from 'graphql';
import { IdempotencyContext, IdempotentHandler } from 'nestjs-idempotent-consumer';

@InputType()
export class GrantCreditInput {
  @Field(() => String)
  account!: string;

  @Field(() => Int)
  cents!: number;

  /** The client's id of the operation, for the mutation keyed by an argument. */
  @Field(() => String, { nullable: true })
  requestId?: string;
}

@ObjectType()
export class CreditGrant {
  /** The ledger row this credit wrote: a replay answers the first one's. */
  @Field(() => Int)
  entryId!: number;

  @Field(() => String)
  account!: string;

  @Field(() => Int)
  cents!: number;

  @Field(() => Int)
  balance!: number;

  /** When the ledger row was written: a custom scalar, which a replay gives back as the first answer did. */
  @Field(() => GraphQLISODateTime)
  grantedAt!: Date;
}

/** An amount of money: a whole number of cents inside, a decimal text on the wire (1234 is `"12.34"`). */
export const Cents = new GraphQLScalarType<number, string>({
  name: 'Cents',
  serialize: (cents) => ((cents as number) / 100).toFixed(2),
  parseValue: (text) => Math.round(Number(text) * 100),
});

/** A 64-bit integer: a `bigint` inside, its decimal text on the wire. */
export const BigIntScalar = new GraphQLScalarType<bigint, string>({
  name: 'BigInt',
  serialize: (value) => (value as bigint).toString(),
  parseValue: (text) => BigInt(text as string),
});

@InputType()
export class PayInput {
  @Field(() => String)
  account!: string;

  @Field(() => Int)
  cents!: number;
}

/** Who paid: an interface, told apart by class (Nest's default `resolveType` tests `instanceof`). */
@InterfaceType()
export abstract class Party {
  @Field(() => String)
  name!: string;
}

@ObjectType({ implements: () => Party })
export class Person extends Party {
  @Field(() => Int)
  age!: number;
}

@ObjectType({ implements: () => Party })
export class Company extends Party {
  @Field(() => String, { name: 'vat_id' })
  vatId!: string;
}

@ObjectType()
export class PaymentLine {
  @Field(() => String)
  label!: string;

  @Field(() => Cents)
  amount!: number;
}

/** A payment, with a field of each shape a replay must give back as the client first received it. */
@ObjectType()
export class Payment {
  @Field(() => BigIntScalar)
  entryId!: bigint;

  @Field(() => Cents)
  amount!: number;

  @Field(() => GraphQLTimestamp, { name: 'paid_at' })
  paidAt!: Date;

  @Field(() => [[PaymentLine]])
  lines!: PaymentLine[][];

  @Field(() => [Party])
  parties!: Party[];
}

@ObjectType()
export class Declined {
  @Field(() => String)
  reason!: string;
}

/** What a payment ends as: a union, told apart by class. */
export const PaymentOutcome = createUnionType({ name: 'PaymentOutcome', types: () => [Payment, Declined] as const });

/** Makes the next credits fail after their writes, for the tests of a resolver that throws. */
@Injectable()
export class CreditFaults {
  failNext = 0;
}

/** Credits granted by GraphQL mutations, each written in its claim's transaction through `IdempotencyContext.manager`. */
@Resolver()
export class CreditsResolver {
  constructor(
    private readonly idempotency: IdempotencyContext,
    private readonly faults: CreditFaults,
  ) {}

  @Query(() => String)
  ping(): string {
    return 'pong';
  }

  /** Keyed by the request's `Idempotency-Key` header; a twin in flight is refused. */
  @Mutation(() => CreditGrant)
  @IdempotentHandler()
  grantCredit(@Args('input', { type: () => GrantCreditInput }) input: GrantCreditInput): Promise<CreditGrant> {
    return this.grant(input);
  }

  /** As `grantCredit`, but a twin in flight waits for its answer. */
  @Mutation(() => CreditGrant)
  @IdempotentHandler({ inFlight: 'wait' })
  grantCreditWaiting(@Args('input', { type: () => GrantCreditInput }) input: GrantCreditInput): Promise<CreditGrant> {
    return this.grant(input);
  }

  /** Keyed by an argument, as a client that sends its own operation id does. */
  @Mutation(() => CreditGrant)
  @IdempotentHandler({ key: { body: 'input.requestId' } })
  grantCreditByRequestId(@Args('input', { type: () => GrantCreditInput }) input: GrantCreditInput): Promise<CreditGrant> {
    return this.grant(input);
  }

  /** A payment whose answer has custom scalars, a field named in the schema, nested lists, an interface and a union. */
  @Mutation(() => PaymentOutcome)
  @IdempotentHandler()
  async pay(@Args('input', { type: () => PayInput }) input: PayInput): Promise<Payment | Declined> {
    if (input.cents <= 0) {
      return Object.assign(new Declined(), { reason: `nothing to pay: ${input.cents}` });
    }
    const { entryId, grantedAt } = await this.grant(input);
    const line = (label: string, amount: number) => Object.assign(new PaymentLine(), { label, amount });
    return Object.assign(new Payment(), {
      entryId: BigInt(entryId) * 10_000_000_000n,
      amount: input.cents,
      paidAt: grantedAt,
      lines: [[line('net', input.cents - 100), line('fee', 100)], [], [line('total', input.cents)]],
      parties: [Object.assign(new Person(), { name: 'Ada', age: 36 }), Object.assign(new Company(), { name: 'Acme', vatId: 'FR-1' })],
    });
  }

  /** The party who paid, as an interface. */
  @Mutation(() => Party)
  @IdempotentHandler()
  async payAsCompany(@Args('input', { type: () => PayInput }) input: PayInput): Promise<Party> {
    await this.grant(input);
    return Object.assign(new Company(), { name: input.account, vatId: `VAT-${input.cents}` });
  }

  private async grant({ account, cents }: GrantCreditInput): Promise<CreditGrant> {
    const { manager } = this.idempotency;
    const [{ balance }] = await manager.query<{ balance: string }[]>(
      `INSERT INTO accounts (account, balance) VALUES ($1, $2)
       ON CONFLICT (account) DO UPDATE SET balance = accounts.balance + EXCLUDED.balance
       RETURNING balance`,
      [account, cents],
    );
    const [{ id, created_at }] = await manager.query<{ id: string; created_at: Date }[]>(
      'INSERT INTO ledger_entries (account, cents) VALUES ($1, $2) RETURNING id, created_at',
      [account, cents],
    );
    if (this.faults.failNext > 0) {
      this.faults.failNext--;
      throw new Error('the credit failed after its writes');
    }
    return { entryId: Number(id), account, cents, balance: Number(balance), grantedAt: created_at };
  }
}

/** A code-first GraphQL API on Apollo (Express) with idempotent mutations; import it beside the demo's AppModule. */
@Module({
  imports: [GraphQLModule.forRoot<ApolloDriverConfig>({ driver: ApolloDriver, autoSchemaFile: true })],
  providers: [CreditsResolver, CreditFaults],
})
export class GraphqlAppModule {}
