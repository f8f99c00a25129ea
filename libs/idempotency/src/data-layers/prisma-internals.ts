import type { DataLayerHost } from './data-layer.js';

/*
 * What the module relies on in Prisma beyond its documented API, and nothing else. Prisma's client
 * batches the `findUnique` calls made in one tick into one query (its request handler's
 * DataLoader: `batchBy` names a request's batch, `dispatchBatches` runs every batch of the tick in
 * the async context of the tick's first request, through `singleLoader` or `batchLoader`). Inside
 * idempotent handlers, each with its claim's transaction, that query would run in one handler's
 * transaction for all of them: one would not see its own uncommitted rows and would see another's.
 * These parts read the same in Prisma 7.10; `prisma-internals.e2e-spec.ts` beside it checks them
 * on the installed version and fails when an upgrade changes them.
 */

/** A request of Prisma's client to its engine; only its identity is used. */
type PrismaRequest = object;

/** The options of the DataLoader of Prisma's request handler. */
interface PrismaDataLoaderOptions {
  batchBy(request: PrismaRequest): string | undefined;
  singleLoader(request: PrismaRequest): Promise<unknown>;
  batchLoader(requests: PrismaRequest[]): Promise<unknown>;
}

/**
 * The DataLoader options of a PrismaClient (or of a class that extends it), told by their shape;
 * undefined for anything else, including a provider that throws when read (nestjs-cls's proxies).
 */
function dataLoaderOptions(candidate: unknown): PrismaDataLoaderOptions | undefined {
  if (typeof candidate !== 'object' || candidate === null) {
    return undefined;
  }
  let options: Partial<PrismaDataLoaderOptions> | undefined;
  try {
    options = (candidate as { _requestHandler?: { dataloader?: { options?: Partial<PrismaDataLoaderOptions> } } })._requestHandler?.dataloader?.options;
  } catch {
    return undefined;
  }
  return typeof options?.batchBy === 'function' && typeof options.singleLoader === 'function' && typeof options.batchLoader === 'function'
    ? (options as PrismaDataLoaderOptions)
    : undefined;
}

/** The Prisma clients whose batches are kept per claim already. */
const SEPARATED = new WeakSet<object>();

/**
 * Keeps `client`'s batches apart per claim of `storage`: a request made inside a claim is batched
 * only with requests of the same claim, and each batch runs in the async context of its requests'
 * claim (a batch of requests made outside any claim, outside every claim). Returns false when
 * `client` is not a PrismaClient.
 * @internal
 */
export function separatePrismaBatchesPerClaim(client: unknown, storage: DataLayerHost['storage']): boolean {
  const options = dataLoaderOptions(client);
  if (!options) {
    return false;
  }
  if (SEPARATED.has(options)) {
    return true;
  }
  SEPARATED.add(options);
  type Claim = NonNullable<ReturnType<DataLayerHost['storage']['getStore']>>;
  const claimOfRequest = new WeakMap<PrismaRequest, Claim | null>();
  const claimNumbers = new WeakMap<Claim, number>();
  let claims = 0;
  const { batchBy, singleLoader, batchLoader } = options;
  const inClaimOf = <T>(request: PrismaRequest | undefined, load: () => Promise<T>): Promise<T> => {
    const claim = request === undefined ? undefined : claimOfRequest.get(request);
    if (claim === undefined) {
      return load();
    }
    return claim === null ? storage.exit(load) : storage.run(claim, load);
  };
  options.batchBy = function batchByClaim(request) {
    const batch = batchBy.call(this, request);
    if (!batch) {
      return batch;
    }
    const claim = storage.getStore();
    claimOfRequest.set(request, claim ?? null);
    if (!claim) {
      return batch;
    }
    let number = claimNumbers.get(claim);
    if (number === undefined) {
      number = ++claims;
      claimNumbers.set(claim, number);
    }
    return `${batch}\u0000claim ${number}`;
  };
  options.singleLoader = function singleLoaderInClaim(request) {
    return inClaimOf(request, () => singleLoader.call(this, request));
  };
  options.batchLoader = function batchLoaderInClaim(requests) {
    return inClaimOf(requests[0], () => batchLoader.call(this, requests));
  };
  return true;
}

/**
 * Keeps the batches of every PrismaClient the application provides apart per claim
 * (`separatePrismaBatchesPerClaim`): what a layer whose pool Prisma's adapter is built on does at its start.
 * @internal
 */
export function separateApplicationPrismaBatches(host: DataLayerHost): void {
  for (const wrapper of host.discovery.getProviders()) {
    if (wrapper.isDependencyTreeStatic()) {
      separatePrismaBatchesPerClaim(wrapper.instance, host.storage);
    }
  }
}
