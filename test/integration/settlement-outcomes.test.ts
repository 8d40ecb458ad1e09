import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { OUTCOMES_COLUMN, outcomesOfFills, type SettlingFill } from "../../src/Settlement/Repo.ts"
import { TestDatabaseLive } from "../support/Database.ts"

/**
 * A take's pass reads its fills' relayer outcomes in the fills' own query (OUTCOMES_COLUMN): by key, the status and
 * the revert reason, else the error, empty ones being none; keys the relayer never got are absent. Held here on real
 * relayer rows and a fill's seven key columns, since the settlement tests reach only some of these cases.
 */
layer(TestDatabaseLive, { timeout: "60 seconds", excludeTestServices: true })("settlement outcomes", (it) => {
  it.effect("each fill's keys → the outcomes the decisions read; absent and null keys are not there", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const request = (key: string, status: string, revert: string | null, error: string) =>
        sql`insert into relayer_requests (idempotency_key, venue, chain_id, signer, target, function_name, calldata,
            status, revert_reason, error)
          values (${key}, 'hyperliquid', 999, ${`0x${"01".repeat(20)}`}, ${`0x${"02".repeat(20)}`}, 'lock', '0x',
            ${status}, ${revert}, ${error})`
      yield* request("o:lock", "final", null, "")
      yield* request("o:pay", "reverted", "Expired()", "execution reverted")
      yield* request("o:claim", "reverted", "", "nonce too low")
      yield* request("o:cancel", "pending", null, "")
      yield* request("other:lock", "final", null, "")
      const rows = yield* sql<Pick<SettlingFill, "outcomes">>`
        select ${sql.literal(OUTCOMES_COLUMN)} from (values
          ('o:lock', 'o:pay', 'o:claim', null, 'o:cancel', 'o:never', null),
          (null, null, null, null, null, null, null)
        ) as f(lock_key, pay_key, claim_key, claim_payment_key, cancel_key, refund_key, refund_payment_key)`
      expect(rows[1]!.outcomes).toBeNull()
      expect(Object.fromEntries(outcomesOfFills(rows))).toEqual({
        "o:lock": { status: "final", reason: null },
        "o:pay": { status: "reverted", reason: "Expired()" },
        "o:claim": { status: "reverted", reason: "nonce too low" },
        "o:cancel": { status: "pending", reason: null },
      })
    }),
  )
})
