// An Aster-compatible venue for devnet (research/venues.md §1, §4.1, §5.3; asterdex/api-docs futures v3,
// aster-api-website futures-v3 deposit&withdrawal):
//
//   POST /fapi/v3/registerAndApproveAgent          public; the user's EIP-712 `Message{msg}` signature authorises
//   POST /fapi/v3/aster/user-withdraw-info          V3 (agent-signed)
//   POST /fapi/v3/aster/user-withdraw               V3 + the user's EIP-712 `Action` signature
//   POST /fapi/v3/aster/deposit-withdraw-history    V3
//   GET  /fapi/v3/balance                           V3
//
// Parameters are form-encoded (the body, or the query string when the body is empty), `signature` last. A V3
// request is signed by a registered, unexpired agent of `user` over the exact parameter string before
// `&signature=`, in domain AsterSignTransaction/1/<API chain id>. Nonces are microseconds, within 10 s of the
// venue clock, never reused, 100 most recent kept per user. Errors are HTTP 400 `{code,msg}`.
//
// One book per user (perps). Deposits come from the MockAsterVault's `Deposit` events in the devnet token.
// Withdrawals pay `amount − fee` to the receiver from the hot wallet (whether Aster deducts the fee from the
// amount or charges it on top is not documented; the simulator deducts it).
import { type Address, type Hex, isAddress, keccak256, recoverTypedDataAddress, stringToHex, zeroAddress } from "viem"
import { mockAsterVaultAbi } from "../../../src/Chain/artifacts/index.ts"
import { formatUnits, parseUnits } from "./SimAmount.ts"
import { type SimChain, startBlockPoller } from "./SimChain.ts"
import { jsonResponse, parseForm, type SimResponse } from "./SimHttp.ts"
import { SimLedger } from "./SimLedger.ts"
import { RecentNonceList } from "./SimNonces.ts"
import type { SimRequest, VenueBehaviour } from "./SimRoute.ts"

export interface AsterSimOptions {
  readonly chain: SimChain
  readonly marginMock: Address
  readonly fromBlock: bigint
  readonly pollIntervalMs: number
  /** The chain withdrawals are paid on (the devnet chain id). */
  readonly chainId: number
  /** The venue's asset name for the devnet token. */
  readonly asset: string
  /** Accepted `signatureChainId` of agent approvals (and their domain chain id). */
  readonly signatureChainIds: ReadonlyArray<number>
  /** V3 request signing domain chain id (1666 mainnet). */
  readonly apiChainId: number
  readonly nonceWindowMicros: number
  readonly nonceListSize: number
  /** The withdrawal fee the venue quotes, base units. */
  readonly withdrawFee: bigint
  readonly now: () => number
  readonly onError: (message: string) => void
}

export interface AgentRecord {
  readonly agent: Address
  readonly name: string
  readonly expiresAtMs: number
  readonly canSpotTrade: boolean
  readonly canPerpTrade: boolean
  readonly canWithdraw: boolean
  readonly ipWhitelist: string
  readonly registeredAtMs: number
}

interface HistoryRecord {
  readonly id: string
  readonly user: string
  readonly type: "DEPOSIT" | "WITHDRAW"
  readonly amount: string
  state: "PROCESSING" | "SUCCESS" | "FAILED"
  txHash: string
  readonly time: number
}

const CHAIN_NAMES: Readonly<Record<number, string>> = { 1: "ETH", 56: "BSC", 42161: "Arbitrum" }

const APPROVAL_KEYS = [
  "user",
  "nonce",
  "agentName",
  "agentAddress",
  "expired",
  "signatureChainId",
  "canSpotTrade",
  "canPerpTrade",
  "canWithdraw",
  "ipWhitelist",
] as const

const fail = (code: number, msg: string): SimResponse => jsonResponse(400, { code, msg })
const BAD_SIGNATURE = () => fail(-1022, "Signature for this request is not valid.")
const missing = (name: string) =>
  fail(-1102, `Mandatory parameter '${name}' was not sent, was empty/null, or malformed.`)

const messageDomain = (chainId: number) => ({
  name: "AsterSignTransaction",
  version: "1",
  chainId: BigInt(chainId),
  verifyingContract: zeroAddress,
})

/** Recovers the signer of `Message{msg}` in `AsterSignTransaction` for `chainId`; undefined if unrecoverable. */
const recoverMessageSigner = async (chainId: number, msg: string, signature: string): Promise<string | undefined> => {
  if (!/^0x[0-9a-fA-F]{130}$/.test(signature)) return undefined
  try {
    const signer = await recoverTypedDataAddress({
      domain: messageDomain(chainId),
      types: { Message: [{ name: "msg", type: "string" }] },
      primaryType: "Message",
      message: { msg },
      signature: signature as Hex,
    })
    return signer.toLowerCase()
  } catch {
    return undefined
  }
}

