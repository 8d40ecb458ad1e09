import {
  type AbiParameter,
  type Address,
  type Hex,
  type Log,
  type ParseEventLogsReturnType,
  toEventSelector,
  zeroHash,
} from "viem"
import { legacyEscrowAbi, settlementEscrowAbi } from "./artifacts/index.ts"

/**
 * Escrow logs → indexed state, as a pure fold. The watcher loads the rows an ingest page touches,
 * applies the page's events in chain order with `applyEvents`, and writes back what changed; the
 * same function is what the unit tests exercise. Amounts are bigints; a row that goes negative
 * means history is missing (an event before `deployment_block`), which the integrity check reports.
 */

type EventOf<A extends ReadonlyArray<unknown>> = Extract<A[number], { readonly type: "event" }>
const eventsOf = <A extends ReadonlyArray<{ readonly type: string }>>(abi: A) =>
  abi.filter((x): x is EventOf<A> => x.type === "event")

/** The escrow's and the legacy escrow's events (the ERC-20's and OZ's own events are not indexed). */
export const indexedEventsAbi = [
  ...eventsOf(settlementEscrowAbi).filter((e) => e.name !== "EIP712DomainChanged"),
  ...eventsOf(legacyEscrowAbi),
]

/** topic0 of every indexed event: the `topics` filter of eth_getLogs. */
export const indexedTopics: ReadonlyArray<Hex> = indexedEventsAbi.map((e) => toEventSelector(e))

export type DecodedLog = ParseEventLogsReturnType<typeof indexedEventsAbi, undefined, true>[number]

export interface EventMeta {
  readonly blockNumber: bigint
  readonly blockHash: Hex
  readonly logIndex: number
  readonly txHash: Hex
  /** Lowercase emitting contract. */
  readonly contract: Address
}

export type IndexedEvent = EventMeta & { readonly decoded: DecodedLog }

interface EventDecoder {
  readonly name: string
  readonly indexed: ReadonlyArray<AbiParameter>
  readonly data: ReadonlyArray<AbiParameter>
}

/** The parameter types `readStatic` decodes: each one 32-byte word (a tuple: a run of them). */
const staticType = (p: AbiParameter): boolean =>
  p.type === "tuple"
    ? (p as { components: ReadonlyArray<AbiParameter> }).components.every(staticType)
    : p.type === "address" || p.type === "bool" || p.type === "bytes32" || /^uint(\d+)$/.test(p.type)

/**
 * selector → how to decode: computed once (viem's decoders hash every event signature per log).
 * An event with a parameter the static reader cannot decode fails here, at startup, instead of
 * being skipped log by log (a contract upgrade adding, e.g., a `string` must extend the reader).
 */
const decoders = new Map<Hex, EventDecoder>(
  indexedEventsAbi.map((e) => {
    const unsupported = e.inputs.find((i) => !staticType(i))
    if (unsupported !== undefined) {
      throw new TypeError(`event ${e.name}: parameter ${unsupported.name} of type ${unsupported.type} is not static`)
    }
    return [
      toEventSelector(e),
      {
        name: e.name,
        indexed: e.inputs.filter((i) => i.indexed),
        data: e.inputs.filter((i) => !i.indexed),
      },
    ]
  }),
)

/**
 * Every parameter of our events is static (addresses, bytes32, bools, uints, and the Fill tuple made
 * of those), so each is a fixed run of 32-byte words: read them directly. This is an order of
 * magnitude faster than the generic decoder (which checksums every address with a keccak). Values
 * equal viem's decodeEventLog (test/unit/chain-decode.test.ts) except that addresses are lowercase
 * (every consumer lowercases them anyway): uint up to 48 bits as number, wider as bigint; a bool
 * word other than 0 or 1 is rejected as viem rejects it.
 */
