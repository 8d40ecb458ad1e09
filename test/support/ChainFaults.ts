import { Layer } from "effect"
import { createPublicClient, custom, http } from "viem"
import { ChainClients, type ChainTransportFactory } from "../../src/Chain/ChainClients.ts"

/**
 * An in-process RPC fault injector: a viem `custom` transport in front of the venue's real RPC.
 * Tests flip `mode` at run time:
 * - ok: forward;
 * - unreachable: every call fails as a refused connection would;
 * - error: every call answers JSON-RPC -32603 (internal error);
 * - stale: head reads (latest/safe/finalized, eth_blockNumber) keep answering what they answered
 *   when the mode was entered, everything else is forwarded.
 * `failMethodAfter` makes one method fail after n successful calls (a crash in the middle of work), with JSON-RPC
 * error `code` (default -32603, internal error: retryable; -32601, method not found: terminal).
 * `hold` (set by `holdCalls`) keeps the calls it matches waiting until released: a slow answer in the middle of a pass.
 */
export interface FaultControl {
  mode: "ok" | "unreachable" | "error" | "stale"
  failMethodAfter?: { readonly method: string; readonly after: number; readonly code?: number } | undefined
  readonly calls: Map<string, number>
  readonly frozen: Map<string, unknown>
  hold?:
    | { readonly matches: (method: string, params: unknown) => boolean; readonly released: Promise<void> }
    | undefined
}

/** Holds the calls `matches` picks until `release` (idempotent); `waiting` counts the ones held now. */
export const holdCalls = (control: FaultControl, matches: (method: string, params: unknown) => boolean) => {
  let release = () => {}
  const released = new Promise<void>((resolve) => {
    release = resolve
  })
  let waiting = 0
  control.hold = {
    matches: (method, params) => {
      const held = matches(method, params)
      if (held) {
        waiting++
        void released.then(() => waiting--)
      }
      return held
    },
    released,
  }
  return {
    waiting: () => waiting,
    release: () => {
      control.hold = undefined
      release()
    },
  }
}

export const faultControl = (): FaultControl => ({ mode: "ok", calls: new Map(), frozen: new Map() })

const HEAD_TAGS = new Set(["latest", "safe", "finalized", "pending"])

let id = 0
const forward = async (url: string, method: string, params: unknown): Promise<unknown> => {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: ++id, method, params: params ?? [] }),
  })
  const body = (await res.json()) as { result?: unknown; error?: { code: number; message: string; data?: unknown } }
  if (body.error) throw Object.assign(new Error(body.error.message), body.error)
  return body.result
}

export const faultyTransport =
  (control: FaultControl): ChainTransportFactory =>
  (venue) =>
    custom(
      {
        async request({ method, params }: { method: string; params?: unknown }) {
          const n = (control.calls.get(method) ?? 0) + 1
          control.calls.set(method, n)
          if (control.mode === "unreachable") {
            throw Object.assign(new Error("fetch failed: connect ECONNREFUSED"), { cause: { code: "ECONNREFUSED" } })
          }
          if (control.mode === "error") throw Object.assign(new Error("internal error"), { code: -32603 })
          const limit = control.failMethodAfter
          if (limit !== undefined && limit.method === method && n > limit.after) {
            throw Object.assign(new Error("injected failure"), { code: limit.code ?? -32603 })
          }
          if (control.hold?.matches(method, params)) await control.hold.released
          const url = venue.rpc_urls[0]
          if (control.mode === "stale") {
            const p = params as Array<unknown> | undefined
            const isHead =
              method === "eth_blockNumber" ||
              (method === "eth_getBlockByNumber" && typeof p?.[0] === "string" && HEAD_TAGS.has(p[0]))
            if (isHead) {
              const key = `${method}:${JSON.stringify(params)}`
              if (!control.frozen.has(key)) control.frozen.set(key, await forward(url, method, params))
              return control.frozen.get(key)
            }
          } else if (control.frozen.size > 0) {
            control.frozen.clear()
          }
          return forward(url, method, params)
        },
      },
      { retryCount: 0 },
    )

/** Chain clients that reach no node: every venue read fails at once (a refused connection, no retry). */
export const DeadChainClients = Layer.succeed(
  ChainClients,
  ChainClients.of({
    venue: () => createPublicClient({ transport: http("http://127.0.0.1:9", { retryCount: 0, timeout: 2_000 }) }),
    auth: undefined,
    chain: () => undefined,
  }),
)
