import { ApolloDriver, type ApolloDriverConfig } from '@nestjs/apollo';
import { Injectable, Module } from '@nestjs/common';
import { Args, Field, GraphQLISODateTime, GraphQLModule, InputType, Int, Mutation, ObjectType, Query, Resolver } from '@nestjs/graphql';
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
