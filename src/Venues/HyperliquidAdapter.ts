/**
 * The Hyperliquid adapter: perp USDC on HyperCore, escrow on HyperEVM (DESIGN §7).
 *
 * Routes (spec `POST /v1/withdrawals/prepare` `to`):
 * - `signer`: `sendAsset` from the perp dex ("") to spot at the USDC system address. Hyperliquid bridges a transfer
 *   to a system address onto HyperEVM and credits the *sender's* own EVM address, i.e. the linked signer on the
 *   escrow chain. Hence `destination` must be the signer.
 * - `wallet`: `withdraw3` to `destination` through the venue's bridge (Arbitrum on mainnet).
 *
 * Balance: `clearinghouseState.withdrawable`. Evidence: `userNonFundingLedgerUpdates`.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Clock, Effect, Either } from "effect"
import type { Address } from "viem"
import { isValidDecimals, withdrawalAmount } from "./DecimalAmount.ts"
import {
  classifyExchangeAnswer,
  exchangeBody,
  parseHyperliquidTransfer,
  signatureObject,
} from "./HyperliquidExchangeWire.ts"
import {
  clearinghouseStateRequest,
  findLedgerEntry,
  LEDGER_PAGE_SIZE,
  lastLedgerTime,
  ledgerUpdatesRequest,
  parseWithdrawable,
} from "./HyperliquidInfoWire.ts"
import {
  earliestAcceptanceMs,
  HYPERLIQUID_NONCE_WINDOW,
  type HyperliquidNonceWindow,
  isValidHyperliquidNonce,
  replayableUntilMs,
} from "./HyperliquidNonce.ts"
import {
  type HyperliquidChain,
  PERP_DEX,
  SPOT_DEX,
  sendAssetTypedData,
  USDC_SYSTEM_ADDRESS,
  withdraw3TypedData,
} from "./HyperliquidTypedData.ts"
import { Evidence, type PreparedWithdrawal, type VenueAdapter, type WithdrawalRequest } from "./VenueAdapter.ts"
import { TypedDataRejected, VenueUnavailable, WithdrawalRequestInvalid } from "./VenueErrors.ts"
import { exchange, parseJson } from "./VenueHttp.ts"

/** Hyperliquid keeps USD (perp) amounts with 6 decimals. */
export const HYPERLIQUID_USD_DECIMALS = 6

/** Mainnet USDC spot token for `/exchange` (read it from `spotMeta` to be sure; research §2.1). */
export const MAINNET_USDC_TOKEN = "USDC:0x6d1e7cde53ba9467b783cb7c530ce054"
export const TESTNET_USDC_TOKEN = "USDC:0xeb62eee3685fc4c43992febcd9e75443"

export interface HyperliquidSettings {
  readonly venueId: string
  /** Base URL: https://api.hyperliquid.xyz (testnet …-testnet.xyz), or a simulator. */
  readonly apiUrl: string
  readonly hyperliquidChain: HyperliquidChain
  /** The EIP-712 domain chain id; 42161 ("0xa4b1") per DESIGN §7. */
  readonly signatureChainId: number
  /** Decimals of the escrow-chain token (USDC: 6). */
  readonly decimals: number
  /** `sendAsset` token string for USDC. */
  readonly usdcToken: string
  /** Where `sendAsset` goes to reach HyperEVM (USDC: 0x2000…0000). */
  readonly usdcSystemAddress: Address
  readonly requestTimeoutMs: number
  readonly nonceWindow: HyperliquidNonceWindow
}

export const hyperliquidSettings = (
  s: Pick<HyperliquidSettings, "venueId" | "apiUrl" | "decimals"> & Partial<HyperliquidSettings>,
): HyperliquidSettings => {
  const hyperliquidChain = s.hyperliquidChain ?? "Mainnet"
  return {
    hyperliquidChain,
    signatureChainId: 42161,
    usdcToken: hyperliquidChain === "Mainnet" ? MAINNET_USDC_TOKEN : TESTNET_USDC_TOKEN,
    usdcSystemAddress: USDC_SYSTEM_ADDRESS,
    requestTimeoutMs: 10_000,
    nonceWindow: HYPERLIQUID_NONCE_WINDOW,
    ...s,
  }
}

const sameAddress = (a: string, b: string) => a.toLowerCase() === b.toLowerCase()

