/**
 * The transactions a handler opens inside the claim's, each a savepoint of it, one client at a time.
 *
 * A claim has one database connection, and savepoints on it form a stack: rolling back to one
 * undoes everything after it, whoever sent it. So two of the layer's transactions that run at the
 * same time in one handler (`Promise.all` over `db.transaction()`, `prisma.$transaction()`,
 * `dataSource.transaction()`) cannot both be savepoints at once: the one that rolls back would take
 * the other's committed work with it. Each client the layer takes from its pool during the claim (a
 * `pool.connect()`, a TypeORM `createQueryRunner()`) is a lease of the claim's connection, and a
 * transaction opened through a lease waits until the transactions of every other lease have ended,
 * as it would wait for a pooled connection: at most the claim's connection timeout, after which it
 * is refused and the claim cannot commit. Transactions opened again through the same lease nest.
 *
 * A statement sent through another lease while a transaction is open (the layer's injected client
 * used inside a transaction's callback) cannot wait, since the transaction may be waiting for it;
 * it runs inside the open savepoint. When that savepoint is then rolled back, the statement's work
 * is undone with it though its sender saw it succeed: the claim is refused at COMMIT, loudly,
 * rather than commit without it.
 * @internal
 */
export class NestedTransactions {
  /** The lease whose transactions are open, and for each open one, whether another lease's statement ran inside it. */
  private owner: object | undefined;
  private readonly foreign: boolean[] = [];
  private readonly waiting: { grant: () => void; refuse: (error: Error) => void }[] = [];
  /** Why the claim may no longer commit. */
  private refusal: Error | undefined;

  /**
   * @param waitMs How long a transaction waits for the transactions of other leases to end.
   * @param refused Builds the error of a refusal: a transaction that `waited` too long, or a rollback that `undone` another lease's work.
   */
  constructor(
    private readonly waitMs: number,
    private readonly refused: (reason: 'waited' | 'undone', waitMs: number) => Error,
  ) {}

  /** How many of the handler's transactions are open. */
  get depth(): number {
    return this.foreign.length;
  }

  /** Why the claim may not commit: a transaction was refused, or a rollback undid another lease's work. */
  get refusedCommit(): Error | undefined {
    return this.refusal;
  }

  /** Whether `lease` opened the innermost open transaction, so that its COMMIT or ROLLBACK ends that one, not the claim's. */
  owns(lease: object): boolean {
    return this.owner === lease && this.foreign.length > 0;
  }

  /**
   * Opens a transaction for `lease`: at once when no other lease's transaction is open (undefined),
   * else when they have ended (a promise).
   * @throws (rejects with) the refusal when they have not ended within `waitMs`.
   */
  open(lease: object): Promise<void> | undefined {
    if (this.foreign.length === 0 || this.owner === lease) {
      this.push(lease);
      return undefined;
    }
    return new Promise<void>((resolve, reject) => {
      const waiter = {
        grant: () => {
          clearTimeout(timer);
          this.push(lease);
          resolve();
        },
        refuse: (error: Error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
      const timer = setTimeout(() => {
        this.waiting.splice(this.waiting.indexOf(waiter), 1);
        reject(this.refuse(this.refused('waited', this.waitMs)));
      }, this.waitMs);
      this.waiting.push(waiter);
    });
  }

  /** A statement other than transaction control, sent through `lease`. */
  sent(lease: object): void {
    if (this.foreign.length > 0 && this.owner !== lease) {
      this.foreign.fill(true);
    }
  }

  /**
   * Ends `lease`'s innermost transaction (call `owns()` first). A rollback that undoes another
   * lease's statement refuses the claim's commit.
   */
  close(lease: object, commits: boolean): void {
    if (this.owner !== lease || this.foreign.length === 0) {
      return;
    }
    // A foreign statement marked every transaction open when it ran (`sent()`), so the one around
    // this one already knows of it when this one is released.
    const undone = this.foreign.pop()!;
    if (undone && !commits) {
      this.refuse(this.refused('undone', this.waitMs));
    }
    this.next();
  }

  /** The claim's transaction ended: every wait is refused, with `error()`. */
  ended(error: () => Error): void {
    this.owner = undefined;
    this.foreign.length = 0;
    this.refusal = undefined;
    for (const waiter of this.waiting.splice(0)) {
      waiter.refuse(error());
    }
  }

  private push(lease: object): void {
    this.owner = lease;
    this.foreign.push(false);
  }

  /** When the open transactions have all ended, the first waiter's opens. */
  private next(): void {
    if (this.foreign.length > 0) {
      return;
    }
    this.owner = undefined;
    this.waiting.shift()?.grant();
  }

  private refuse(error: Error): Error {
    this.refusal ??= error;
    return error;
  }
}
