/**
 * Reading Aster's answers (asterdex/api-docs futures v3 "HTTP Return Codes", "Error Codes"; aster-api-website
 * deposit&withdrawal).
 *
 * Errors are `{"code": <negative int>, "msg": "…"}`. 4XX is the sender's fault (nothing executed), 429/418 are
 * rate limits, 5XX is the venue's side and 503 explicitly means "execution status UNKNOWN … could have been a
 * success". Codes -1000 UNKNOWN, -1006 UNEXPECTED_RESP ("Execution status unknown") and -1007 TIMEOUT ("Send status
 * unknown; execution status unknown") are unknown outcomes whatever the HTTP status.
 */
import { Either } from "effect"
import { fromWholeTokens, fromWholeTokensFloor } from "./DecimalAmount.ts"
import { SubmitOutcome } from "./VenueAdapter.ts"
import { type HttpAnswer, isRecord, PRE_EXECUTION_STATUSES, parseJson } from "./VenueHttp.ts"

export const UNKNOWN_OUTCOME_CODES: ReadonlySet<number> = new Set([-1000, -1006, -1007])

const codeOutcome = (code: number, msg: string): SubmitOutcome =>
  UNKNOWN_OUTCOME_CODES.has(code)
    ? SubmitOutcome.Unknown({ reason: `${code} ${msg}` })
    : SubmitOutcome.Refused({ error: msg, code: String(code), sent: true })

const errorShape = (json: unknown): { code: number; msg: string } | undefined =>
  isRecord(json) && typeof json.code === "number" && Number.isInteger(json.code)
    ? { code: json.code, msg: typeof json.msg === "string" ? json.msg : "" }
    : undefined

/**
 * Classifies the answer to a state-changing request. `acknowledged` extracts the venue ref from a success body
 * (undefined: not a success shape).
 */
export const classifyAsterAnswer = (
  answer: HttpAnswer,
  acknowledged: (json: unknown) => string | undefined,
): SubmitOutcome => {
  switch (answer._tag) {
    case "NotSent":
      return SubmitOutcome.Refused({ error: answer.reason, code: "not_sent", sent: false })
    case "NoAnswer":
      return SubmitOutcome.Unknown({ reason: answer.reason })
    case "Answered": {
      const json = parseJson(answer.body)
      const error = errorShape(json)
      if (answer.status === 200) {
        const ref = acknowledged(json)
        if (ref !== undefined) return SubmitOutcome.Acknowledged({ venueRef: ref })
        if (error !== undefined && error.code !== 200) return codeOutcome(error.code, error.msg)
        return SubmitOutcome.Unknown({ reason: `unrecognised HTTP 200 answer: ${answer.body.slice(0, 200)}` })
      }
      if (PRE_EXECUTION_STATUSES.has(answer.status)) {
        return error !== undefined
          ? codeOutcome(error.code, error.msg)
          : SubmitOutcome.Refused({ error: answer.body.slice(0, 500), code: `http_${answer.status}`, sent: true })
      }
      return SubmitOutcome.Unknown({ reason: `HTTP ${answer.status}: ${answer.body.slice(0, 200)}` })
    }
  }
}

/** `{"withdrawId":"…","hash":"0x…"}` → the withdraw id. */
export const withdrawAcknowledged = (json: unknown): string | undefined =>
  isRecord(json) && (typeof json.withdrawId === "string" || typeof json.withdrawId === "number")
    ? String(json.withdrawId)
    : undefined

/** `{"code":200,"msg":"success"}` (agent registration). */
export const successAcknowledged =
  (ref: string) =>
  (json: unknown): string | undefined =>
    isRecord(json) && json.code === 200 ? ref : undefined

export interface ChainWithdrawInfo {
  /** Base units, rounded down; 0 when the venue lists no balance (it lists non-zero balances only). */
  readonly perpMaxWithdrawBaseUnits: bigint
  /** The fee as the venue quotes it (whole tokens), undefined when the asset/chain is not listed. */
  readonly withdrawFee: string | undefined
}

/** `user-withdraw-info` → the perp withdrawable amount and fee of `asset` on `chainId`. */
export const parseWithdrawInfo = (
  json: unknown,
  asset: string,
  chainId: number,
  decimals: number,
): Either.Either<ChainWithdrawInfo, string> => {
  if (!isRecord(json)) return Either.left("user-withdraw-info answer is not an object")
  if (json.balances === undefined || json.balances === null) {
    return Either.right({ perpMaxWithdrawBaseUnits: 0n, withdrawFee: undefined })
  }
  if (!isRecord(json.balances)) return Either.left("user-withdraw-info balances is not an object")
  const byAsset = json.balances[asset]
  const chain =
    isRecord(byAsset) && isRecord(byAsset.chainBalances) ? byAsset.chainBalances[String(chainId)] : undefined
  if (!isRecord(chain)) return Either.right({ perpMaxWithdrawBaseUnits: 0n, withdrawFee: undefined })
  if (typeof chain.perpMaxWithdrawAmount !== "string") return Either.left("perpMaxWithdrawAmount is not a string")
  const amount = fromWholeTokensFloor(chain.perpMaxWithdrawAmount, decimals)
  if (Either.isLeft(amount)) return Either.left(amount.left.message)
  return Either.right({
    perpMaxWithdrawBaseUnits: amount.right,
    withdrawFee: typeof chain.withdrawFee === "string" ? chain.withdrawFee : undefined,
  })
}

export interface HistoryQuery {
  readonly asset: string
  readonly chainIds: ReadonlyArray<number>
  readonly amountBaseUnits: bigint
  readonly decimals: number
  /** Records older than this (ms) cannot be the withdrawal. */
  readonly notBeforeMs: number
  /** Record ids that belong to other withdrawals: skipped. */
  readonly excludeIds?: ReadonlySet<string>
}

/**
 * Finds a withdrawal in `deposit-withdraw-history`. Records carry no nonce or receiver, so the match is asset,
 * chain, exact amount and time; FAILED records moved no funds and are skipped, as are records already attributed
 * to another withdrawal (`excludeIds`): the first of the rest. Safe because one account has at most one withdrawal
 * in flight (WithdrawalDesk), so every other same-amount record is another withdrawal's or the owner's own.
 */
export const findWithdrawRecord = (
  json: unknown,
  q: HistoryQuery,
): Either.Either<{ id: string; time: number } | undefined, string> => {
  if (!Array.isArray(json)) return Either.left("deposit-withdraw-history answer is not an array")
  for (const r of json) {
    if (!isRecord(r) || r.type !== "WITHDRAW" || r.asset !== q.asset || r.state === "FAILED") continue
    if (typeof r.chainId !== "number" || !q.chainIds.includes(r.chainId)) continue
    if (typeof r.time !== "number" || r.time < q.notBeforeMs) continue
    const amount =
      typeof r.amount === "string" ? Either.getOrUndefined(fromWholeTokens(r.amount, q.decimals)) : undefined
    if (amount !== q.amountBaseUnits) continue
    if (typeof r.id !== "string" && typeof r.id !== "number") continue
    if (q.excludeIds?.has(String(r.id)) === true) continue
    return Either.right({ id: String(r.id), time: r.time })
  }
  return Either.right(undefined)
}
