/** The message texts of IdempotencyTestingModule. */
export const testingMessages = {
  testingManagerMissing: () =>
    'IdempotencyContext.manager has no EntityManager under IdempotencyTestingModule: pass the one the handler ' +
    'should use, IdempotencyTestingModule.forRoot({ manager }) (a fake, or the manager of a test database).',
};
