// Starts a Hyperliquid- or Aster-compatible venue simulator on 127.0.0.1 for a devnet chain.
//
//   const sim = await startVenueSimulator({ kind: "hyperliquid", port: 0, chainRpcUrl, chainId, token,
//                                           marginMock, hotWalletKey, signatureChainId: 42161 })
//   sim.url                       base URL for the adapter (`api_url`)
//   sim.control.refuseNext(1)     fault injection, balances, agents (also `POST /_control` with JSON)
//   await sim.stop()
//
// The venue paths, bodies, signatures and error shapes are the real venue's (HyperliquidSim.ts, AsterSim.ts). The
// server runs one request at a time, like a sequencer, so nonce and balance checks never interleave; a held
// ("timeout") request releases the queue before it starts holding.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http"
import type { AddressInfo, Socket } from "node:net"
import type { Address, Hex } from "viem"
import { type AgentRecord, makeAsterSim } from "./AsterSim.ts"
import { makeHyperliquidSim } from "./HyperliquidSim.ts"
import { connectSimChain } from "./SimChain.ts"
import { type Fault, FaultQueue, type FaultScope } from "./SimFaults.ts"
import { jsonResponse, readBody, type SimResponse, send, textResponse } from "./SimHttp.ts"
import type { VenueBehaviour } from "./SimRoute.ts"

export interface VenueSimulatorOptions {
  readonly kind: "hyperliquid" | "aster"
  /** 0 = a free port. */
  readonly port: number
  readonly chainRpcUrl: string
  readonly chainId: number
  /** The devnet token (MockUSDC) deposits are made in and withdrawals are paid in. */
  readonly token: Address
  /** MockCoreDepositWallet (hyperliquid) or MockAsterVault (aster): where deposits are recorded. */
  readonly marginMock: Address
  /** A funded devnet key that pays withdrawals. */
  readonly hotWalletKey: Hex
  /**
   * Aster: the accepted `signatureChainId` of agent approvals (domain chain id). Hyperliquid accepts any
   * `signatureChainId`, as the real venue does; the value is informational there.
   */
  readonly signatureChainId: number
  /** First block scanned for deposits (default 0). */
  readonly fromBlock?: bigint
  /** Deposit polling interval (default 250 ms). */
  readonly pollIntervalMs?: number
  /** Hyperliquid environment (default "Mainnet"). */
  readonly hyperliquidChain?: "Mainnet" | "Testnet"
  /** Hyperliquid `sendAsset` USDC token string (default the mainnet one). */
  readonly usdcToken?: string
  /** Hyperliquid: highest nonces kept per signer (default 100). */
  readonly nonceSetSize?: number
  /** Hyperliquid nonce window around the venue clock (default 2 days past, 1 day future). */
  readonly nonceWindow?: { readonly pastMs: number; readonly futureMs: number }
  /** Aster asset name (default "USDC"). */
  readonly asset?: string
  /** Aster V3 request domain chain id (default 1666). */
  readonly apiChainId?: number
  /** Aster nonce window (default 10 s). */
  readonly nonceWindowMicros?: number
  /** Aster recent nonces kept per user (default 100). */
  readonly nonceListSize?: number
  /** Withdrawal fee in token base units (default 0): deducted from the amount paid out. */
  readonly withdrawFee?: bigint
  /** Errors of background work (deposit polling, payouts); default: console.error. */
  readonly onError?: (message: string) => void
}

export interface SimulatorControl {
  /** The next `count` requests in `scope` (default: state-changing) get the venue's clear refusal. */
  readonly refuseNext: (count: number, options?: { readonly message?: string; readonly scope?: FaultScope }) => void
  /**
   * The next `count` requests get no answer: the connection is held for `holdMs` and then dropped. With `apply`
   * the request takes effect first (the client cannot tell); without, it never does.
   */
  readonly timeoutNext: (
    count: number,
    options: { readonly holdMs: number; readonly apply: boolean; readonly scope?: FaultScope },
  ) => void
  /** The next `count` requests are applied, then answered with an error of unknown outcome (5xx). */
  readonly acceptThenErrorNext: (count: number, options?: { readonly scope?: FaultScope }) => void
  readonly clearFaults: () => void
  /** Credits margin directly (base units); book "" is perps, "spot" Hyperliquid spot. */
  readonly credit: (user: Address, amountBaseUnits: bigint, book?: string) => void
  readonly balance: (user: Address, book?: string) => bigint
  /** Aster: the agents registered for `user` (empty on Hyperliquid). */
  readonly agents: (user: Address) => ReadonlyArray<AgentRecord>
  /** Scans the chain for deposits now (instead of waiting for the poll interval). */
  readonly syncDeposits: () => Promise<void>
  /** Waits until every payout queued so far is mined (or failed). */
  readonly payoutsSettled: () => Promise<void>
  readonly snapshot: () => unknown
  /** The hot wallet that pays withdrawals. */
  readonly hotWallet: Address
}

export interface VenueSimulator {
  readonly url: string
  readonly port: number
  readonly control: SimulatorControl
  readonly stop: () => Promise<void>
}

const DEFAULT_WINDOW = { pastMs: 2 * 86_400_000, futureMs: 86_400_000 }

