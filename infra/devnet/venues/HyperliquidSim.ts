// A Hyperliquid-compatible venue for devnet: `POST /exchange` (usdSend, withdraw3, sendAsset) and `POST /info`
// (clearinghouseState, spotClearinghouseState, userNonFundingLedgerUpdates), as research/venues.md §3 and §5.1
// describe them.
//
// Verification is what the real venue does: rebuild the typed data from the action's fields (amount string as
// sent, domain chain id from `signatureChainId`), recover the signer, and judge that signer (existence, nonce).
// A signature over other bytes therefore recovers a stranger: "User or API Wallet … does not exist".
//
// Perp USDC lives in book "", spot in "spot". Deposits come from the MockCoreDepositWallet's `CoreDeposit` events
// (dex 0 → perp, uint32 max → spot). Withdrawals are paid on the devnet chain from the hot wallet: withdraw3 to its
// destination, sendAsset to the USDC system address to the signer itself (Core → EVM).
import { type Address, type Hex, isAddress, keccak256, recoverTypedDataAddress, stringToHex, zeroAddress } from "viem"
import { mockCoreDepositWalletAbi } from "../../../src/Chain/artifacts/index.ts"
import { formatUnits, parseUnits } from "./SimAmount.ts"
import { type SimChain, startBlockPoller } from "./SimChain.ts"
import { jsonResponse, type SimResponse, textResponse } from "./SimHttp.ts"
import { SimLedger } from "./SimLedger.ts"
import { HighestNonceSet } from "./SimNonces.ts"
import type { SimRequest, VenueBehaviour } from "./SimRoute.ts"

export interface HyperliquidSimOptions {
  readonly chain: SimChain
  readonly marginMock: Address
  readonly fromBlock: bigint
  readonly pollIntervalMs: number
  readonly hyperliquidChain: "Mainnet" | "Testnet"
  /** The `sendAsset` token string of USDC. */
  readonly usdcToken: string
  /** Highest nonces kept per signer (docs: 100). */
  readonly nonceSetSize: number
  /** Accepted nonce window around the venue clock: (T − pastMs, T + futureMs). */
  readonly nonceWindow: { readonly pastMs: number; readonly futureMs: number }
  /** withdraw3 fee in token base units, deducted from the amount paid out (the real venue charges $1). */
  readonly withdrawFee: bigint
  readonly now: () => number
  readonly onError: (message: string) => void
}

const USDC_SYSTEM_ADDRESS = "0x2000000000000000000000000000000000000000"
const PERP = ""
const SPOT = "spot"
const DESERIALIZE_ERROR = "Failed to deserialize the JSON body into the target type"

/** The signed field lists, written out here independently of src/Venues (see SimAmount.ts for why). */
const SIGNED = {
  usdSend: {
    primaryType: "HyperliquidTransaction:UsdSend",
    fields: ["hyperliquidChain:string", "destination:string", "amount:string", "time:uint64"],
  },
  withdraw3: {
    primaryType: "HyperliquidTransaction:Withdraw",
    fields: ["hyperliquidChain:string", "destination:string", "amount:string", "time:uint64"],
  },
  sendAsset: {
    primaryType: "HyperliquidTransaction:SendAsset",
    fields: [
      "hyperliquidChain:string",
      "destination:string",
      "sourceDex:string",
      "destinationDex:string",
      "token:string",
      "amount:string",
      "fromSubAccount:string",
      "nonce:uint64",
    ],
  },
} as const

type ActionType = keyof typeof SIGNED

interface LedgerUpdate {
  readonly users: ReadonlyArray<string>
  readonly time: number
  readonly hash: Hex
  readonly delta: Readonly<Record<string, unknown>>
}

const err = (response: string): SimResponse => jsonResponse(200, { status: "err", response })
const ok = (): SimResponse => jsonResponse(200, { status: "ok", response: { type: "default" } })

const isRecord = (x: unknown): x is Record<string, unknown> => typeof x === "object" && x !== null && !Array.isArray(x)

