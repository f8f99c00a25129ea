import { subjectCovers } from './jetstream-subjects.js';

describe('subjectCovers', () => {
  it.each([
    ['credits.>', 'credits.*', true],
    ['credits.*', 'credits.*', true],
    ['>', 'credits.*', true],
    ['credits.>', 'credits', false],
    ['credits.placed', 'credits.*', false],
    ['credits.*', 'credits.a.b', false],
    ['credits.*.x', 'credits.*', false],
    ['orders.>', 'credits.*', false],
    ['credits.*', 'credits.>', false],
    ['credits.>', 'credits.a.>', true],
    ['deliver.credits', 'deliver.credits', true],
  ])('%s covers %s: %s', (filter, subject, covers) => {
    expect(subjectCovers(filter, subject)).toBe(covers);
  });
});
