import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Settlement v2's own records beside 0019 (src/Settlement/RepoV2.ts, DESIGN §10):
 * - `takes.pay_authorization_requested_at`: when every lock of the take was seen final and the journal got
 *   `take.pay_authorization_requested` (set once, in that transaction; null = not yet, or never: a lock failed).
 * - `settlement_v2_marks`: on-chain evidence counted once per fill (primary key (fill_id, kind)):
 *   `chance` — the payment was final with at least reveal_cutoff left before takerExpiry while the lock was live
 *   (the maker could reveal); `fade` — such a payment was never claimed (refunded, or held past takerExpiry);
 *   `unpaid` — every lock of the take was final, and this lock was left unpaid past payBy: it ended (cancelled
 *   or refunded) with no payment, other than by a cancel the pay key gave before payBy.
 *   `identity_id` is the maker's quote identity (fade, chance), `master` the taker's account (unpaid).
 * - `quote_identities.fade_flagged_at`: set when the identity's fades exceed the configured rate
 *   (settlement.max_fade_rate over max(chances, settlement.fade_min_chances)); the router skips a flagged
 *   identity until its owner acts (which clears it).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`alter table takes add column pay_authorization_requested_at timestamptz`
  yield* sql`alter table quote_identities add column fade_flagged_at timestamptz`
  yield* sql`
    create table settlement_v2_marks (
      fill_id uuid not null,
      kind text not null check (kind in ('chance', 'fade', 'unpaid')),
      identity_id uuid not null,
      master varchar(42) not null,
      created_at timestamptz not null default now(),
      primary key (fill_id, kind)
    )`
  yield* sql`create index settlement_v2_marks_identity on settlement_v2_marks (identity_id, kind)`
  yield* sql`create index settlement_v2_marks_master on settlement_v2_marks (master, kind)`
})