export const makeHyperliquidSim = (o: HyperliquidSimOptions): VenueBehaviour => {
  const { decimals } = o.chain
  const ledger = new SimLedger()
  const nonces = new HighestNonceSet(o.nonceSetSize)
  const updates: Array<LedgerUpdate> = []
  const fmt = (units: bigint) => formatUnits(units, decimals, 1)

  const record = (users: ReadonlyArray<string>, hash: Hex, delta: Record<string, unknown>) =>
    updates.push({ users: users.map((u) => u.toLowerCase()), time: o.now(), hash, delta })

  const payout = (to: Address, amount: bigint) => {
    if (amount > 0n) void o.chain.pay(to, amount).catch(() => undefined)
  }

  /** Parses and verifies one `/exchange` request; returns the venue's answer. */
  const exchange = async (request: SimRequest): Promise<SimResponse> => {
    let body: unknown
    try {
      body = JSON.parse(request.body)
    } catch {
      return textResponse(422, DESERIALIZE_ERROR)
    }
    if (!isRecord(body) || !isRecord(body.action) || !isRecord(body.signature))
      return textResponse(422, DESERIALIZE_ERROR)
    const { action, signature } = body
    const type = action.type
    if (typeof type !== "string" || !(type in SIGNED)) return textResponse(422, DESERIALIZE_ERROR)
    const spec = SIGNED[type as ActionType]
    // Shapes: every signed field present with its JSON type, signatureChainId hex, signature {r,s,v∈{27,28}}.
    const message: Record<string, string | bigint> = {}
    for (const f of spec.fields) {
      const [name, kind] = f.split(":") as [string, string]
      const value = action[name]
      if (kind === "uint64") {
        if (typeof value !== "number" || !Number.isSafeInteger(value) || value < 0)
          return textResponse(422, DESERIALIZE_ERROR)
        message[name] = BigInt(value)
      } else {
        if (typeof value !== "string") return textResponse(422, DESERIALIZE_ERROR)
        message[name] = value
      }
    }
    const chainIdHex = action.signatureChainId
    const outerNonce = body.nonce
    const { r, s, v } = signature
    if (typeof chainIdHex !== "string" || !/^0x[0-9a-fA-F]{1,16}$/.test(chainIdHex))
      return textResponse(422, DESERIALIZE_ERROR)
    if (typeof outerNonce !== "number" || !Number.isSafeInteger(outerNonce)) return textResponse(422, DESERIALIZE_ERROR)
    if (
      typeof r !== "string" ||
      typeof s !== "string" ||
      !/^0x[0-9a-fA-F]{64}$/.test(r) ||
      !/^0x[0-9a-fA-F]{64}$/.test(s)
    ) {
      return textResponse(422, DESERIALIZE_ERROR)
    }
    if (v !== 27 && v !== 28) return textResponse(422, DESERIALIZE_ERROR)

    // The venue reads `destination` as an address and hashes its lowercase form: a mixed-case signature fails
    // ("mixed-case addresses" are among the signing errors the docs list). The amount is hashed as sent.
    if (typeof message.destination === "string") message.destination = message.destination.toLowerCase()
    if (message.hyperliquidChain !== o.hyperliquidChain)
      return err(`Invalid hyperliquidChain: expected ${o.hyperliquidChain}`)
    const signedNonce = type === "sendAsset" ? message.nonce : message.time
    if (signedNonce !== BigInt(outerNonce))
      return err("Invalid nonce: the action's time/nonce must equal the request nonce")

    let signer: string
    try {
      signer = (
        await recoverTypedDataAddress({
          domain: {
            name: "HyperliquidSignTransaction",
            version: "1",
            chainId: BigInt(chainIdHex),
            verifyingContract: zeroAddress,
          },
          types: {
            [spec.primaryType]: spec.fields.map((f) => {
              const [name, t] = f.split(":") as [string, string]
              return { name, type: t }
            }),
          },
          primaryType: spec.primaryType,
          message,
          signature: { r: r as Hex, s: s as Hex, v: BigInt(v) },
        })
      ).toLowerCase()
    } catch {
      return err("Unable to recover signer.")
    }
    if (!ledger.known(signer)) return err(`L1 error: User or API Wallet ${signer} does not exist.`)

    const nonce = BigInt(outerNonce)
    const now = o.now()
    if (!(outerNonce > now - o.nonceWindow.pastMs && outerNonce < now + o.nonceWindow.futureMs)) {
      return err(`Invalid nonce: nonce ${outerNonce} is outside the accepted time window around ${now}`)
    }
    const verdict = nonces.use(signer, nonce)
    if (!verdict.ok) {
      return err(
        verdict.reason === "duplicate"
          ? `Invalid nonce: duplicate nonce ${outerNonce}`
          : `Invalid nonce: nonce too low ${outerNonce} < ${verdict.least}`,
      )
    }

    const amountText = String(message.amount)
    const amount = parseUnits(amountText, decimals)
    if (amount === undefined || amount === 0n) return err(`Invalid amount ${amountText}`)
    const destination = String(message.destination)
    if (!isAddress(destination, { strict: false })) return err("Invalid destination address")
    const hash = keccak256(stringToHex(`${signer}:${outerNonce}:${type}`))

    if (type === "withdraw3") {
      if (!ledger.debit(signer, amount, PERP)) return err("Insufficient balance for withdrawal.")
      // The fee never exceeds the amount (bigint: no Math.min).
      let fee = o.withdrawFee
      if (amount < fee) fee = amount
      record([signer], hash, { type: "withdraw", usdc: amountText, nonce: outerNonce, fee: fmt(fee) })
      payout(destination as Address, amount - fee)
      return ok()
    }
    if (type === "usdSend") {
      if (!ledger.debit(signer, amount, PERP)) return err("Insufficient balance for token transfer.")
      ledger.credit(destination, amount, PERP)
      record([signer, destination], hash, {
        type: "internalTransfer",
        usdc: amountText,
        user: signer,
        destination: destination.toLowerCase(),
        fee: "0.0",
      })
      return ok()
    }
    // sendAsset
    const sourceDex = String(message.sourceDex)
    const destinationDex = String(message.destinationDex)
    if (String(message.token) !== o.usdcToken) return err(`Invalid token ${String(message.token)}`)
    if (String(message.fromSubAccount) !== "") return err("Sub-accounts are not simulated")
    if (![PERP, SPOT].includes(sourceDex) || ![PERP, SPOT].includes(destinationDex)) return err("Invalid dex")
    if (!ledger.debit(signer, amount, sourceDex)) return err("Insufficient balance for token transfer.")
    record([signer, destination], hash, {
      type: "send",
      user: signer,
      destination: destination.toLowerCase(),
      sourceDex,
      destinationDex,
      token: "USDC",
      amount: amountText,
      usdcValue: amountText,
      fee: "0.0",
      nativeTokenFee: "0.0",
      nonce: outerNonce,
      feeToken: "",
    })
    if (destination.toLowerCase() === USDC_SYSTEM_ADDRESS && destinationDex === SPOT) {
      // Core → HyperEVM: the system transfer credits the sender's own EVM address.
      payout(signer as Address, amount)
    } else {
      ledger.credit(destination, amount, destinationDex)
    }
    return ok()
  }

  const info = async (request: SimRequest): Promise<SimResponse> => {
    let body: unknown
    try {
      body = JSON.parse(request.body)
    } catch {
      return textResponse(422, DESERIALIZE_ERROR)
    }
    if (!isRecord(body) || typeof body.user !== "string" || !isAddress(body.user, { strict: false })) {
      return textResponse(422, DESERIALIZE_ERROR)
    }
    const user = body.user.toLowerCase()
    switch (body.type) {
      case "clearinghouseState": {
        const perp = fmt(ledger.balance(user, PERP))
        const summary = { accountValue: perp, totalNtlPos: "0.0", totalRawUsd: perp, totalMarginUsed: "0.0" }
        return jsonResponse(200, {
          marginSummary: summary,
          crossMarginSummary: summary,
          crossMaintenanceMarginUsed: "0.0",
          withdrawable: perp,
          assetPositions: [],
          time: o.now(),
        })
      }
      case "spotClearinghouseState":
        return jsonResponse(200, {
          balances: [{ coin: "USDC", token: 0, hold: "0.0", total: fmt(ledger.balance(user, SPOT)), entryNtl: "0.0" }],
        })
      case "userNonFundingLedgerUpdates": {
        const start = typeof body.startTime === "number" ? body.startTime : 0
        const end = typeof body.endTime === "number" ? body.endTime : Number.MAX_SAFE_INTEGER
        // Time-ranged answers hold at most 500 elements, oldest first (docs: info endpoint, Pagination).
        return jsonResponse(
          200,
          updates
            .filter((u) => u.users.includes(user) && u.time >= start && u.time <= end)
            .slice(0, 500)
            .map(({ time, hash, delta }) => ({ time, hash, delta })),
        )
      }
      default:
        return textResponse(422, DESERIALIZE_ERROR)
    }
  }

  const poller = startBlockPoller(
    o.chain.client,
    o.fromBlock,
    o.pollIntervalMs,
    async (fromBlock, toBlock) => {
      const logs = await o.chain.client.getContractEvents({
        address: o.marginMock,
        abi: mockCoreDepositWalletAbi,
        eventName: "CoreDeposit",
        fromBlock,
        toBlock,
      })
      for (const log of logs) {
        const { recipient, amount, dex } = log.args
        if (recipient === undefined || amount === undefined || dex === undefined) continue
        const book = dex === 0 ? PERP : dex === 4294967295 ? SPOT : undefined
        if (book === undefined) continue
        ledger.credit(recipient, amount, book)
        record([recipient], log.transactionHash ?? keccak256(stringToHex(`${fromBlock}`)), {
          type: "deposit",
          usdc: formatUnits(amount, decimals),
        })
      }
    },
    o.onError,
  )

  return {
    route: (method, path) => {
      if (method !== "POST") return undefined
      if (path === "/exchange") return { kind: "write", handle: exchange }
      if (path === "/info") return { kind: "read", handle: info }
      return undefined
    },
    refusal: (message) => err(message),
    unknownError: () => textResponse(500, "Internal Server Error"),
    credit: (user, amount, book) => {
      ledger.credit(user, amount, book)
      record([user], keccak256(stringToHex(`credit:${user}:${updates.length}`)), {
        type: "deposit",
        usdc: formatUnits(amount, decimals),
      })
    },
    balance: (user, book) => ledger.balance(user, book),
    snapshot: () => ({ kind: "hyperliquid", balances: ledger.snapshot(), ledgerUpdates: updates.length }),
    syncDeposits: poller.sync,
    stop: poller.stop,
  }
}
