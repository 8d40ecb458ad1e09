/**
 * A withdrawal devnet for integration tests: the two venue chains on anvil with the real contracts (Hyperliquid-
 * like 999, Aster-like 42161), a venue simulator on each (paying withdrawals on its chain from a hot wallet), the
 * service's HTTP stack configured with those `api_url`s, with the WithdrawalDesk entities (one per venue account)
 * on its in-memory cluster (TestServer.ts). Plus the client side: sign-in through either flow, link,
 * prepare/sign/submit, and polling a withdrawal until a state.
 */
import { Context, Duration, Effect, Layer } from "effect"
import type { Address, Hex } from "viem"
import type { PrivateKeyAccount } from "viem/accounts"
import type { VenueSimulatorOptions } from "../../infra/devnet/venues/VenueSimulator.ts"
import { venueEntry } from "./ChainDevnet.ts"
import { TestDatabaseLive } from "./Database.ts"
import { type RawResponse, rawRequest } from "./Http.ts"
import { bearer, post } from "./SignIn.ts"
import { testAppConfig } from "./TestConfig.ts"
import { TestHttpLive } from "./TestServer.ts"
import { startVenueNode, type VenueNode } from "./VenueNode.ts"

export const USDC = 1_000_000n
export class WithdrawalDevnet extends Context.Tag("test/WithdrawalDevnet")<
  WithdrawalDevnet,
  { readonly hl?: VenueNode; readonly aster?: VenueNode }
>() {}

export interface WithdrawalDevnetOptions {
  readonly venues: ReadonlyArray<"hyperliquid" | "aster">
  /** Simulator options per venue kind. */
  readonly sim?: Partial<Record<"hyperliquid" | "aster", Partial<VenueSimulatorOptions>>>
  /** `venue_api` settings per venue kind. */
  readonly api?: Partial<Record<"hyperliquid" | "aster", Record<string, unknown>>>
  /** `withdrawals` settings. */
  readonly withdrawals?: Record<string, unknown>
  /** Settlement v2: each venue names its deployed SettlementEscrowV2 and `settlement.escrow_version` is 2. */
  readonly escrowV2?: boolean
}

/** The raw config entry of a venue node, with its simulator as `api_url`. */
export const venueConfigOf = (
  kind: "hyperliquid" | "aster",
  node: VenueNode,
  api: Record<string, unknown> = {},
  escrowV2 = false,
) => {
  const { legacy_escrow: _legacy, ...entry } = venueEntry(node.chain, kind, { escrowV2 })
  return { ...entry, api_url: node.sim.url, venue_api: { request_timeout_ms: 1_500, ...api } }
}

export const withdrawalDevnet = (options: WithdrawalDevnetOptions) =>
  Layer.unwrapScoped(
    Effect.gen(function* () {
      const nodes: { hl?: VenueNode; aster?: VenueNode } = {}
      for (const kind of options.venues) {
        const node = yield* startVenueNode(kind, options.sim?.[kind])
        if (kind === "hyperliquid") nodes.hl = node
        else nodes.aster = node
      }
      const venues = options.venues.map((kind) =>
        venueConfigOf(kind, (kind === "hyperliquid" ? nodes.hl : nodes.aster)!, options.api?.[kind], options.escrowV2),
      )
      const authRpc = (nodes.hl ?? nodes.aster)!.chain.anvil.rpcUrl
      const config = testAppConfig({
        venues,
        auth: { rpc_urls: [authRpc] },
        withdrawals: { poll_ms: 100, reconcile_ms: 300, reconcile_max_ms: 1_000, ...options.withdrawals },
        ...(options.escrowV2 ? { settlement: { escrow_version: 2 } } : {}),
      })
      return TestHttpLive.pipe(
        Layer.provideMerge(TestDatabaseLive),
        Layer.provideMerge(config),
        Layer.merge(Layer.succeed(WithdrawalDevnet, nodes)),
      )
    }),
  )

// ---------------------------------------------------------------------------------------------
// The client side
// ---------------------------------------------------------------------------------------------

export const code = (res: { json: unknown }) => (res.json as { error?: { code: string } } | undefined)?.error?.code

export const get = (url: string, token: string) => rawRequest(url, { headers: bearer(token) })

