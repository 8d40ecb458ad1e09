import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Transfers on settlement v2 (issue 23). `take_version` is the take's settlement version decided at the transfer's
 * creation (takeEscrowVersion: 2 only when settlement.escrow_version is 2 and both venues have escrow_v2); a v2
 * transfer's take needs the client's pay key (DESIGN §6), which the spec's transfer body cannot carry, so it is
 * given later on PUT /v1/transfers/{id}/take/pay-key and kept in `pay_key` (lowercase address; set once). The take
 * (and with it payBy, the pay window) is created only once the pay key is there: no Fill is reserved or offered
 * before. Existing rows are v1.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`alter table transfers
    add column take_version smallint not null default 1 check (take_version in (1, 2)),
    add column pay_key text check (pay_key is null or pay_key ~ '^0x[0-9a-f]{40}$')`
})