const BOOL_WORD = /^0{63}[01]$/
const readStatic = (param: AbiParameter, hex: string, word: number): [unknown, number] => {
  const type = param.type
  if (type === "tuple") {
    const out: Record<string, unknown> = {}
    let w = word
    for (const c of (param as { components: ReadonlyArray<AbiParameter> }).components) {
      const [v, next] = readStatic(c, hex, w)
      out[c.name!] = v
      w = next
    }
    return [out, w]
  }
  const at = 2 + word * 64
  const chunk = hex.slice(at, at + 64)
  if (chunk.length !== 64) throw new RangeError("log data too short")
  if (type === "address") return [`0x${chunk.slice(24)}`, word + 1]
  if (type === "bool") {
    if (!BOOL_WORD.test(chunk)) throw new RangeError("invalid bool word")
    return [chunk.endsWith("1"), word + 1]
  }
  if (type === "bytes32") return [`0x${chunk}`, word + 1]
  const uint = /^uint(\d+)$/.exec(type)
  if (uint !== null) {
    const n = BigInt(`0x${chunk}`)
    return [Number(uint[1]) <= 48 ? Number(n) : n, word + 1]
  }
  throw new TypeError(`unsupported event parameter type ${type}`)
}

const decodeOne = (log: Log): DecodedLog | undefined => {
  const [selector, ...topics] = log.topics
  const decoder = selector === undefined ? undefined : decoders.get(selector)
  if (decoder === undefined || topics.length !== decoder.indexed.length) return undefined
  const args: Record<string, unknown> = {}
  decoder.indexed.forEach((input, i) => {
    args[input.name!] = readStatic(input, topics[i]!.toLowerCase(), 0)[0]
  })
  const data = log.data.toLowerCase()
  let word = 0
  for (const input of decoder.data) {
    const [v, next] = readStatic(input, data, word)
    args[input.name!] = v
    word = next
  }
  return { ...log, eventName: decoder.name, args } as unknown as DecodedLog
}

/** Decodes raw logs, keeping only our events from the given contracts, in (block, log index) order. */
export const decodeLogs = (logs: ReadonlyArray<Log>, contracts: ReadonlyArray<Address>): Array<IndexedEvent> => {
  const allowed = new Set(contracts.map((c) => c.toLowerCase()))
  const out: Array<IndexedEvent> = []
  for (const raw of logs) {
    if (raw.removed) continue
    const contract = raw.address.toLowerCase() as Address
    if (!allowed.has(contract)) continue
    if (raw.blockNumber === null || raw.blockHash === null || raw.logIndex === null || raw.transactionHash === null) {
      continue
    }
    // A log of ours that does not decode (wrong topic count, short data) is skipped, as viem's
    // strict parseEventLogs skipped it before.
    let decoded: DecodedLog | undefined
    try {
      decoded = decodeOne(raw)
    } catch {
      decoded = undefined
    }
    if (decoded === undefined) continue
    out.push({
      blockNumber: raw.blockNumber,
      blockHash: raw.blockHash,
      logIndex: raw.logIndex,
      txHash: raw.transactionHash,
      contract,
      decoded,
    })
  }
  return out.sort((a, b) =>
    a.blockNumber === b.blockNumber ? a.logIndex - b.logIndex : a.blockNumber < b.blockNumber ? -1 : 1,
  )
}

// ------------------------------------------------------------------ state rows

export interface Stamp {
  readonly blockNumber: bigint
  readonly blockHash: Hex
}

export interface OrderRow extends Stamp {
  readonly orderId: Hex
  readonly owner: Address
  readonly operator: Address
  readonly quoteSigner: Address
  readonly available: bigint
  readonly locked: bigint
  readonly createdBlock: bigint
}

export interface BalanceRow extends Stamp {
  readonly owner: Address
  readonly balance: bigint
}

export type LockState = "locked" | "claimed" | "refunded" | "cancelled"
export interface LockRow extends Stamp {
  readonly fillId: Hex
  readonly orderId: Hex
  readonly payer: Address
  readonly recipient: Address
  readonly amountOut: bigint
  readonly hashlock: Hex
  readonly expiry: bigint
  readonly state: LockState
  readonly refused: boolean | null
  readonly secret: Hex | null
  readonly createdBlock: bigint
}

export type PaymentState = "held" | "claimed" | "refunded"
export interface PaymentRow extends Stamp {
  readonly fillId: Hex
  readonly payer: Address
  readonly payee: Address
  readonly amountIn: bigint
  readonly hashlock: Hex
  readonly expiry: bigint
  readonly state: PaymentState
  readonly secret: Hex | null
  readonly createdBlock: bigint
}

export interface LegacyOfferRow extends Stamp {
  readonly contract: Address
  readonly offerId: bigint
  readonly owner: Address
  readonly amount: bigint
  readonly refundAt: bigint
  readonly reclaimed: boolean
  readonly createdBlock: bigint
}

