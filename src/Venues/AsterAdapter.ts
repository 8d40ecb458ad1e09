/**
 * The Aster adapter: futures (perp) balance, EVM withdrawals signed by the user, V3 requests signed by the
 * service's agent for that user, and the agent approval that sign-in uses (spec auth/challenge rule 3).
 *
 * Endpoints (V3, form-encoded):
 * - `POST /fapi/v3/registerAndApproveAgent` (public; the user's signature authorises);
 * - `POST /fapi/v3/aster/user-withdraw-info`: per-chain `perpMaxWithdrawAmount` and `withdrawFee`;
 * - `POST /fapi/v3/aster/user-withdraw`: relays the user's signed `Action`;
 * - `POST /fapi/v3/aster/deposit-withdraw-history`: evidence for unknown outcomes.
 *
 * Routes: `signer` withdraws on the escrow chain to the user's own address (Aster pays only the registered
 * address); `wallet` withdraws to `destination` on the configured wallet chain.
 */
import { HttpClient, HttpClientRequest } from "@effect/platform"
import { Clock, Effect, Either } from "effect"
import type { Address } from "viem"
import { parseAgentApproval, parseWithdrawAction, withdrawParams } from "../Domain/AsterSignedPayloads.ts"
import {
  ASTER_CHAIN_NAMES,
  agentApprovalMessage,
  agentApprovalTypedData,
  messageTypedData,
  withdrawActionTypedData,
} from "../Domain/AsterTypedData.ts"
import type { AsterAgentResolver } from "./AsterAgent.ts"
import {
  classifyAsterAnswer,
  findWithdrawRecord,
  parseWithdrawInfo,
  successAcknowledged,
  withdrawAcknowledged,
} from "./AsterAnswers.ts"
import { encodeForm, type FormPairs, withSignature, withV3Envelope } from "./AsterForm.ts"
import {
  ASTER_NONCE_WINDOW_MICROS,
  ASTER_USER_NONCE_SLACK_MS,
  agentExpiryMs,
  makeMicrosNonceSource,
  microsFromMillis,
  withdrawalReplayableUntilMs,
} from "./AsterNonce.ts"
import { fromWholeTokens, isValidDecimals, normalizeWholeTokens, roundUpTo, withdrawalAmount } from "./DecimalAmount.ts"
import {
  type AgentApproval,
  Evidence,
  type PreparedWithdrawal,
  type VenueAdapter,
  type WithdrawalRequest,
} from "./VenueAdapter.ts"
import { TypedDataRejected, VenueUnavailable, WithdrawalRequestInvalid } from "./VenueErrors.ts"
import { exchange, type HttpAnswer, parseJson } from "./VenueHttp.ts"

export interface AsterSettings {
  readonly venueId: string
  /** https://fapi.asterdex.com, or a simulator. */
  readonly apiUrl: string
  /** Decimals of the escrow-chain token. */
  readonly decimals: number
  /** The venue's decimal places for this asset (amounts and fees are refused beyond them). */
  readonly maxFractionDigits: number
  /** The venue's asset name ("USDT", "USDC"). */
  readonly asset: string
  /** Chain of `to: signer` withdrawals: the escrow chain. */
  readonly withdrawChainId: number
  /** Chain of `to: wallet` withdrawals. */
  readonly walletChainId: number
  /** Agent-approval domain chain id (spec: 42161; Aster documents 56 for EVM: keep configurable). */
  readonly signatureChainId: number
  /** V3 request-signing domain chain id: 1666 mainnet, 714 testnet. */
  readonly apiChainId: number
  /** The `aster chain` of withdrawal actions ("Mainnet"). */
  readonly asterChain: string
  readonly agentName: string
  readonly agentValidityDays: number
  readonly requestTimeoutMs: number
  readonly agents: AsterAgentResolver
}

export const asterSettings = (
  s: Pick<AsterSettings, "venueId" | "apiUrl" | "decimals" | "asset" | "withdrawChainId" | "agents"> &
    Partial<AsterSettings>,
): AsterSettings => ({
  maxFractionDigits: Math.min(s.decimals, 8),
  walletChainId: s.withdrawChainId,
  signatureChainId: 42161,
  apiChainId: 1666,
  asterChain: "Mainnet",
  agentName: "settler",
  agentValidityDays: 365,
  requestTimeoutMs: 10_000,
  ...s,
})

const PATHS = {
  register: "/fapi/v3/registerAndApproveAgent",
  withdrawInfo: "/fapi/v3/aster/user-withdraw-info",
  withdraw: "/fapi/v3/aster/user-withdraw",
  history: "/fapi/v3/aster/deposit-withdraw-history",
} as const