/** Sign-in through the agent-approval venue: challenge with `venue`, sign the typed data, verify. */
export const asterSignIn = (base: string, account: PrivateKeyAccount, venue = "aster") =>
  Effect.gen(function* () {
    const challenge = yield* post(`${base}/v1/auth/challenge`, { address: account.address, venue })
    if (challenge.status !== 200) return yield* Effect.dieMessage(`challenge failed: ${challenge.text}`)
    const { nonce, typed_data } = challenge.json as { nonce: string; typed_data: unknown }
    const signature = yield* Effect.promise(() =>
      account.signTypedData(typed_data as Parameters<typeof account.signTypedData>[0]),
    )
    const verified = yield* post(`${base}/v1/auth/verify`, { nonce, signature })
    if (verified.status !== 200) return yield* Effect.dieMessage(`verify failed: ${verified.text}`)
    return (verified.json as { token: string }).token
  })

export interface Prepared {
  readonly venue: string
  readonly amount: string
  readonly to: "wallet" | "signer"
  readonly destination: string
  // biome-ignore lint/suspicious/noExplicitAny: wire typed data
  readonly typed_data: any
  readonly expires_at: string
}

export interface WithdrawalView {
  readonly id: string
  readonly venue: string
  readonly address: string
  readonly amount: string
  readonly to: string | null
  readonly destination: string
  readonly state: string
  /** Absent until the venue acknowledged the transfer. */
  readonly venue_ref?: string
  readonly error: string
  readonly created_at: string
  readonly updated_at: string
  /** Absent until the venue acknowledged the transfer. */
  readonly relayed_at?: string
  readonly revision: string
}

export const prepare = (base: string, token: string, body: { venue: string; amount: string; to: string }) =>
  post(`${base}/v1/withdrawals/prepare`, body, bearer(token))

export const prepareOk = (base: string, token: string, body: { venue: string; amount: string; to: string }) =>
  Effect.flatMap(prepare(base, token, body), (res) =>
    res.status === 200 ? Effect.succeed(res.json as Prepared) : Effect.dieMessage(`prepare failed: ${res.text}`),
  )

export const signPrepared = (account: PrivateKeyAccount, prepared: Prepared) =>
  Effect.promise(() => account.signTypedData(prepared.typed_data as Parameters<typeof account.signTypedData>[0]))

export const submit = (base: string, token: string, prepared: Prepared, signature: Hex, patch: object = {}) =>
  post(
    `${base}/v1/withdrawals`,
    {
      venue: prepared.venue,
      amount: prepared.amount,
      to: prepared.to,
      typed_data: prepared.typed_data,
      signature,
      ...patch,
    },
    bearer(token),
  )

/**
 * A transfer's funding: its `withdrawal_preparation` signed by the payer and submitted (to: signer, the payer's own
 * address on `venue`'s chain).
 */
export const submitFunding = (
  base: string,
  token: string,
  payer: PrivateKeyAccount,
  venue: string,
  // biome-ignore lint/suspicious/noExplicitAny: wire typed data
  prep: { readonly amount: string; readonly typed_data: any },
) =>
  Effect.flatMap(
    Effect.promise(() => payer.signTypedData(prep.typed_data)),
    (signature) =>
      submit(
        base,
        token,
        {
          venue,
          amount: prep.amount,
          to: "signer",
          destination: payer.address.toLowerCase(),
          typed_data: prep.typed_data,
          expires_at: "",
        },
        signature,
      ),
  )

/** Prepare, sign with `account`, submit: the queued withdrawal. */
export const withdraw = (
  base: string,
  token: string,
  account: PrivateKeyAccount,
  body: { venue: string; amount: string; to: string },
) =>
  Effect.gen(function* () {
    const prepared = yield* prepareOk(base, token, body)
    const res = yield* submit(base, token, prepared, yield* signPrepared(account, prepared))
    if (res.status !== 200) return yield* Effect.dieMessage(`submit failed: ${res.text}`)
    return res.json as WithdrawalView
  })

/** Polls GET /v1/withdrawals/{id} until `done` holds, for at most `timeoutMs`. */
export const waitFor = (
  base: string,
  token: string,
  id: string,
  done: (w: WithdrawalView) => boolean,
  timeoutMs = 20_000,
) =>
  Effect.gen(function* () {
    const deadline = Date.now() + timeoutMs
    let last: RawResponse | undefined
    while (Date.now() < deadline) {
      last = yield* get(`${base}/v1/withdrawals/${id}`, token)
      if (last.status === 200 && done(last.json as WithdrawalView)) return last.json as WithdrawalView
      yield* Effect.sleep(Duration.millis(100))
    }
    return yield* Effect.dieMessage(`withdrawal ${id} did not reach the expected state: ${last?.text}`)
  })

export const inState =
  (...states: ReadonlyArray<string>) =>
  (w: WithdrawalView) =>
    states.includes(w.state)

export const lower = (a: string) => a.toLowerCase() as Address
