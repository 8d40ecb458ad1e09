/**
 * Hyperliquid `POST /exchange` for user-signed actions (research/venues.md §3.2): turning a signed typed data
 * object back into the exact request, and classifying the answer.
 *
 * The venue rebuilds the typed data from the action's fields and recovers the signer, so every signed field is
 * sent verbatim from the typed data (the amount string above all), `signatureChainId` is the domain chain id in
 * hex, and the outer `nonce` equals `time`/`nonce` of the message.
 */
import { Either } from "effect"
import type { Hex } from "viem"
import {
  asAddress,
  asSafeInteger,
  readEnvelope,
  sameFields,
  type TypedDataObject,
  ZERO_ADDRESS,
} from "../Domain/TypedData.ts"
import {
  ACTION_TYPE_BY_PRIMARY_TYPE,
  FIELDS_BY_PRIMARY_TYPE,
  HYPERLIQUID_DOMAIN_NAME,
  HYPERLIQUID_DOMAIN_VERSION,
  type HyperliquidChain,
  SEND_ASSET,
  signatureChainIdHex,
  USD_SEND,
  WITHDRAW,
} from "./HyperliquidTypedData.ts"
import { SubmitOutcome } from "./VenueAdapter.ts"
import { type HttpAnswer, isRecord, PRE_EXECUTION_STATUSES, parseJson } from "./VenueHttp.ts"

/** The transfer types this service relays (approveAgent is built for completeness, never relayed). */
export type RelayedPrimaryType = typeof USD_SEND | typeof WITHDRAW | typeof SEND_ASSET

export interface ParsedHyperliquidTransfer {
  readonly typedData: TypedDataObject<RelayedPrimaryType>
  /** The `action` object, keys in the SDK's order. */
  readonly action: Readonly<Record<string, string | number>>
  readonly nonce: number
}

const STRING_FIELDS: Readonly<Record<RelayedPrimaryType, ReadonlyArray<string>>> = {
  [USD_SEND]: ["hyperliquidChain", "destination", "amount"],
  [WITHDRAW]: ["hyperliquidChain", "destination", "amount"],
  [SEND_ASSET]: ["hyperliquidChain", "destination", "sourceDex", "destinationDex", "token", "amount", "fromSubAccount"],
}

/**
 * Validates typed data handed back for relay: one of our three transfer types, our domain, our environment,
 * exact field lists, well-typed values. Values are *not* rewritten: the signature covers them as they are.
 */
export const parseHyperliquidTransfer = (
  input: unknown,
  expectedChain: HyperliquidChain,
): Either.Either<ParsedHyperliquidTransfer, string> =>
  Either.flatMap(readEnvelope(input), (env) => {
    const primaryType = env.primaryType
    if (primaryType !== USD_SEND && primaryType !== WITHDRAW && primaryType !== SEND_ASSET) {
      return Either.left(`primaryType ${primaryType} is not a Hyperliquid transfer`)
    }
    const { domain } = env
    if (domain.name !== HYPERLIQUID_DOMAIN_NAME || domain.version !== HYPERLIQUID_DOMAIN_VERSION) {
      return Either.left("domain is not HyperliquidSignTransaction v1")
    }
    if (domain.verifyingContract !== ZERO_ADDRESS) return Either.left("domain verifyingContract must be zero")
    const fields = FIELDS_BY_PRIMARY_TYPE[primaryType]
    const typeNames = Object.keys(env.types).filter((k) => k !== "EIP712Domain")
    if (typeNames.length !== 1 || !sameFields(fields, env.types[primaryType])) {
      return Either.left(`types must define exactly ${primaryType} with the venue's fields`)
    }
    const messageKeys = Object.keys(env.message)
    if (messageKeys.length !== fields.length || !fields.every((f) => messageKeys.includes(f.name))) {
      return Either.left(`message must have exactly ${fields.map((f) => f.name).join(", ")}`)
    }
    const values: Record<string, string | number> = {}
    for (const name of STRING_FIELDS[primaryType]) {
      const value = env.message[name]
      if (typeof value !== "string") return Either.left(`message.${name} must be a string`)
      values[name] = value
    }
    if (values.hyperliquidChain !== expectedChain) {
      return Either.left(`hyperliquidChain must be ${expectedChain}`)
    }
    if (asAddress(values.destination) !== values.destination) {
      return Either.left("destination must be a lowercase address")
    }
    // A plain decimal, canonical or not: the venue hashes it as sent. (We only ever build canonical ones.)
    if (!/^[0-9]+(\.[0-9]+)?$/.test(String(values.amount))) return Either.left("amount must be a plain decimal")
    const nonceField = primaryType === SEND_ASSET ? "nonce" : "time"
    const nonce = asSafeInteger(env.message[nonceField])
    if (nonce === undefined || nonce === 0) return Either.left(`message.${nonceField} must be a positive integer`)
    values[nonceField] = nonce
    const message = Object.fromEntries(fields.map((f) => [f.name, values[f.name] as string | number]))
    const typedData: TypedDataObject<RelayedPrimaryType> = {
      types: { [primaryType]: fields },
      primaryType,
      domain,
      message,
    }
    const action = {
      type: ACTION_TYPE_BY_PRIMARY_TYPE[primaryType],
      signatureChainId: signatureChainIdHex(domain.chainId),
      ...message,
    }
    return Either.right({ typedData, action, nonce })
  })

