import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * Each fill's taker master (its take's) and maker master (its order's), so an account's settled trades can be read
 * newest first from an index of their own (src/Trades/Repo.ts, `scope=mine`). Before, the page walked every settled
 * fill newest first until it found a page of the account's: an account with few trades read the whole history
 * (~400 ms at 200,000 settled fills), and reading the account's fills first instead was as slow for an account with
 * many (test/bench/trades.ts).
 *
 * A fill's take and order never change and neither does their master, so the columns are set once, when the fill is
 * inserted, by a trigger: every insert path (the v1 and v2 takes, test fixtures) gets them without naming them.
 * Rows already there are filled in here.
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`alter table fills add column taker_master varchar(42), add column maker_master varchar(42)`
  yield* sql.unsafe(`
    create function fills_set_masters() returns trigger language plpgsql as $fn$
    begin
      select t.master into new.taker_master from takes t where t.id = new.take_id;
      select o.master into new.maker_master from orders o where o.id = new.order_id;
      return new;
    end
    $fn$`)
  yield* sql`
    create trigger fills_set_masters before insert on fills
    for each row execute function fills_set_masters()`
  yield* sql`update fills f set taker_master = t.master from takes t where t.id = f.take_id`
  yield* sql`update fills f set maker_master = o.master from orders o where o.id = f.order_id`
  yield* sql`
    create index fills_settled_taker on fills (taker_master, settled_at desc, id desc) where state = 'settled'`
  yield* sql`
    create index fills_settled_maker on fills (maker_master, settled_at desc, id desc) where state = 'settled'`
})