export const makeHyperliquidAdapter = (
  settings: HyperliquidSettings,
): Effect.Effect<VenueAdapter, never, HttpClient.HttpClient> =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const venue = settings.venueId
    const base = settings.apiUrl.replace(/\/+$/, "")
    // The venue's precision bounds what can be signed: an 18-decimal token still moves in 1e-6 USDC steps.
    const maxFractionDigits = Math.min(settings.decimals, HYPERLIQUID_USD_DECIMALS)
    const post = (path: "/info" | "/exchange", body: unknown) =>
      exchange(
        client,
        HttpClientRequest.post(`${base}${path}`).pipe(HttpClientRequest.bodyUnsafeJson(body)),
        settings.requestTimeoutMs,
      )

    /** An `/info` read: a 200 JSON answer or VenueUnavailable. */
    const info = (body: unknown) =>
      Effect.flatMap(post("/info", body), (answer) => {
        if (answer._tag !== "Answered") return Effect.fail(new VenueUnavailable({ venue, reason: answer.reason }))
        const json = parseJson(answer.body)
        if (answer.status !== 200 || json === undefined) {
          return Effect.fail(
            new VenueUnavailable({ venue, reason: `/info HTTP ${answer.status}: ${answer.body.slice(0, 200)}` }),
          )
        }
        return Effect.succeed(json)
      })

    const withdrawable: VenueAdapter["withdrawable"] = (address) =>
      Effect.gen(function* () {
        const readAtMs = yield* Clock.currentTimeMillis
        const json = yield* info(clearinghouseStateRequest(address))
        const amountBaseUnits = yield* Either.match(parseWithdrawable(json, settings.decimals), {
          onLeft: (reason) => Effect.fail(new VenueUnavailable({ venue, reason })),
          onRight: Effect.succeed,
        })
        return { amountBaseUnits, readAtMs }
      })

    const buildWithdrawal = (request: WithdrawalRequest) =>
      Effect.gen(function* () {
        const invalid = (reason: string) => Effect.fail(new WithdrawalRequestInvalid({ venue, reason }))
        if (!isValidHyperliquidNonce(request.nowMs)) return yield* invalid("nowMs must be a positive integer (ms)")
        const amount = withdrawalAmount(request.amountBaseUnits, settings.decimals, maxFractionDigits)
        if (Either.isLeft(amount)) return yield* invalid(amount.left.message)
        const common = {
          signatureChainId: settings.signatureChainId,
          hyperliquidChain: settings.hyperliquidChain,
          amount: amount.right,
        }
        const prepared = (typedData: PreparedWithdrawal["typedData"], action: PreparedWithdrawal["action"]) =>
          ({
            typedData,
            amount: amount.right,
            amountBaseUnits: request.amountBaseUnits,
            // Neither action signs a fee: the destination is taken to receive the signed amount (feeOnTop adds none).
            feeBaseUnits: 0n,
            action,
            nonce: request.nowMs,
            destination: request.destination.toLowerCase() as Address,
            replayableUntilMs: replayableUntilMs(request.nowMs, settings.nonceWindow),
          }) satisfies PreparedWithdrawal
        if (request.to === "signer") {
          if (!sameAddress(request.destination, request.address)) {
            return yield* invalid("to: signer pays the signer itself on HyperEVM; destination must be the address")
          }
          const typedData = sendAssetTypedData({
            ...common,
            destination: settings.usdcSystemAddress,
            sourceDex: PERP_DEX,
            destinationDex: SPOT_DEX,
            token: settings.usdcToken,
            fromSubAccount: "",
            nonce: request.nowMs,
          })
          return prepared(typedData, "hyperliquid.sendAsset")
        }
        return prepared(
          withdraw3TypedData({ ...common, destination: request.destination, time: request.nowMs }),
          "hyperliquid.withdraw3",
        )
      })

    const submitWithdrawal: VenueAdapter["submitWithdrawal"] = (request) =>
      Effect.gen(function* () {
        const parsed = parseHyperliquidTransfer(request.typedData, settings.hyperliquidChain)
        if (Either.isLeft(parsed)) return yield* Effect.fail(new TypedDataRejected({ venue, reason: parsed.left }))
        const signature = signatureObject(request.signature)
        if (Either.isLeft(signature))
          return yield* Effect.fail(new TypedDataRejected({ venue, reason: signature.left }))
        const answer = yield* post("/exchange", exchangeBody(parsed.right, signature.right))
        // Hyperliquid acknowledges without an id; (signer, nonce) is unique per signer.
        return classifyExchangeAnswer(answer, `${request.address.toLowerCase()}:${parsed.right.nonce}`)
      }).pipe(Effect.withSpan("Venues.Hyperliquid.submitWithdrawal"))

    /** Ledger pages read before giving up (500 entries each): beyond that the answer is Unavailable, not NotFound. */
    const MAX_LEDGER_PAGES = 40

    const findEvidence: VenueAdapter["findEvidence"] = (query) =>
      Effect.gen(function* () {
        // The signer route sends to the system address; its ledger entry names that address.
        const destinations = [query.destination, settings.usdcSystemAddress]
        let startTime = earliestAcceptanceMs(query.nonce, settings.nonceWindow)
        for (let page = 0; page < MAX_LEDGER_PAGES; page++) {
          const json = yield* info(ledgerUpdatesRequest(query.address, startTime))
          const checkedAtMs = yield* Clock.currentTimeMillis
          for (const destination of destinations) {
            const match = findLedgerEntry(json, {
              user: query.address,
              nonce: query.nonce,
              amountBaseUnits: query.amountBaseUnits,
              destination,
              decimals: settings.decimals,
            })
            if (Either.isLeft(match)) return Evidence.Unavailable({ reason: match.left })
            if (match.right !== undefined) return Evidence.Found({ venueRef: match.right.hash, atMs: match.right.time })
          }
          const last = lastLedgerTime(json)
          if (!Array.isArray(json) || json.length < LEDGER_PAGE_SIZE || last === undefined) {
            // The whole range up to now was read: the transfer is not (yet) there.
            return Evidence.NotFound({
              checkedAtMs,
              replayableUntilMs: replayableUntilMs(query.nonce, settings.nonceWindow),
            })
          }
          if (last <= startTime) return Evidence.Unavailable({ reason: "ledger page does not advance in time" })
          startTime = last
        }
        return Evidence.Unavailable({ reason: `ledger longer than ${MAX_LEDGER_PAGES} pages since the nonce` })
      }).pipe(Effect.catchTag("VenueUnavailable", (e) => Effect.succeed(Evidence.Unavailable({ reason: e.reason }))))

    if (!isValidDecimals(settings.decimals)) {
      return yield* Effect.dieMessage(`venue ${venue}: unsupported decimals ${settings.decimals}`)
    }
    return {
      venueId: venue,
      kind: "hyperliquid",
      withdrawable,
      buildWithdrawal,
      submitWithdrawal,
      findEvidence,
      agentApproval: undefined,
    } satisfies VenueAdapter
  })