/** Splits r ‖ s ‖ v into the JSON signature object; v as 27/28 (wallets may emit 0/1). */
export const signatureObject = (signature: Hex): Either.Either<{ r: Hex; s: Hex; v: 27 | 28 }, string> => {
  if (!/^0x[0-9a-fA-F]{130}$/.test(signature)) return Either.left("a signature is 65 bytes of hex")
  const raw = Number.parseInt(signature.slice(130, 132), 16)
  const v = raw === 0 || raw === 27 ? 27 : raw === 1 || raw === 28 ? 28 : undefined
  if (v === undefined) return Either.left(`signature v must be 0, 1, 27 or 28 (got ${raw})`)
  const lower = signature.toLowerCase()
  return Either.right({ r: `0x${lower.slice(2, 66)}` as Hex, s: `0x${lower.slice(66, 130)}` as Hex, v })
}

/** The `/exchange` body. `vaultAddress`/`expiresAfter` are omitted: user-signed actions do not support them. */
export const exchangeBody = (parsed: ParsedHyperliquidTransfer, signature: { r: Hex; s: Hex; v: 27 | 28 }) => ({
  action: parsed.action,
  nonce: parsed.nonce,
  signature,
})

/**
 * Classifies an `/exchange` answer. Hyperliquid answers HTTP 200 for both `{"status":"ok",…}` and
 * `{"status":"err","response":"<reason>"}` (a refusal); a malformed request gets a 4xx before execution.
 * Everything else (5xx, unreadable 200, no answer) may hide an applied transfer and is Unknown.
 */
export const classifyExchangeAnswer = (answer: HttpAnswer, venueRef: string): SubmitOutcome => {
  switch (answer._tag) {
    case "NotSent":
      return SubmitOutcome.Refused({ error: answer.reason, code: "not_sent", sent: false })
    case "NoAnswer":
      return SubmitOutcome.Unknown({ reason: answer.reason })
    case "Answered": {
      const { status, body } = answer
      const json = parseJson(body)
      if (status === 200 && isRecord(json)) {
        if (json.status === "ok") {
          const nested = nestedError(json.response)
          return nested === undefined
            ? SubmitOutcome.Acknowledged({ venueRef })
            : SubmitOutcome.Refused({ error: nested, code: "err", sent: true })
        }
        if (json.status === "err" && typeof json.response === "string") {
          return SubmitOutcome.Refused({ error: json.response, code: "err", sent: true })
        }
      }
      if (PRE_EXECUTION_STATUSES.has(status)) {
        return SubmitOutcome.Refused({ error: body.slice(0, 500), code: `http_${status}`, sent: true })
      }
      return SubmitOutcome.Unknown({ reason: `HTTP ${status}: ${body.slice(0, 200)}` })
    }
  }
}

/** nktkas `assertSuccessResponse` shapes: `{type, data:{statuses:[{error}]}}` and `{data:{status:{error}}}`. */
const nestedError = (response: unknown): string | undefined => {
  if (!isRecord(response) || !isRecord(response.data)) return undefined
  const { statuses, status } = response.data
  if (Array.isArray(statuses)) {
    for (const s of statuses) if (isRecord(s) && typeof s.error === "string") return s.error
  }
  if (isRecord(status) && typeof status.error === "string") return status.error
  return undefined
}
