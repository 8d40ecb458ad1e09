// Both parties' holdings on every venue, in the token's base units: the wallet (the token's balanceOf on the
// venue's chain), the escrow (what the party's maker orders hold there, available + locked), and the margin the
// venue's simulator credits them (every book). Printed as a table before and after the transfer.
import { FetchHttpClient, HttpBody, HttpClient } from "@effect/platform"
import { Effect } from "effect"
import { type Address, createPublicClient, defineChain, type Hex, http } from "viem"
import { mockUSDCAbi, settlementEscrowAbi, settlementEscrowV2Abi } from "../../src/Chain/artifacts/index.ts"
import type { DemoVenue } from "./DemoDevnet.ts"

export interface Party {
  readonly name: string
  readonly address: Address
  /** Escrow orders of this party, per venue id. */
  readonly orders: Map<string, Array<Hex>>
  /** The orders are on the venues' v2 escrows (keyed by owner = `address` and id). */
  readonly v2?: boolean
}

export interface Holding {
  readonly wallet: bigint
  readonly escrow: bigint
  readonly margin: bigint
}

const clientOf = (v: DemoVenue) =>
  createPublicClient({
    chain: defineChain({
      id: v.chain_id,
      name: v.id,
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [...v.rpc_urls] } },
    }),
    transport: http(v.rpc_urls[0]),
  })

/** The simulator's margin books of `who` (keys `address|book`), 0 when the venue has no simulator. */
const marginOf = async (v: DemoVenue, who: Address): Promise<bigint> => {
  if (v.api_url === undefined) return 0n
  // The simulator's own control route (not the service's API): @effect/platform's HttpClient over fetch.
  const { state } = (await Effect.runPromise(
    HttpClient.HttpClient.pipe(
      Effect.flatMap((client) => client.post(`${v.api_url}/_control`, { body: HttpBody.unsafeJson({ op: "state" }) })),
      Effect.flatMap((res) => res.json),
      Effect.timeout("5 seconds"),
      Effect.provide(FetchHttpClient.layer),
    ),
  )) as { state: { balances: Record<string, string> } }
  const prefix = `${who.toLowerCase()}|`
  return Object.entries(state.balances)
    .filter(([k]) => k.startsWith(prefix))
    .reduce((s, [, amount]) => s + BigInt(amount), 0n)
}

export const holdingOf = async (v: DemoVenue, p: Party): Promise<Holding> => {
  const client = clientOf(v)
  const wallet = await client.readContract({
    address: v.token,
    abi: mockUSDCAbi,
    functionName: "balanceOf",
    args: [p.address],
  })
  let escrow = 0n
  for (const orderId of p.orders.get(v.id) ?? []) {
    const order = (
      p.v2 === true && v.escrow_v2 !== undefined
        ? await client.readContract({
            address: v.escrow_v2.address,
            abi: settlementEscrowV2Abi,
            functionName: "getOrder",
            args: [p.address, orderId],
          })
        : await client.readContract({
            address: v.escrow,
            abi: settlementEscrowAbi,
            functionName: "getOrder",
            args: [orderId],
          })
    ) as { available: bigint; locked: bigint }
    escrow += order.available + order.locked
  }
  return { wallet, escrow, margin: await marginOf(v, p.address) }
}

export type Snapshot = Map<string, Holding>

const keyOf = (party: string, venue: string) => `${party}@${venue}`

export const snapshot = async (venues: ReadonlyArray<DemoVenue>, parties: ReadonlyArray<Party>) => {
  const out: Snapshot = new Map()
  for (const p of parties) for (const v of venues) out.set(keyOf(p.name, v.id), await holdingOf(v, p))
  return out
}

/** Base units as a decimal amount of the token (6 decimals → "12.500000"). */
export const units = (amount: bigint, decimals: number) => {
  const sign = amount < 0n ? "-" : ""
  const abs = amount < 0n ? -amount : amount
  const scale = 10n ** BigInt(decimals)
  return `${sign}${abs / scale}.${(abs % scale).toString().padStart(decimals, "0")}`
}

/** One line per party and venue: wallet, escrow and margin before → after, and the change of their sum. */
export const renderBalances = (
  venues: ReadonlyArray<DemoVenue>,
  parties: ReadonlyArray<Party>,
  before: Snapshot,
  after: Snapshot,
): Array<string> => {
  const lines = [
    `  ${"party".padEnd(7)} ${"venue".padEnd(12)} ${"wallet before → after".padEnd(36)} ${"escrow before → after".padEnd(28)} ${"margin before → after".padEnd(28)} change`,
  ]
  for (const p of parties) {
    for (const v of venues) {
      const b = before.get(keyOf(p.name, v.id))!
      const a = after.get(keyOf(p.name, v.id))!
      const u = (x: bigint) => units(x, v.decimals)
      const pair = (x: bigint, y: bigint) => `${u(x)} → ${u(y)}`
      const change = a.wallet + a.escrow + a.margin - (b.wallet + b.escrow + b.margin)
      lines.push(
        `  ${p.name.padEnd(7)} ${v.id.padEnd(12)} ${pair(b.wallet, a.wallet).padEnd(36)} ${pair(b.escrow, a.escrow).padEnd(28)} ${pair(b.margin, a.margin).padEnd(28)} ${change >= 0n ? "+" : ""}${u(change)} ${v.symbol}`,
      )
    }
  }
  return lines
}