export interface FillRow extends Stamp {
  readonly fillId: Hex
  readonly side: "maker" | "taker"
  /** The signed Fill struct, JSON-safe (bigints as decimal strings). */
  readonly fill: Record<string, unknown>
  readonly fillDigest: Hex
  readonly quoteSetDigest: Hex | null
  readonly quoteIndex: bigint | null
  readonly txHash: Hex
}

export interface CloseRow extends Stamp {
  readonly logIndex: number
  readonly orderId: Hex
  readonly owner: Address
  readonly caller: Address
  readonly amount: bigint
  readonly dex: number
  readonly toMargin: boolean
  readonly refused: boolean
  readonly byOperator: boolean
  readonly nonce: bigint
  readonly txHash: Hex
}

export interface UsedNonceRow extends Stamp {
  readonly owner: Address
  readonly nonce: bigint
  readonly reason: "closed" | "invalidated"
}

/** The mutable part of the index, keyed as in the tables (addresses and ids lowercase). */
export interface IndexState {
  readonly orders: Map<string, OrderRow>
  readonly balances: Map<string, BalanceRow>
  readonly locks: Map<string, LockRow>
  readonly payments: Map<string, PaymentRow>
  /** key `${contract}:${offerId}` */
  readonly legacy: Map<string, LegacyOfferRow>
}

/** What a page adds to the append-only tables. */
export interface IndexAppends {
  readonly fills: Array<FillRow>
  readonly closes: Array<CloseRow>
  readonly nonces: Array<UsedNonceRow>
}

export const emptyState = (): IndexState => ({
  orders: new Map(),
  balances: new Map(),
  locks: new Map(),
  payments: new Map(),
  legacy: new Map(),
})

/** The keys a batch of events reads or writes, so that exactly those rows are loaded first. */
export interface TouchedKeys {
  readonly orders: Set<string>
  readonly balances: Set<string>
  readonly locks: Set<string>
  readonly payments: Set<string>
  readonly legacy: Set<string>
}

const lc = <T extends string>(s: T): T => s.toLowerCase() as T
const ZERO_ADDRESS = "0x0000000000000000000000000000000000000000" as Address

export const touchedKeys = (events: ReadonlyArray<IndexedEvent>): TouchedKeys => {
  const keys: TouchedKeys = {
    orders: new Set(),
    balances: new Set(),
    locks: new Set(),
    payments: new Set(),
    legacy: new Set(),
  }
  for (const { decoded: e, contract } of events) {
    switch (e.eventName) {
      case "OrderFunded":
        keys.orders.add(lc(e.args.orderId))
        break
      case "OrderClosed":
        if (e.args.orderId === zeroHash) keys.balances.add(lc(e.args.owner))
        else keys.orders.add(lc(e.args.orderId))
        if (e.args.refused) keys.balances.add(lc(e.args.owner))
        break
      case "Locked":
        keys.orders.add(lc(e.args.orderId))
        keys.locks.add(lc(e.args.fillId))
        break
      case "Claimed":
        keys.orders.add(lc(e.args.orderId))
        keys.locks.add(lc(e.args.fillId))
        if (e.args.refused) keys.balances.add(lc(e.args.recipient))
        break
      case "Refunded":
      case "LockCancelled":
        keys.orders.add(lc(e.args.orderId))
        keys.locks.add(lc(e.args.fillId))
        break
      case "Paid":
      case "PaymentClaimed":
      case "PaymentRefunded":
        keys.payments.add(lc(e.args.fillId))
        break
      case "OfferCreated":
      case "OfferReclaimed":
        keys.legacy.add(`${contract}:${e.args.id}`)
        break
      default:
        break
    }
  }
  return keys
}

/** A decoded value as JSON-safe data: bigints as decimal strings, strings (hex) lowercase; v1 and v2 alike. */
export const jsonSafe = (value: unknown): unknown => {
  if (typeof value === "bigint") return value.toString()
  if (typeof value === "string") return value.toLowerCase()
  if (Array.isArray(value)) return value.map(jsonSafe)
  if (value !== null && typeof value === "object") {
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, jsonSafe(v)]))
  }
  return value
}

const jsonSafeReplacer = (_key: string, v: unknown) =>
  typeof v === "bigint" ? v.toString() : typeof v === "string" ? v.toLowerCase() : v

/**
 * `JSON.stringify(jsonSafe(value))`, in one pass without the copy (a page's args: ~2.5× faster); the text of the
 * escrow event tables' `args` (bigints as strings, hex lowercase).
 */
