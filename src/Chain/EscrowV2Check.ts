import { Duration, Effect, Layer } from "effect"
import {
  type Address,
  BaseError,
  ContractFunctionRevertedError,
  ContractFunctionZeroDataError,
  type PublicClient,
} from "viem"
import { AppConfig, ConfigInvalid, type DeploymentConfig, type VenueConfig } from "../Config.ts"
import { type TimingV2, timingProblems } from "../Domain/SettlementTimingV2.ts"
import { ChainClients } from "./ChainClients.ts"
import { escrowV2TimingAbi } from "./EscrowV2Abi.ts"

/** The deployment's v2 values (`settlement` and `limits.quote_validity_seconds_max`). */
export const settlementTimingV2 = (d: DeploymentConfig): TimingV2 => ({
  lockCutoff: d.settlement.lock_cutoff_seconds,
  revealCutoff: d.settlement.reveal_cutoff_seconds,
  takerTimeout: d.settlement.taker_timeout_seconds,
  maxLock: d.settlement.max_lock_seconds,
  payByMax: d.settlement.pay_by_max_seconds,
  claimWindow: d.settlement.claim_window_seconds,
  maxQuoteLife: d.settlement.max_quote_life_seconds,
  takerTimeoutMin: d.settlement.taker_timeout_min_seconds,
  quoteValidityMax: d.limits.quote_validity_seconds_max,
})

/** Each immutable of SettlementEscrowV2 and the `settlement` field it must equal. */
export const ESCROW_V2_IMMUTABLES = [
  ["MAX_LOCK", "max_lock_seconds"],
  ["PAY_BY_MAX", "pay_by_max_seconds"],
  ["CLAIM_WINDOW", "claim_window_seconds"],
  ["MAX_QUOTE_LIFE", "max_quote_life_seconds"],
  ["TAKER_TIMEOUT_MIN", "taker_timeout_min_seconds"],
] as const

export type EscrowV2Immutables = Record<(typeof ESCROW_V2_IMMUTABLES)[number][0], bigint>

/** Differences between the escrow's immutables and the config, as `NAME is x s, settlement.field says y`. */
export const immutablesMismatch = (d: DeploymentConfig, onChain: EscrowV2Immutables): Array<string> =>
  ESCROW_V2_IMMUTABLES.flatMap(([name, field]) =>
    onChain[name] === BigInt(d.settlement[field])
      ? []
      : [`its ${name} is ${onChain[name]} s, settlement.${field} says ${d.settlement[field]}`],
  )

const readImmutables = (client: PublicClient, escrow: Address) =>
  Effect.tryPromise({
    try: async () => {
      const values = await Promise.all(
        ESCROW_V2_IMMUTABLES.map(([name]) =>
          client.readContract({ abi: escrowV2TimingAbi, address: escrow, functionName: name }),
        ),
      )
      return Object.fromEntries(ESCROW_V2_IMMUTABLES.map(([name], i) => [name, values[i]!])) as EscrowV2Immutables
    },
    catch: (e) => e,
  })

/** No contract there (empty answer), or one without these views (the call reverts): not a SettlementEscrowV2. */
const noCode = (e: unknown) =>
  e instanceof BaseError &&
  e.walk((x) => x instanceof ContractFunctionZeroDataError || x instanceof ContractFunctionRevertedError) !== null

/**
 * Start-up check of the v2 deployment: when any venue configures `escrow_v2`, the `settlement` v2 values must be
 * consistent (the escrow's constructor rules and the service's own) and each escrow's immutables must equal them.
 * A mismatch, or no v2 escrow at the address, stops the service with one line (ConfigInvalid). A chain that does not
 * answer is not a configuration error: a warning, and the watcher reports the chain (a failing RPC never stops the
 * process).
 */
export const checkEscrowV2Deployment = Effect.gen(function* () {
  const { deployment } = yield* AppConfig
  const clients = yield* ChainClients
  const venues = deployment.venues
    .map((venue, index) => ({ venue, index }))
    .filter(
      (v): v is { venue: VenueConfig & { escrow_v2: NonNullable<VenueConfig["escrow_v2"]> }; index: number } =>
        v.venue.escrow_v2 !== undefined,
    )
  if (venues.length === 0) return
  const problems = timingProblems(settlementTimingV2(deployment))
  if (problems.length > 0) {
    return yield* new ConfigInvalid({
      message: `settlement: the v2 time bounds are inconsistent (${problems.join("; ")}); fix the settlement values (see README "Settlement v2 timing")`,
    })
  }
  yield* Effect.forEach(
    venues,
    ({ venue, index }) =>
      Effect.gen(function* () {
        const client = clients.chain(venue.id)
        if (client === undefined) return
        const escrow = venue.escrow_v2.address as Address
        const where = `venues.${index}.escrow_v2 (${venue.id}, ${escrow.toLowerCase()} on chain ${venue.chain_id})`
        const read = yield* readImmutables(client, escrow).pipe(
          Effect.timeoutFail({ duration: Duration.seconds(10), onTimeout: () => new Error("timed out after 10 s") }),
          Effect.either,
        )
        if (read._tag === "Left") {
          if (noCode(read.left)) {
            return yield* new ConfigInvalid({
              message: `${where}: no SettlementEscrowV2 there (its time-bound views return nothing); fix the address`,
            })
          }
          return yield* Effect.logWarning("could not read the v2 escrow's immutables; not checked", {
            venue: venue.id,
            error: read.left instanceof Error ? read.left.message.split("\n")[0] : String(read.left),
          })
        }
        const mismatch = immutablesMismatch(deployment, read.right)
        if (mismatch.length > 0) {
          return yield* new ConfigInvalid({
            message: `${where}: ${mismatch.join("; ")}; set settlement to the escrow's values or point escrow_v2 at an escrow deployed with yours`,
          })
        }
      }),
    { concurrency: "unbounded", discard: true },
  )
})

/** The check as a layer of the composition root (ChainLive): the service does not start on a mismatch. */
export const EscrowV2CheckLive = Layer.effectDiscard(checkEscrowV2Deployment)
