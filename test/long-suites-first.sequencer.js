import Sequencer from '@jest/test-sequencer';

/**
 * The suites that run for minutes (their brokers' group joins and rebalances, scratch installs and
 * compiles, each data layer's contract), by path. Jest starts a suite it has no timing of (every
 * suite of a clean clone, as in CI) in order of file size, which would start these small files
 * last and leave one worker running them alone at the end.
 */
const LONG_SUITES = [/\/test\/kafka/, /\/test\/data-layers\./, /\/test\/guide-examples\./, /\/test\/outbox\.\w+\.e2e-spec\.ts$/, /\/test\/adopter-layers\./];

const longRank = (test) => LONG_SUITES.findIndex((pattern) => pattern.test(test.path));

/** The long suites first, longest first; then the others in Jest's own order (failed first, then the longest last time, else the largest file). */
export default class LongSuitesFirst extends Sequencer {
  async sort(tests) {
    const ordered = await super.sort(tests);
    const long = ordered.filter((test) => longRank(test) >= 0).sort((a, b) => longRank(a) - longRank(b));
    return [...long, ...ordered.filter((test) => longRank(test) < 0)];
  }
}
