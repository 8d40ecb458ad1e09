import { SqlClient } from "@effect/sql"
import { Effect } from "effect"

/**
 * The cores of the tables that make a linked account "in use" (spec: DELETE /v1/accounts/{venue}):
 * orders, fills and withdrawals. Later migrations add their remaining columns; the in-use rule
 * reads only the columns defined here (see src/Accounts/Usage.ts).
 */
export default Effect.gen(function* () {
  const sql = yield* SqlClient.SqlClient
  yield* sql`
    create table orders (
      id varchar(66) primary key,
      master varchar(42) not null,
      venue text not null,
      receive_venue text not null,
      owner_address varchar(42) not null check (owner_address = lower(owner_address)),
      state text not null,
      amount numeric(78, 0) not null,
      created_at timestamptz not null,
      updated_at timestamptz not null
    )`
  yield* sql`create index orders_owner on orders (venue, owner_address)`
  yield* sql`
    create table fills (
      id uuid primary key,
      take_id uuid not null,
      order_id varchar(66) not null references orders (id),
      taker_venue text not null,
      payer varchar(42) not null check (payer = lower(payer)),
      state text not null,
      final boolean not null default false,
      created_at timestamptz not null,
      updated_at timestamptz not null
    )`
  yield* sql`create index fills_payer on fills (taker_venue, payer) where not final`
  yield* sql`create index fills_order on fills (order_id) where not final`
  yield* sql`
    create table withdrawals (
      id uuid primary key,
      master varchar(42) not null,
      venue text not null,
      address varchar(42) not null check (address = lower(address)),
      amount numeric(78, 0) not null,
      destination varchar(42) not null,
      state text not null,
      created_at timestamptz not null,
      updated_at timestamptz not null
    )`
  yield* sql`create index withdrawals_account on withdrawals (venue, address)`
})
