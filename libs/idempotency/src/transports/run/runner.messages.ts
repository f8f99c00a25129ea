/** The message texts of `IdempotentRunner`. */
export const runnerMessages = {
  invalidTransaction: (consumer: string, mode: unknown) =>
    mode === 'lease'
      ? `run() for ${consumer} takes a transaction of yours only in the transactional mode: a lease holds no transaction to join.`
      : `run() for ${consumer} takes as transaction a function that runs one SQL statement in your open transaction and answers its rows, such as (sql) => manager.query(sql).`,
};