export const makeAsterAdapter = (settings: AsterSettings): Effect.Effect<VenueAdapter, never, HttpClient.HttpClient> =>
  Effect.gen(function* () {
    const client = yield* HttpClient.HttpClient
    const venue = settings.venueId
    const base = settings.apiUrl.replace(/\/+$/, "")
    const nextNonce = yield* makeMicrosNonceSource
    for (const chainId of [settings.withdrawChainId, settings.walletChainId]) {
      if (ASTER_CHAIN_NAMES[chainId] === undefined) {
        return yield* Effect.dieMessage(`venue ${venue}: Aster has no destination chain name for chain ${chainId}`)
      }
    }
    if (!isValidDecimals(settings.decimals)) {
      return yield* Effect.dieMessage(`venue ${venue}: unsupported decimals ${settings.decimals}`)
    }

    const postForm = (path: string, body: string): Effect.Effect<HttpAnswer> =>
      exchange(
        client,
        HttpClientRequest.post(`${base}${path}`).pipe(
          HttpClientRequest.bodyText(body, "application/x-www-form-urlencoded"),
        ),
        settings.requestTimeoutMs,
      )

    /** A V3 request for `user`, signed by the user's agent over the exact body sent. */
    const signedPost = (path: string, user: Address, params: FormPairs) =>
      Effect.gen(function* () {
        const agent = yield* settings.agents(user)
        const nonce = yield* nextNonce
        const signed = encodeForm(withV3Envelope(params, { nonce, user, signer: agent.address }))
        const signature = yield* agent.signTypedData(messageTypedData(settings.apiChainId, signed))
        return yield* postForm(path, withSignature(signed, signature))
      })

    /** A read: 200 and JSON, else VenueUnavailable. */
    const read = (path: string, user: Address) =>
      Effect.flatMap(signedPost(path, user, []), (answer) => {
        if (answer._tag !== "Answered") return Effect.fail(new VenueUnavailable({ venue, reason: answer.reason }))
        const json = parseJson(answer.body)
        return answer.status === 200 && json !== undefined
          ? Effect.succeed(json)
          : Effect.fail(
              new VenueUnavailable({ venue, reason: `${path} HTTP ${answer.status}: ${answer.body.slice(0, 200)}` }),
            )
      })

    const withdrawInfo = (user: Address, chainId: number) =>
      Effect.flatMap(read(PATHS.withdrawInfo, user), (json) =>
        Either.match(parseWithdrawInfo(json, settings.asset, chainId, settings.decimals), {
          onLeft: (reason) => Effect.fail(new VenueUnavailable({ venue, reason })),
          onRight: Effect.succeed,
        }),
      )

    const withdrawable: VenueAdapter["withdrawable"] = (address) =>
      Effect.gen(function* () {
        const readAtMs = yield* Clock.currentTimeMillis
        const info = yield* withdrawInfo(address, settings.withdrawChainId)
        return { amountBaseUnits: info.perpMaxWithdrawBaseUnits, readAtMs }
      })

    const buildWithdrawal = (request: WithdrawalRequest) =>
      Effect.gen(function* () {
        const invalid = (reason: string) => Effect.fail(new WithdrawalRequestInvalid({ venue, reason }))
        if (!Number.isSafeInteger(request.nowMs) || request.nowMs <= 0) return yield* invalid("nowMs must be positive")
        if (request.to === "signer" && request.destination.toLowerCase() !== request.address.toLowerCase()) {
          return yield* invalid("to: signer pays the account's own address; destination must be the address")
        }
        const chainId = request.to === "signer" ? settings.withdrawChainId : settings.walletChainId
        // The fee is signed too; it is the venue's quote for this chain (exact decimal string, not a float). The
        // venue takes it out of the signed amount: the destination receives amount - fee.
        const info = yield* withdrawInfo(request.address, chainId)
        if (info.withdrawFee === undefined) {
          return yield* invalid(`no ${settings.asset} balance to withdraw on chain ${chainId}`)
        }
        const fee = Either.flatMap(normalizeWholeTokens(info.withdrawFee), (f) =>
          Either.map(fromWholeTokens(f, settings.decimals), (units) => ({ text: f, units })),
        )
        if (Either.isLeft(fee)) return yield* invalid(`venue fee ${info.withdrawFee}: ${fee.left.message}`)
        const signed =
          request.feeOnTop === true
            ? roundUpTo(
                request.amountBaseUnits + fee.right.units,
                10n ** BigInt(settings.decimals - settings.maxFractionDigits),
              )
            : request.amountBaseUnits
        if (signed <= fee.right.units) {
          return yield* invalid(`amount does not exceed the withdrawal fee ${fee.right.text}`)
        }
        const amount = withdrawalAmount(signed, settings.decimals, settings.maxFractionDigits)
        if (Either.isLeft(amount)) return yield* invalid(amount.left.message)
        const nonce = microsFromMillis(request.nowMs)
        const typedData = withdrawActionTypedData({
          chainId,
          destination: request.destination,
          destinationChain: ASTER_CHAIN_NAMES[chainId] ?? "",
          token: settings.asset,
          amount: amount.right,
          fee: fee.right.text,
          nonce,
          asterChain: settings.asterChain,
        })
        return {
          typedData,
          amount: amount.right,
          amountBaseUnits: signed,
          feeBaseUnits: fee.right.units,
          action: "aster.withdraw",
          nonce,
          destination: request.destination.toLowerCase() as Address,
          replayableUntilMs: withdrawalReplayableUntilMs(nonce),
        } satisfies PreparedWithdrawal
      })

    const submitWithdrawal: VenueAdapter["submitWithdrawal"] = (request) =>
      Effect.gen(function* () {
        const parsed = parseWithdrawAction(request.typedData, {
          asset: settings.asset,
          asterChain: settings.asterChain,
          allowedChainIds: [settings.withdrawChainId, settings.walletChainId],
        })
        if (Either.isLeft(parsed)) return yield* Effect.fail(new TypedDataRejected({ venue, reason: parsed.left }))
        if (!/^0x[0-9a-fA-F]{130}$/.test(request.signature)) {
          return yield* Effect.fail(new TypedDataRejected({ venue, reason: "a signature is 65 bytes of hex" }))
        }
        const answer = yield* signedPost(
          PATHS.withdraw,
          request.address,
          withdrawParams(parsed.right, request.signature),
        )
        return classifyAsterAnswer(answer, withdrawAcknowledged)
      }).pipe(Effect.withSpan("Venues.Aster.submitWithdrawal"))

    const findEvidence: VenueAdapter["findEvidence"] = (query) =>
      Effect.gen(function* () {
        const json = yield* read(PATHS.history, query.address)
        const checkedAtMs = yield* Clock.currentTimeMillis
        const match = findWithdrawRecord(json, {
          asset: settings.asset,
          chainIds: [settings.withdrawChainId, settings.walletChainId],
          amountBaseUnits: query.amountBaseUnits,
          decimals: settings.decimals,
          notBeforeMs: Math.floor(query.nonce / 1000) - ASTER_USER_NONCE_SLACK_MS - ASTER_NONCE_WINDOW_MICROS / 1000,
          excludeIds: new Set(query.claimedRefs ?? []),
        })
        if (Either.isLeft(match)) return Evidence.Unavailable({ reason: match.left })
        if (match.right !== undefined) return Evidence.Found({ venueRef: match.right.id, atMs: match.right.time })
        return Evidence.NotFound({ checkedAtMs, replayableUntilMs: withdrawalReplayableUntilMs(query.nonce) })
      }).pipe(
        Effect.catchTags({
          VenueUnavailable: (e) => Effect.succeed(Evidence.Unavailable({ reason: e.reason })),
          AgentUnavailable: (e) => Effect.succeed(Evidence.Unavailable({ reason: `agent: ${e.reason}` })),
        }),
      )

    const agentApproval: AgentApproval = {
      agentApprovalTypedData: ({ user, agent, nowMicros }) => {
        if (!Number.isSafeInteger(nowMicros) || nowMicros <= 0) {
          return Effect.fail(new WithdrawalRequestInvalid({ venue, reason: "nowMicros must be a positive integer" }))
        }
        const fields = {
          user: user.toLowerCase() as Address,
          nonce: nowMicros,
          agentName: settings.agentName,
          agentAddress: agent.toLowerCase() as Address,
          expired: agentExpiryMs(nowMicros, settings.agentValidityDays),
          signatureChainId: settings.signatureChainId,
          canSpotTrade: false,
          canPerpTrade: false,
          canWithdraw: false,
          ipWhitelist: "",
        }
        return Effect.succeed({
          typedData: agentApprovalTypedData(fields),
          message: agentApprovalMessage(fields),
          nonce: nowMicros,
          expiresAtMs: fields.expired,
        })
      },
      registerAgent: (request) =>
        Effect.gen(function* () {
          const parsed = parseAgentApproval(request.typedData, {
            user: request.address,
            signatureChainId: settings.signatureChainId,
          })
          if (Either.isLeft(parsed)) return yield* Effect.fail(new TypedDataRejected({ venue, reason: parsed.left }))
          if (!/^0x[0-9a-fA-F]{130}$/.test(request.signature)) {
            return yield* Effect.fail(new TypedDataRejected({ venue, reason: "a signature is 65 bytes of hex" }))
          }
          const body = withSignature(encodeForm(parsed.right.pairs), request.signature.toLowerCase())
          const answer = yield* postForm(PATHS.register, body)
          return classifyAsterAnswer(answer, successAcknowledged(parsed.right.agent))
        }).pipe(Effect.withSpan("Venues.Aster.registerAgent")),
    }

    return {
      venueId: venue,
      kind: "aster",
      withdrawable,
      buildWithdrawal,
      submitWithdrawal,
      findEvidence,
      agentApproval,
    } satisfies VenueAdapter
  })