export const startVenueSimulator = async (options: VenueSimulatorOptions): Promise<VenueSimulator> => {
  const onError = options.onError ?? ((m: string) => console.error(`[venue-sim ${options.kind}] ${m}`))
  const chain = await connectSimChain({
    rpcUrl: options.chainRpcUrl,
    chainId: options.chainId,
    token: options.token,
    hotWalletKey: options.hotWalletKey,
    onError,
  })
  const common = {
    chain,
    marginMock: options.marginMock,
    fromBlock: options.fromBlock ?? 0n,
    pollIntervalMs: options.pollIntervalMs ?? 250,
    withdrawFee: options.withdrawFee ?? 0n,
    now: () => Date.now(),
    onError,
  }
  const aster =
    options.kind === "aster"
      ? makeAsterSim({
          ...common,
          chainId: options.chainId,
          asset: options.asset ?? "USDC",
          signatureChainIds: [options.signatureChainId],
          apiChainId: options.apiChainId ?? 1666,
          nonceWindowMicros: options.nonceWindowMicros ?? 10_000_000,
          nonceListSize: options.nonceListSize ?? 100,
        })
      : undefined
  const venue: VenueBehaviour =
    aster ??
    makeHyperliquidSim({
      ...common,
      hyperliquidChain: options.hyperliquidChain ?? "Mainnet",
      usdcToken: options.usdcToken ?? "USDC:0x6d1e7cde53ba9467b783cb7c530ce054",
      nonceSetSize: options.nonceSetSize ?? 100,
      nonceWindow: options.nonceWindow ?? DEFAULT_WINDOW,
    })
  const faults = new FaultQueue()

  const control: SimulatorControl = {
    refuseNext: (count, o = {}) =>
      faults.add({ kind: "refuse", message: o.message ?? "Simulated refusal" }, count, o.scope),
    timeoutNext: (count, o) => faults.add({ kind: "timeout", holdMs: o.holdMs, apply: o.apply }, count, o.scope),
    acceptThenErrorNext: (count, o = {}) => faults.add({ kind: "acceptThenError" }, count, o.scope),
    clearFaults: () => faults.clear(),
    credit: (user, amount, book = "") => venue.credit(user, amount, book),
    balance: (user, book = "") => venue.balance(user, book),
    agents: (user) => aster?.agents(user) ?? [],
    syncDeposits: () => venue.syncDeposits(),
    payoutsSettled: () => chain.idle(),
    snapshot: () => ({ ...(venue.snapshot() as object), pendingFaults: faults.size }),
    hotWallet: chain.hotWallet,
  }

  // One request at a time (a sequencer). Held requests leave the queue before holding.
  let queue: Promise<unknown> = Promise.resolve()
  const serialized = <A>(f: () => Promise<A>): Promise<A> => {
    const result = queue.then(f, f)
    queue = result.catch(() => undefined)
    return result
  }
  const held = new Set<Socket>()

  const handle = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1")
    const body = await readBody(req)
    if (url.pathname === "/_control" && req.method === "POST") return send(res, controlEndpoint(body))
    const route = venue.route(req.method ?? "GET", url.pathname)
    if (route === undefined) return send(res, textResponse(404, "Not Found"))
    const request = {
      method: req.method ?? "GET",
      path: url.pathname,
      query: url.search.replace(/^\?/, ""),
      body,
      contentType: req.headers["content-type"] ?? "",
    }
    const outcome = await serialized(
      async (): Promise<{ fault: Fault | undefined; response: SimResponse | undefined }> => {
        const fault = faults.take(route.kind)
        if (fault?.kind === "refuse") return { fault, response: venue.refusal(fault.message) }
        if (fault?.kind === "timeout" && !fault.apply) return { fault, response: undefined }
        const response = await route.handle(request)
        return {
          fault,
          response:
            fault === undefined ? response : fault.kind === "acceptThenError" ? venue.unknownError() : undefined,
        }
      },
    )
    if (outcome.fault?.kind === "timeout") {
      const socket = req.socket
      held.add(socket)
      const timer = setTimeout(() => {
        held.delete(socket)
        socket.destroy()
      }, outcome.fault.holdMs)
      timer.unref()
      socket.once("close", () => {
        clearTimeout(timer)
        held.delete(socket)
      })
      return
    }
    if (outcome.response !== undefined) send(res, outcome.response)
  }

  const controlEndpoint = (body: string): SimResponse => {
    try {
      const c = JSON.parse(body) as Record<string, unknown>
      const count = typeof c.count === "number" ? c.count : 1
      const scope = c.scope === "read" || c.scope === "any" ? c.scope : "write"
      switch (c.op) {
        case "refuse":
          control.refuseNext(count, { scope, ...(typeof c.message === "string" ? { message: c.message } : {}) })
          break
        case "timeout":
          control.timeoutNext(count, {
            scope,
            holdMs: typeof c.holdMs === "number" ? c.holdMs : 30_000,
            apply: c.apply === true,
          })
          break
        case "acceptThenError":
          control.acceptThenErrorNext(count, { scope })
          break
        case "clearFaults":
          control.clearFaults()
          break
        case "credit":
          if (typeof c.user !== "string" || typeof c.amount !== "string" || !/^[0-9]+$/.test(c.amount)) {
            return jsonResponse(400, { error: "credit needs user and amount (base units, decimal string)" })
          }
          control.credit(c.user as Address, BigInt(c.amount), typeof c.book === "string" ? c.book : "")
          break
        case "state":
          break
        default:
          return jsonResponse(400, {
            error: "op must be refuse, timeout, acceptThenError, clearFaults, credit or state",
          })
      }
      return jsonResponse(200, { ok: true, state: control.snapshot() })
    } catch (e) {
      return jsonResponse(400, { error: String(e) })
    }
  }

  const server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => {
      onError(`request failed: ${String(e)}`)
      if (!res.headersSent) send(res, textResponse(500, "Internal Server Error"))
    })
  })
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject)
    server.listen(options.port, "127.0.0.1", () => resolve())
  })
  const port = (server.address() as AddressInfo).port

  return {
    url: `http://127.0.0.1:${port}`,
    port,
    control,
    stop: async () => {
      venue.stop()
      for (const socket of held) socket.destroy()
      server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
