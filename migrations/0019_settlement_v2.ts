import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Settlement v2 in the service's own records (DESIGN §6 "Fills", §10). v1 rows keep their meaning and only drain.
 *
 * - `orders.escrow_version`: 1 = funded on the venue's SettlementEscrow (v1), 2 = on its SettlementEscrowV2 (config
 *   `escrow_v2`). Fixed at creation; every later step (fund, quotes, takes, closes) uses that escrow.
 * - `quote_sets`: a v2 set's signed `issued_at` (chain seconds), `hashlock_root` and `hashlock_count`, and the
 *   maker-published `hashlocks` (hex, by index; their tree's root is checked against the signed root on publish).
 *   A v2 set's `quotes` items carry the taker chain's `escrow`. Secrets never reach the service.
 * - `takes`: `escrow_version`; `pay_key_address` — the taker client's ephemeral pay key named in every Fill;
 *   `pay_by` (chain seconds, the same for every fill of the take); `pay_authorization` — the pay key's signature
 *   over PayTake(fill digests), given by the client once it saw every lock final; `pay_authorized_at`.
 * - `fills`: `fill_digest` (EIP-712 digest of the whole v2 Fill in the taker escrow's domain: the key of the lock
 *   and of the payment), `hashlock_index` with its Merkle `hashlock_proof`, `pay_by`, and the pay key's
 *   `cancel_signature` (CancelFill) when the client gave one. `secret_ciphertext` is null for v2 fills: the
 *   service learns a v2 secret only from the chain (escrow_v2_secrets).
 * A hashlock index of a set is reserved once, ever (a hashlock locks once on chain, even after a refund).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`alter table orders
    add column escrow_version smallint not null default 1 check (escrow_version in (1, 2))`
  yield* sql`alter table quote_sets
    add column issued_at bigint,
    add column hashlock_root varchar(66),
    add column hashlock_count int check (hashlock_count > 0),
    add column hashlocks jsonb`
  yield* sql`alter table takes
    add column escrow_version smallint not null default 1 check (escrow_version in (1, 2)),
    add column pay_key_address varchar(42) check (pay_key_address = lower(pay_key_address)),
    add column pay_by bigint,
    add column pay_authorization text,
    add column pay_authorized_at timestamptz`
  yield* sql`alter table fills
    alter column secret_ciphertext drop not null,
    add column fill_digest varchar(66),
    add column hashlock_index int,
    add column hashlock_proof jsonb,
    add column pay_by bigint,
    add column cancel_signature text`
  yield* sql`create unique index fills_digest on fills (fill_digest) where fill_digest is not null`
  yield* sql`create unique index fills_hashlock_index on fills (order_id, sequence, hashlock_index)
    where hashlock_index is not null`
})
