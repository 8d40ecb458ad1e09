import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * A venue pair's trades (`GET /v1/trades?a&b`, and `/v1/trades/history` with a pair: src/Trades/Repo.ts) read
 * each direction's settled fills newest first from this index. They walked every settled fill newest first until
 * a page of the pair's: harmless with two venues (every fill matches), the whole history for a pair that rarely
 * trades once there are more.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`create index fills_settled_pair on fills (maker_venue, taker_venue, settled_at desc, id desc)
    where state = 'settled'`
})
