/*
 * The transactional mode's protocol (claiming.service.ts, claim-transaction.ts, open-claim.ts;
 * the twin wait and the settling both modes share: delivery-claiming.ts, settling-delivery.ts),
 * for one message delivered three times, checked with spin by test/protocol-models.e2e-spec.ts:
 *
 *   spin -a transaction-protocol.pml && gcc -DNFAIR=3 -o pan pan.c && ./pan -a -f
 *
 * Step by step, the model and the code:
 *   claim      BEGIN; INSERT ... ON CONFLICT ON CONSTRAINT <table>_pkey DO NOTHING (claimStatements):
 *              the primary key settles every race in PostgreSQL. A committed row is a duplicate
 *              (replayed / acked); a row another open transaction inserted is a twin in flight (the
 *              INSERT waits at most lock_timeout, then 409 / requeue, or, under 'wait', the
 *              delivery lets go of its connection and tries again); else the row is this
 *              transaction's, uncommitted.
 *   work       the handler's writes, in the same transaction (IdempotencyContext.manager, and the
 *              data source joined to the claim: DataSourceJoin).
 *   commit     UPDATE <the recorded response>; COMMIT (recordStatements, ClaimTransaction.commit):
 *              the claim and the work commit together, or neither does.
 *   rollback   the handler threw, or PostgreSQL aborted the transaction: ROLLBACK undoes the claim
 *              with the work (OpenClaim.rollback() -> undo()).
 *   crash      the process dies at any step before COMMIT: PostgreSQL rolls the open transaction
 *              back when its connection drops; the broker (or the client) redelivers.
 *   lost ack   after COMMIT, the ack (or the HTTP answer) may be lost: the message is redelivered.
 *
 * Checked: the work is committed at most once; a committed message never runs again (within its
 * retention, which the model does not end); and, under weak fairness, the work is committed in
 * the end. -DBROKEN_CLAIM_OUTSIDE_TRANSACTION commits the claim on its own before the work, as a
 * claim kept in another store or transaction would: spin then finds the message lost (claimed,
 * never worked) after a crash.
 */

#define DELIVERIES 3
#define MAX_CRASHES 2
#define MAX_FAILURES 1

#define NO_ROW 0
#define UNCOMMITTED 1
#define COMMITTED 2

byte row = NO_ROW;      /* the claim row of the message */
byte owner = 0;         /* the delivery whose open transaction inserted it */
bool work = false;      /* the handler's writes, uncommitted */
byte committedWork = 0;
bool everCommitted = false;
byte crashes = 0;
byte failures = 0;

/* The transaction of `me` ends without COMMIT: its claim row and its work are undone together. */
inline rollback() {
  atomic {
#ifndef BROKEN_CLAIM_OUTSIDE_TRANSACTION
    if
    :: row == UNCOMMITTED && owner == me -> row = NO_ROW; owner = 0
    :: else -> skip
    fi;
#endif
    work = false
  }
}

active [DELIVERIES] proctype Delivery() {
  byte me = _pid + 1;
  bool won;
  bool finished = false;
  do
  :: finished -> break
  :: else ->
     /* claim */
     atomic {
       if
       :: row == COMMITTED -> finished = true; won = false
       :: row == NO_ROW ->
#ifdef BROKEN_CLAIM_OUTSIDE_TRANSACTION
            row = COMMITTED;
#else
            row = UNCOMMITTED;
#endif
            owner = me; won = true
       :: row == UNCOMMITTED -> won = false
       fi
     }
     if
     :: !won -> skip
     :: else ->
        assert(!everCommitted);
        if
        :: crashes < MAX_CRASHES -> crashes++; rollback()   /* before the work */
        :: true ->
           /* work */
           work = true;
           if
           :: crashes < MAX_CRASHES -> crashes++; rollback()   /* after the work, before COMMIT */
           :: failures < MAX_FAILURES -> failures++; rollback()
           :: true ->
                /* commit */
                atomic {
                  row = COMMITTED; owner = 0;
                  committedWork++; everCommitted = true; work = false;
                  assert(committedWork == 1);
                  if
                  :: finished = true
                  :: true -> skip   /* lost ack: redelivered */
                  fi
                }
           fi
        fi
     fi
  od
}

ltl processed_in_the_end { <> everCommitted }
