/*
 * The lease mode's protocol (lease-claiming.service.ts, open-lease.ts, lease-store.ts; the twin
 * wait and the settling both modes share: ../claiming/delivery-claiming.ts, settling-delivery.ts),
 * for one message delivered three times, checked with spin by test/protocol-models.e2e-spec.ts:
 *
 *   spin -a lease-protocol.pml && gcc -DNFAIR=3 -o pan pan.c && ./pan -a -f
 *
 * Step by step, the model and the code:
 *   claim      LeaseStore.claim(): atomic in the store; a new message, or a lease that expired,
 *              is taken under a fresh token (LeaseClaimingService.tryOnce, randomUUID()); a completed
 *              message is a duplicate (replayed / acked); a live lease is a twin in flight (409 or
 *              requeue with backoff, or poll under 'wait': the delivery tries again).
 *   remote     the handler calls the other service with IdempotencyContext.downstreamKey, which
 *              dedupes by it: however many calls, one remote effect.
 *   complete   OpenLease.commit() -> complete() -> LeaseStore.complete(): atomic, only while the
 *              token holds the lease; a fenced holder gets IdempotencyLeaseLostError and its
 *              delivery is retried.
 *   release    OpenLease.rollback() -> undo() -> LeaseStore.release(): the handler threw; token-checked.
 *   crash      the process dies at any step: nothing is released, the lease is left to expire,
 *              and the broker (or the client) redelivers: the process tries again.
 *   Clock      the lease expires: always once its holder is dead; at most MAX_SLOW times while
 *              its holder still works (a handler that outlives its lease and its renewals, up to
 *              renewLeaseFor: a takeover of a live holder). An expired lease nobody took over is
 *              still its holder's: complete() checks the token only, on every store.
 *   lost ack   after completing, the ack (or the HTTP answer) may be lost: the message is redelivered.
 *
 * Checked: at most one completion; a completed message never runs again (within its retention,
 * which the model does not end); a fenced holder never completes; and, under weak fairness, the
 * message is completed in the end (no message is stuck forever). -DBROKEN_NO_TOKEN_CHECK makes
 * complete() skip the token check, as a store that breaks the contract would: spin then finds a
 * fenced holder completing.
 */

#define DELIVERIES 3
#define MAX_CRASHES 2
#define MAX_FAILURES 1
#define MAX_SLOW 1

#define FREE 0
#define LEASED 1
#define DONE 2

#ifdef BROKEN_NO_TOKEN_CHECK
#define MAY_COMPLETE (state == LEASED)
#else
#define MAY_COMPLETE (state == LEASED && holder == mine)
#endif

byte state = FREE;
byte holder = 0;        /* the token holding the lease; tokens are 1, 2, ... */
byte tokens = 0;        /* the last token handed out */
bool holderAlive = false;
bool leaseExpired = false;
byte completions = 0;
bool everDone = false;
bool remoteEffect = false;
byte crashes = 0;
byte failures = 0;
byte slowExpiries = 0;

active proctype Clock() {
end:
  do
  :: atomic {
       state == LEASED && !leaseExpired && (!holderAlive || slowExpiries < MAX_SLOW) ->
       if
       :: holderAlive -> slowExpiries++
       :: else -> skip
       fi;
       leaseExpired = true
     }
  od
}

/* The process of `mine` dies: a live lease it holds is left to expire. */
inline crash() {
  atomic {
    crashes++;
    if
    :: holder == mine -> holderAlive = false
    :: else -> skip
    fi
  }
}

active [DELIVERIES] proctype Delivery() {
  byte mine;
  bool finished = false;
  do
  :: finished -> break
  :: else ->
     /* claim */
     atomic {
       if
       :: state == DONE -> finished = true; mine = 0
       :: state == FREE || (state == LEASED && leaseExpired) ->
            tokens++; mine = tokens; holder = mine; state = LEASED; leaseExpired = false; holderAlive = true
       :: else -> mine = 0
       fi
     }
     if
     :: mine == 0 -> skip
     :: else ->
        assert(!everDone);
        if
        :: crashes < MAX_CRASHES -> crash()   /* before the remote call */
        :: true ->
           /* remote */
           remoteEffect = true;
           if
           :: crashes < MAX_CRASHES -> crash()   /* after the remote call, before completing */
           :: failures < MAX_FAILURES ->
                /* release */
                atomic {
                  failures++;
                  if
                  :: state == LEASED && holder == mine -> state = FREE; holderAlive = false
                  :: else -> skip
                  fi
                }
           :: true ->
                /* complete */
                atomic {
                  if
                  :: MAY_COMPLETE ->
                       assert(holder == mine);
                       state = DONE; everDone = true; completions++; holderAlive = false;
                       assert(completions == 1);
                       if
                       :: finished = true
                       :: true -> skip   /* lost ack: redelivered */
                       fi
                  :: else -> skip   /* fenced: IdempotencyLeaseLostError, retried */
                  fi
                }
           fi
        fi
     fi
  od
}

ltl completed_in_the_end { <> everDone }
