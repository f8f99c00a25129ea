import { execFile } from 'node:child_process';
import { copyFile, mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { basename, join, resolve } from 'node:path';
import { promisify } from 'node:util';

const run = promisify(execFile);

/** Whether spin and a C compiler are installed; without them the suite says so loudly, and fails with CI=true. */
async function spinAvailable(): Promise<boolean> {
  try {
    await run('spin', ['-V']);
    await run('gcc', ['--version']);
    return true;
  } catch (error) {
    const reason = `spin or gcc did not run (${(error as Error).message})`;
    if (process.env.CI === 'true') {
      throw new Error(`${reason}; CI=true requires them (.ci/run installs spin: apt-get install spin)`, { cause: error });
    }
    console.warn(`\n*** SKIPPING the protocol models: ${reason}. Install spin (apt-get install spin) or set CI=true to make this a failure. ***\n`);
    return false;
  }
}

const describeWithSpin = (await spinAvailable()) ? describe : describe.skip;

interface Verification {
  errors: number;
  statesStored: number;
  /** What spin found, when it found something. */
  finding: string | undefined;
}

/**
 * Checks the model with spin: its assertions and its LTL property (acceptance cycles under weak
 * fairness), with `defines` given to the model's preprocessor.
 */
async function verify(model: string, defines: string[] = []): Promise<Verification> {
  const folder = await mkdtemp(join(tmpdir(), 'idempotency-spin-'));
  try {
    const file = join(folder, basename(model));
    await copyFile(resolve(model), file);
    await run('spin', [...defines.map((define) => `-D${define}`), '-a', basename(model)], { cwd: folder });
    // Unoptimised: the searches take a fraction of a second either way, and -O2 cost 2 CPU-s per compile.
    await run('gcc', ['-O0', '-DNFAIR=3', '-o', 'pan', 'pan.c'], { cwd: folder });
    const { stdout } = await run('./pan', ['-a', '-f', '-m1000000'], { cwd: folder }).catch((error: { stdout: string }) => error);
    return {
      errors: Number(/errors: (\d+)/.exec(stdout)?.[1] ?? NaN),
      statesStored: Number(/(\d+) states, stored/.exec(stdout)?.[1] ?? NaN),
      finding: /pan:1: (.*)/.exec(stdout)?.[1],
    };
  } finally {
    await rm(folder, { recursive: true, force: true });
  }
}

describeWithSpin('the claim protocols, model-checked with spin', () => {
  it.each([
    ['the transactional mode', 'libs/idempotency/src/claiming/transaction-protocol.pml'],
    ['the lease mode', 'libs/idempotency/src/leasing/lease-protocol.pml'],
  ])('%s: one completion at most, none after it, none by a fenced holder, and completed in the end under fairness', async (mode, model) => {
    const checked = await verify(model);
    console.log(`spin, ${mode}: ${checked.errors} errors, ${checked.statesStored} states stored`);
    expect(checked).toMatchObject({ errors: 0, finding: undefined });
    expect(checked.statesStored).toBeGreaterThan(1000);
  });

  it('finds a fenced holder completing when a lease store completes without checking the token', async () => {
    const checked = await verify('libs/idempotency/src/leasing/lease-protocol.pml', ['BROKEN_NO_TOKEN_CHECK']);
    console.log(`spin, lease mode without the token check: ${checked.finding}`);
    expect(checked.errors).toBeGreaterThan(0);
    expect(checked.finding).toMatch(/assertion violated \(holder==mine\)/);
  });

  it('finds the message lost when the claim commits apart from the work', async () => {
    const checked = await verify('libs/idempotency/src/claiming/transaction-protocol.pml', ['BROKEN_CLAIM_OUTSIDE_TRANSACTION']);
    console.log(`spin, claim outside the transaction: ${checked.finding}`);
    expect(checked.errors).toBeGreaterThan(0);
    expect(checked.finding).toMatch(/acceptance cycle/);
  });
});
