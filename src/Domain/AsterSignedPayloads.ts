/**
 * Validation of Aster typed data handed back for relay: it must be exactly a payload this adapter builds, and the
 * form we send is derived from it field by field (the venue rebuilds the signed data from the form).
 */
import { Either } from "effect"
import type { Address } from "viem"
import { asAddress, asSafeInteger, readEnvelope, sameFields, ZERO_ADDRESS } from "./TypedData.ts"
/** Form fields in the order they are sent (src/Venues/AsterForm.ts encodes them). */
export type FormPairs = ReadonlyArray<readonly [string, string]>

import {
  ACTION_FIELDS,
  AGENT_APPROVAL_KEYS,
  ASTER_CHAIN_NAMES,
  ASTER_SIGN_TRANSACTION,
  ASTER_WITHDRAW_DOMAIN,
  MESSAGE_FIELDS,
} from "./AsterTypedData.ts"

const PLAIN_DECIMAL = /^[0-9]+(\.[0-9]+)?$/

const onlyType = (types: Readonly<Record<string, unknown>>, name: string) =>
  Object.keys(types)
    .filter((k) => k !== "EIP712Domain")
    .join(",") === name

export interface ParsedWithdrawAction {
  readonly chainId: number
  readonly destination: Address
  readonly token: string
  readonly amount: string
  readonly fee: string
  readonly nonce: number
}

/** A withdrawal `Action` for one of `allowedChainIds`, in `asset`, on `asterChain`. */
export const parseWithdrawAction = (
  input: unknown,
  expected: { readonly asset: string; readonly asterChain: string; readonly allowedChainIds: ReadonlyArray<number> },
): Either.Either<ParsedWithdrawAction, string> =>
  Either.flatMap(readEnvelope(input), (env) => {
    if (env.primaryType !== "Action") return Either.left("primaryType must be Action")
    const { domain, message: m } = env
    if (domain.name !== ASTER_WITHDRAW_DOMAIN || domain.version !== "1" || domain.verifyingContract !== ZERO_ADDRESS) {
      return Either.left("domain must be Aster v1 with the zero contract")
    }
    if (!expected.allowedChainIds.includes(domain.chainId)) {
      return Either.left(`domain chainId ${domain.chainId} is not a withdrawal chain of this venue`)
    }
    if (!onlyType(env.types, "Action") || !sameFields(ACTION_FIELDS, env.types.Action)) {
      return Either.left("types must define exactly the venue's Action")
    }
    if (Object.keys(m).length !== ACTION_FIELDS.length) return Either.left("message has unexpected fields")
    const destination = asAddress(m.destination)
    const nonce = asSafeInteger(m.nonce)
    if (m.type !== "Withdraw") return Either.left("message.type must be Withdraw")
    if (destination === undefined) return Either.left("message.destination must be an address")
    if (m["destination Chain"] !== ASTER_CHAIN_NAMES[domain.chainId]) {
      return Either.left("message destination Chain does not name the domain's chain")
    }
    if (m.token !== expected.asset) return Either.left(`message.token must be ${expected.asset}`)
    if (m["aster chain"] !== expected.asterChain)
      return Either.left(`message aster chain must be ${expected.asterChain}`)
    if (typeof m.amount !== "string" || !PLAIN_DECIMAL.test(m.amount)) return Either.left("amount must be a decimal")
    if (typeof m.fee !== "string" || !PLAIN_DECIMAL.test(m.fee)) return Either.left("fee must be a decimal")
    if (nonce === undefined || nonce === 0) return Either.left("message.nonce must be a positive integer")
    return Either.right({ chainId: domain.chainId, destination, token: m.token, amount: m.amount, fee: m.fee, nonce })
  })

/** `user-withdraw` parameters, in the documented order, from a parsed Action and the user's signature. */
export const withdrawParams = (a: ParsedWithdrawAction, userSignature: string): FormPairs => [
  ["chainId", String(a.chainId)],
  ["asset", a.token],
  ["amount", a.amount],
  ["fee", a.fee],
  ["receiver", a.destination],
  ["userNonce", String(a.nonce)],
  ["userSignature", userSignature.toLowerCase()],
]

export interface ParsedAgentApproval {
  /** The approval's pairs in the venue's order; the form body is exactly these plus `signature`. */
  readonly pairs: FormPairs
  readonly user: Address
  readonly agent: Address
  readonly nonce: number
  readonly expiresAtMs: number
}

/** Values that need no URL encoding, so the raw `msg` and the form body carry identical bytes. */
const SAFE_VALUE = /^[A-Za-z0-9_.-]*$/

/**
 * An agent approval for `user` in the configured signing domain, granting nothing: every permission must be
 * "false" and the whitelist empty. We never relay an approval that could trade or withdraw.
 */
export const parseAgentApproval = (
  input: unknown,
  expected: { readonly user: Address; readonly signatureChainId: number },
): Either.Either<ParsedAgentApproval, string> =>
  Either.flatMap(readEnvelope(input), (env) => {
    const { domain } = env
    if (env.primaryType !== "Message") return Either.left("primaryType must be Message")
    if (domain.name !== ASTER_SIGN_TRANSACTION || domain.version !== "1" || domain.verifyingContract !== ZERO_ADDRESS) {
      return Either.left("domain must be AsterSignTransaction v1 with the zero contract")
    }
    if (domain.chainId !== expected.signatureChainId) {
      return Either.left(`domain chainId must be the configured signatureChainId ${expected.signatureChainId}`)
    }
    if (!onlyType(env.types, "Message") || !sameFields(MESSAGE_FIELDS, env.types.Message)) {
      return Either.left("types must define exactly Message {msg}")
    }
    const msg = env.message.msg
    if (typeof msg !== "string" || Object.keys(env.message).length !== 1) return Either.left("message must be {msg}")
    const parts = msg.split("&").map((p) => {
      const i = p.indexOf("=")
      return i < 0 ? ([p, undefined] as const) : ([p.slice(0, i), p.slice(i + 1)] as const)
    })
    if (
      parts.length !== AGENT_APPROVAL_KEYS.length ||
      parts.some(([k, v], i) => k !== AGENT_APPROVAL_KEYS[i] || v === undefined)
    ) {
      return Either.left(`msg must list ${AGENT_APPROVAL_KEYS.join(", ")} in that order`)
    }
    const value = Object.fromEntries(parts) as Record<(typeof AGENT_APPROVAL_KEYS)[number], string>
    if (parts.some(([, v]) => !SAFE_VALUE.test(v ?? ""))) return Either.left("msg values must be plain tokens")
    const user = asAddress(value.user)
    const agent = asAddress(value.agentAddress)
    const nonce = asSafeInteger(value.nonce)
    const expiresAtMs = asSafeInteger(value.expired)
    if (user === undefined || user !== expected.user.toLowerCase()) return Either.left("msg user must be the account")
    if (agent === undefined) return Either.left("msg agentAddress must be an address")
    if (nonce === undefined || expiresAtMs === undefined) return Either.left("msg nonce and expired must be integers")
    if (value.signatureChainId !== String(domain.chainId)) {
      return Either.left("msg signatureChainId must equal the domain chainId")
    }
    if (value.canSpotTrade !== "false" || value.canPerpTrade !== "false" || value.canWithdraw !== "false") {
      return Either.left("every permission must be false")
    }
    if (value.ipWhitelist !== "") return Either.left("ipWhitelist must be empty")
    return Either.right({
      pairs: parts.map(([k, v]) => [k, v ?? ""] as const),
      user,
      agent,
      nonce,
      expiresAtMs,
    })
  })