export const makeAsterSim = (
  o: AsterSimOptions,
): VenueBehaviour & {
  readonly agents: (user: Address) => ReadonlyArray<AgentRecord>
} => {
  const { decimals } = o.chain
  const ledger = new SimLedger()
  const nonces = new RecentNonceList(o.nonceListSize)
  const userNonces = new Set<string>()
  const agentsByUser = new Map<string, Array<AgentRecord>>()
  const userByAgent = new Map<string, string>()
  const history: Array<HistoryRecord> = []
  const nowMicros = () => BigInt(o.now()) * 1000n

  /** The parameters and the exact signed string (everything before `&signature=`). */
  const readParams = (request: SimRequest) => {
    const raw = request.body !== "" ? request.body : request.query
    const params = parseForm(raw)
    if (params === undefined) return undefined
    const i = raw.lastIndexOf("&signature=")
    const last = params[params.length - 1]
    const signed = i >= 0 && last?.key === "signature" ? raw.slice(0, i) : undefined
    const get = (key: string) => params.find((p) => p.key === key)?.value
    return { params, signed, get, signature: last?.key === "signature" ? last.value : undefined }
  }

  const checkNonce = (user: string, nonceText: string | undefined): SimResponse | undefined => {
    if (nonceText === undefined || !/^[0-9]{1,19}$/.test(nonceText)) return missing("nonce")
    const nonce = BigInt(nonceText)
    const now = nowMicros()
    const window = BigInt(o.nonceWindowMicros)
    if (nonce < now - window || nonce > now + window) return fail(-4225, "Nonce Expired")
    const verdict = nonces.use(user, nonce)
    if (!verdict.ok) return fail(-4225, verdict.reason === "duplicate" ? "Nonce Duplicated" : "Nonce Expired")
    return undefined
  }

  /** V3 authentication: agent signature over the exact string, registered live agent, fresh nonce. */
  const authenticate = async (request: SimRequest) => {
    const p = readParams(request)
    if (p === undefined) return { error: fail(-1100, "Illegal characters found in a parameter.") }
    for (const name of ["nonce", "user", "signer", "signature"])
      if (p.get(name) === undefined) return { error: missing(name) }
    if (p.signed === undefined || p.signature === undefined) return { error: BAD_SIGNATURE() }
    const user = (p.get("user") ?? "").toLowerCase()
    const signer = (p.get("signer") ?? "").toLowerCase()
    const recovered = await recoverMessageSigner(o.apiChainId, p.signed, p.signature)
    if (recovered === undefined || recovered !== signer) return { error: BAD_SIGNATURE() }
    const live = (agentsByUser.get(user) ?? []).some((a) => a.agent === signer && a.expiresAtMs > o.now())
    if (!live) return { error: fail(-2015, "Invalid API-key, IP, or permissions for action.") }
    const nonceError = checkNonce(user, p.get("nonce"))
    if (nonceError !== undefined) return { error: nonceError }
    return { user, get: p.get }
  }

  const register = async (request: SimRequest): Promise<SimResponse> => {
    const p = readParams(request)
    if (p === undefined) return fail(-1100, "Illegal characters found in a parameter.")
    const value = (k: (typeof APPROVAL_KEYS)[number]) => (k === "ipWhitelist" ? (p.get(k) ?? "") : p.get(k))
    for (const k of APPROVAL_KEYS) if (value(k) === undefined) return missing(k)
    if (p.signature === undefined) return missing("signature")
    const user = (value("user") ?? "").toLowerCase()
    const agent = (value("agentAddress") ?? "").toLowerCase()
    const chainId = Number(value("signatureChainId"))
    if (!isAddress(user, { strict: false }) || !isAddress(agent, { strict: false })) return missing("user")
    if (!o.signatureChainIds.includes(chainId))
      return fail(-1102, `signatureChainId ${value("signatureChainId")} is not supported.`)
    const flags = ["canSpotTrade", "canPerpTrade", "canWithdraw"] as const
    if (flags.some((k) => value(k) !== "true" && value(k) !== "false"))
      return fail(-1102, "Permissions must be true or false.")
    // The venue rebuilds the message from the submitted values, in its fixed order, raw.
    const msg = APPROVAL_KEYS.map((k) => `${k}=${value(k)}`).join("&")
    const recovered = await recoverMessageSigner(chainId, msg, p.signature)
    if (recovered === undefined || recovered !== user) return BAD_SIGNATURE()
    const nonceError = checkNonce(user, value("nonce"))
    if (nonceError !== undefined) return nonceError
    const expiresAtMs = Number(value("expired"))
    if (!Number.isSafeInteger(expiresAtMs) || expiresAtMs <= o.now())
      return fail(-1102, "Parameter 'expired' is in the past.")
    if (value("canWithdraw") === "true" && value("ipWhitelist") === "") {
      return fail(-1102, "Mandatory parameter 'ipWhitelist' was not sent, was empty/null, or malformed.")
    }
    const owner = userByAgent.get(agent)
    if (owner !== undefined && owner !== user) return fail(-1109, "Agent already belongs to another account.")
    const record: AgentRecord = {
      agent: agent as Address,
      name: value("agentName") ?? "",
      expiresAtMs,
      canSpotTrade: value("canSpotTrade") === "true",
      canPerpTrade: value("canPerpTrade") === "true",
      canWithdraw: value("canWithdraw") === "true",
      ipWhitelist: value("ipWhitelist") ?? "",
      registeredAtMs: o.now(),
    }
    agentsByUser.set(user, [...(agentsByUser.get(user) ?? []).filter((a) => a.agent !== agent), record])
    userByAgent.set(agent, user)
    return jsonResponse(200, { code: 200, msg: "success" })
  }

  const fixed8 = (units: bigint) => formatUnits(units, decimals, 8)

  const withdrawInfo = async (request: SimRequest): Promise<SimResponse> => {
    const auth = await authenticate(request)
    if ("error" in auth) return auth.error as SimResponse
    const perp = ledger.balance(auth.user)
    const fee = formatUnits(o.withdrawFee, decimals)
    const balances =
      perp > 0n
        ? {
            [o.asset]: {
              currency: o.asset,
              spotTotalWithdrawAmount: "0",
              perpTotalWithdrawAmount: fixed8(perp),
              dailyLimit: "1000000",
              chainBalances: {
                [String(o.chainId)]: {
                  chainId: o.chainId,
                  spotMaxWithdrawAmount: "0",
                  perpMaxWithdrawAmount: fixed8(perp),
                  chainLimit: "1000000",
                  withdrawFee: fee,
                },
              },
            },
          }
        : {}
    return jsonResponse(200, {
      userDailyLimit: "1000000",
      userRemainingDailyLimit: "1000000",
      totalDailyLimit: "100000000",
      totalRemainingDailyLimit: "100000000",
      balances,
    })
  }

  const balance = async (request: SimRequest): Promise<SimResponse> => {
    const auth = await authenticate(request)
    if ("error" in auth) return auth.error as SimResponse
    const perp = fixed8(ledger.balance(auth.user))
    return jsonResponse(200, [
      {
        accountAlias: "SgsR",
        asset: o.asset,
        balance: perp,
        crossWalletBalance: perp,
        crossUnPnl: "0.00000000",
        availableBalance: perp,
        maxWithdrawAmount: perp,
        marginAvailable: true,
        updateTime: o.now(),
      },
    ])
  }

  const withdraw = async (request: SimRequest): Promise<SimResponse> => {
    const auth = await authenticate(request)
    if ("error" in auth) return auth.error as SimResponse
    const { user, get } = auth
    for (const name of ["chainId", "asset", "amount", "fee", "receiver", "userNonce", "userSignature"]) {
      if (get(name) === undefined) return missing(name)
    }
    const chainId = Number(get("chainId"))
    const chainName = CHAIN_NAMES[chainId]
    if (chainId !== o.chainId || chainName === undefined)
      return fail(-1102, `chainId ${get("chainId")} is not supported.`)
    if (get("asset") !== o.asset) return fail(-1108, "Invalid asset.")
    const receiver = get("receiver") ?? ""
    const amountText = get("amount") ?? ""
    const feeText = get("fee") ?? ""
    const userNonceText = get("userNonce") ?? ""
    if (!isAddress(receiver, { strict: false })) return missing("receiver")
    if (!/^[0-9]{1,19}$/.test(userNonceText)) return missing("userNonce")
    // The venue rebuilds the Action from the parameters (amount and fee strings as sent) and recovers the user.
    let recovered: string | undefined
    try {
      recovered = (
        await recoverTypedDataAddress({
          domain: { name: "Aster", version: "1", chainId: BigInt(chainId), verifyingContract: zeroAddress },
          types: {
            Action: [
              { name: "type", type: "string" },
              { name: "destination", type: "address" },
              { name: "destination Chain", type: "string" },
              { name: "token", type: "string" },
              { name: "amount", type: "string" },
              { name: "fee", type: "string" },
              { name: "nonce", type: "uint256" },
              { name: "aster chain", type: "string" },
            ],
          },
          primaryType: "Action",
          message: {
            type: "Withdraw",
            destination: receiver as Address,
            "destination Chain": chainName,
            token: o.asset,
            amount: amountText,
            fee: feeText,
            nonce: BigInt(userNonceText),
            "aster chain": "Mainnet",
          },
          signature: (get("userSignature") ?? "") as Hex,
        })
      ).toLowerCase()
    } catch {
      recovered = undefined
    }
    if (recovered !== user) return BAD_SIGNATURE()
    const userNonce = BigInt(userNonceText)
    const requestNonce = BigInt(get("nonce") ?? "0")
    const hourMicros = 3_600_000_000n
    if (userNonce < requestNonce - hourMicros || userNonce > requestNonce + hourMicros) {
      return fail(-4225, "Nonce Expired")
    }
    if (userNonces.has(`${user}:${userNonce}`)) return fail(-4225, "Nonce Duplicated")
    const amount = parseUnits(amountText, decimals)
    const fee = parseUnits(feeText, decimals)
    if (amount === undefined || fee === undefined || amount === 0n) {
      return fail(-1111, "Precision is over the maximum defined for this asset.")
    }
    if (fee < o.withdrawFee) return fail(-4000, "Withdraw fee is lower than the quoted fee.")
    if (amount <= fee) return fail(-4000, "Withdraw amount must exceed the fee.")
    if (!ledger.debit(user, amount)) return fail(-2019, "Margin is insufficient.")
    userNonces.add(`${user}:${userNonce}`)
    const record: HistoryRecord = {
      id: String(1_000_000 + history.length),
      user,
      type: "WITHDRAW",
      amount: formatUnits(amount, decimals),
      state: "PROCESSING",
      txHash: "",
      time: o.now(),
    }
    history.push(record)
    o.chain.pay(receiver as Address, amount - fee).then(
      (hash) => {
        record.state = "SUCCESS"
        record.txHash = hash
      },
      () => {
        record.state = "FAILED"
      },
    )
    const digest = keccak256(stringToHex(`${user}:${userNonceText}:${get("userSignature")}`))
    return jsonResponse(200, { withdrawId: record.id, hash: digest })
  }

  const historyRoute = async (request: SimRequest): Promise<SimResponse> => {
    const auth = await authenticate(request)
    if ("error" in auth) return auth.error as SimResponse
    return jsonResponse(
      200,
      history
        .filter((r) => r.user === auth.user)
        .map((r) => ({
          id: r.id,
          type: r.type,
          asset: o.asset,
          amount: r.amount,
          state: r.state,
          txHash: r.txHash,
          time: r.time,
          chainId: o.chainId,
          accountType: "perp",
        })),
    )
  }

  const poller = startBlockPoller(
    o.chain.client,
    o.fromBlock,
    o.pollIntervalMs,
    async (fromBlock, toBlock) => {
      const logs = await o.chain.client.getContractEvents({
        address: o.marginMock,
        abi: mockAsterVaultAbi,
        eventName: "Deposit",
        fromBlock,
        toBlock,
      })
      for (const log of logs) {
        const { account, currency, amount } = log.args
        if (account === undefined || currency === undefined || amount === undefined) continue
        if (currency.toLowerCase() !== o.chain.token.toLowerCase()) continue
        ledger.credit(account, amount)
        history.push({
          id: String(1_000_000 + history.length),
          user: account.toLowerCase(),
          type: "DEPOSIT",
          amount: formatUnits(amount, decimals),
          state: "SUCCESS",
          txHash: log.transactionHash ?? "",
          time: o.now(),
        })
      }
    },
    o.onError,
  )

  const routes: Record<
    string,
    { kind: "write" | "read"; method: string; handle: (r: SimRequest) => Promise<SimResponse> }
  > = {
    "/fapi/v3/registerAndApproveAgent": { kind: "write", method: "POST", handle: register },
    "/fapi/v3/aster/user-withdraw": { kind: "write", method: "POST", handle: withdraw },
    "/fapi/v3/aster/user-withdraw-info": { kind: "read", method: "POST", handle: withdrawInfo },
    "/fapi/v3/aster/deposit-withdraw-history": { kind: "read", method: "POST", handle: historyRoute },
    "/fapi/v3/balance": { kind: "read", method: "GET", handle: balance },
  }

  return {
    route: (method, path) => {
      const r = routes[path]
      return r !== undefined && r.method === method ? { kind: r.kind, handle: r.handle } : undefined
    },
    refusal: (message) => fail(-1020, message),
    unknownError: () =>
      jsonResponse(503, {
        code: -1007,
        msg: "Timeout waiting for response from backend server. Send status unknown; execution status unknown.",
      }),
    credit: (user, amount) => ledger.credit(user, amount),
    balance: (user) => ledger.balance(user),
    agents: (user) => agentsByUser.get(user.toLowerCase()) ?? [],
    snapshot: () => ({
      kind: "aster",
      balances: ledger.snapshot(),
      agents: Object.fromEntries(agentsByUser),
      history: history.map((r) => ({ ...r })),
    }),
    syncDeposits: poller.sync,
    stop: poller.stop,
  }
}