export const jsonSafeText = (value: unknown): string => JSON.stringify(value, jsonSafeReplacer)

/**
 * Applies events in order to `state` (mutated in place) and returns the append-only rows. Each row
 * written takes the stamp (block number and hash) of the event that last changed it.
 */
export const applyEvents = (state: IndexState, events: ReadonlyArray<IndexedEvent>): IndexAppends => {
  const appends: IndexAppends = { fills: [], closes: [], nonces: [] }
  const order = (id: Hex, stamp: Stamp, owner: Address = ZERO_ADDRESS): OrderRow =>
    state.orders.get(lc(id)) ?? {
      orderId: lc(id),
      owner: lc(owner),
      operator: ZERO_ADDRESS,
      quoteSigner: ZERO_ADDRESS,
      available: 0n,
      locked: 0n,
      createdBlock: stamp.blockNumber,
      ...stamp,
    }
  const credit = (owner: Address, amount: bigint, stamp: Stamp) => {
    const key = lc(owner)
    const current = state.balances.get(key)?.balance ?? 0n
    state.balances.set(key, { owner: key, balance: current + amount, ...stamp })
  }
  for (const ev of events) {
    const stamp: Stamp = { blockNumber: ev.blockNumber, blockHash: lc(ev.blockHash) }
    const e = ev.decoded
    switch (e.eventName) {
      case "OrderFunded": {
        const a = e.args
        const prev = state.orders.get(lc(a.orderId))
        state.orders.set(lc(a.orderId), {
          orderId: lc(a.orderId),
          owner: lc(a.owner),
          operator: lc(a.operator),
          quoteSigner: lc(a.quoteSigner),
          // The event states the new total: no arithmetic to drift.
          available: a.available,
          locked: prev?.locked ?? 0n,
          createdBlock: prev?.createdBlock ?? ev.blockNumber,
          ...stamp,
        })
        break
      }
      case "OrderClosed": {
        const a = e.args
        if (a.orderId === zeroHash) {
          const key = lc(a.owner)
          const current = state.balances.get(key)?.balance ?? 0n
          state.balances.set(key, { owner: key, balance: current - a.amount, ...stamp })
        } else {
          const o = order(a.orderId, stamp, a.owner)
          state.orders.set(lc(a.orderId), { ...o, available: o.available - a.amount, ...stamp })
        }
        if (a.refused) credit(a.owner, a.amount, stamp)
        appends.closes.push({
          ...stamp,
          logIndex: ev.logIndex,
          orderId: lc(a.orderId),
          owner: lc(a.owner),
          caller: lc(a.caller),
          amount: a.amount,
          dex: a.dex,
          toMargin: a.toMargin,
          refused: a.refused,
          byOperator: a.byOperator,
          nonce: a.nonce,
          txHash: lc(ev.txHash),
        })
        if (!a.byOperator) appends.nonces.push({ ...stamp, owner: lc(a.owner), nonce: a.nonce, reason: "closed" })
        break
      }
      case "NonceInvalidated":
        appends.nonces.push({ ...stamp, owner: lc(e.args.owner), nonce: e.args.nonce, reason: "invalidated" })
        break
      case "Locked": {
        const a = e.args
        const f = a.fill
        const o = order(a.orderId, stamp)
        state.orders.set(lc(a.orderId), {
          ...o,
          available: o.available - f.amountOut,
          locked: o.locked + f.amountOut,
          ...stamp,
        })
        state.locks.set(lc(a.fillId), {
          fillId: lc(a.fillId),
          orderId: lc(a.orderId),
          payer: lc(a.payer),
          recipient: lc(f.recipient),
          amountOut: f.amountOut,
          hashlock: lc(f.hashlock),
          expiry: f.makerExpiry,
          state: "locked",
          refused: null,
          secret: null,
          createdBlock: ev.blockNumber,
          ...stamp,
        })
        appends.fills.push({
          ...stamp,
          fillId: lc(a.fillId),
          side: "maker",
          fill: jsonSafe(f) as Record<string, unknown>,
          fillDigest: lc(a.fillDigest),
          quoteSetDigest: lc(a.quoteSetDigest),
          quoteIndex: a.quoteIndex,
          txHash: lc(ev.txHash),
        })
        break
      }
      case "Claimed":
      case "Refunded":
      case "LockCancelled": {
        const a = e.args
        const o = order(a.orderId, stamp)
        const back = e.eventName === "Claimed" ? 0n : a.amountOut
        state.orders.set(lc(a.orderId), {
          ...o,
          available: o.available + back,
          locked: o.locked - a.amountOut,
          ...stamp,
        })
        const prev = state.locks.get(lc(a.fillId))
        const next: LockState =
          e.eventName === "Claimed" ? "claimed" : e.eventName === "Refunded" ? "refunded" : "cancelled"
        state.locks.set(lc(a.fillId), {
          fillId: lc(a.fillId),
          orderId: lc(a.orderId),
          payer: prev?.payer ?? ZERO_ADDRESS,
          recipient: prev?.recipient ?? (e.eventName === "Claimed" ? lc(e.args.recipient) : ZERO_ADDRESS),
          amountOut: a.amountOut,
          hashlock: prev?.hashlock ?? zeroHash,
          expiry: prev?.expiry ?? 0n,
          state: next,
          refused: e.eventName === "Claimed" ? e.args.refused : null,
          secret: e.eventName === "Claimed" ? lc(e.args.secret) : null,
          createdBlock: prev?.createdBlock ?? ev.blockNumber,
          ...stamp,
        })
        if (e.eventName === "Claimed" && e.args.refused) credit(e.args.recipient, a.amountOut, stamp)
        break
      }
      case "Paid": {
        const a = e.args
        const f = a.fill
        state.payments.set(lc(a.fillId), {
          fillId: lc(a.fillId),
          payer: lc(a.payer),
          payee: lc(a.payee),
          amountIn: f.amountIn,
          hashlock: lc(f.hashlock),
          expiry: f.takerExpiry,
          state: "held",
          secret: null,
          createdBlock: ev.blockNumber,
          ...stamp,
        })
        appends.fills.push({
          ...stamp,
          fillId: lc(a.fillId),
          side: "taker",
          fill: jsonSafe(f) as Record<string, unknown>,
          fillDigest: lc(a.fillDigest),
          quoteSetDigest: null,
          quoteIndex: null,
          txHash: lc(ev.txHash),
        })
        break
      }
      case "PaymentClaimed":
      case "PaymentRefunded": {
        const a = e.args
        const prev = state.payments.get(lc(a.fillId))
        state.payments.set(lc(a.fillId), {
          fillId: lc(a.fillId),
          payer: prev?.payer ?? (e.eventName === "PaymentRefunded" ? lc(e.args.payer) : ZERO_ADDRESS),
          payee: prev?.payee ?? (e.eventName === "PaymentClaimed" ? lc(e.args.payee) : ZERO_ADDRESS),
          amountIn: a.amountIn,
          hashlock: prev?.hashlock ?? zeroHash,
          expiry: prev?.expiry ?? 0n,
          state: e.eventName === "PaymentClaimed" ? "claimed" : "refunded",
          secret: e.eventName === "PaymentClaimed" ? lc(e.args.secret) : null,
          createdBlock: prev?.createdBlock ?? ev.blockNumber,
          ...stamp,
        })
        break
      }
      case "OfferCreated": {
        const a = e.args
        state.legacy.set(`${ev.contract}:${a.id}`, {
          contract: ev.contract,
          offerId: a.id,
          owner: lc(a.owner),
          amount: a.amount,
          refundAt: a.refundAt,
          reclaimed: false,
          createdBlock: ev.blockNumber,
          ...stamp,
        })
        break
      }
      case "OfferReclaimed": {
        const a = e.args
        const key = `${ev.contract}:${a.id}`
        const prev = state.legacy.get(key)
        state.legacy.set(key, {
          contract: ev.contract,
          offerId: a.id,
          owner: lc(a.owner),
          amount: prev?.amount ?? a.amount,
          refundAt: prev?.refundAt ?? 0n,
          reclaimed: true,
          createdBlock: prev?.createdBlock ?? ev.blockNumber,
          ...stamp,
        })
        break
      }
      default:
        break
    }
  }
  return appends
}

/** Σ what the index says the escrow owes: available + locked + zero-id balances + held payments. */
export const indexedLiabilities = (state: IndexState): bigint => {
  let total = 0n
  for (const o of state.orders.values()) total += o.available + o.locked
  for (const b of state.balances.values()) total += b.balance
  for (const p of state.payments.values()) if (p.state === "held") total += p.amountIn
  return total
}
