/**
 * src/Chain/RpcFetch.ts through viem's http transport, as ChainClients.ts uses it, against a loopback node:http
 * server: answers, batches, node and HTTP errors, timeouts, the body cap, redirects and credentials in the URL must
 * reach viem as they did with fetch (RpcError.ts classifies by those errors' classes and statuses).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http"
import type { AddressInfo } from "node:net"
import {
  BaseError,
  createPublicClient,
  HttpRequestError,
  http,
  type PublicClient,
  RpcRequestError,
  TimeoutError,
} from "viem"
import { afterAll, beforeAll, describe, expect, it } from "vitest"
import { MAX_BODY_BYTES, ResponseTooLarge, rpcFetch } from "../../src/Chain/RpcFetch.ts"

type Handler = (req: IncomingMessage, body: string, res: ServerResponse) => void

let server: Server
let base: string
const seen: Array<{ readonly path: string; readonly body: string; readonly auth: string | undefined }> = []
const routes = new Map<string, Handler>()

const json = (res: ServerResponse, status: number, value: unknown) => {
  res.writeHead(status, { "content-type": "application/json" })
  res.end(JSON.stringify(value))
}

/** Answers each JSON-RPC call (or batch) of eth_blockNumber with 0x10. */
const blockNumber: Handler = (_req, body, res) => {
  const parsed = JSON.parse(body) as { id: number } | Array<{ id: number }>
  const one = (c: { id: number }) => ({ jsonrpc: "2.0", id: c.id, result: "0x10" })
  json(res, 200, Array.isArray(parsed) ? parsed.map(one) : one(parsed))
}

beforeAll(async () => {
  routes.set("/ok", blockNumber)
  routes.set("/rpc-error", (_req, body, res) =>
    json(res, 200, {
      jsonrpc: "2.0",
      id: (JSON.parse(body) as { id: number }).id,
      error: { code: -32000, message: "nope" },
    }),
  )
  routes.set("/http-500", (_req, _body, res) => {
    res.writeHead(500, { "content-type": "text/plain" })
    res.end("upstream broke")
  })
  routes.set("/http-429", (_req, _body, res) => json(res, 429, { message: "slow down" }))
  routes.set("/silent", () => {})
  routes.set("/huge", (_req, _body, res) => {
    res.writeHead(200, { "content-type": "application/json" })
    const chunk = Buffer.alloc(1024 * 1024, 0x20)
    for (let i = 0; i <= MAX_BODY_BYTES / chunk.length; i++) res.write(chunk)
    res.end("{}")
  })
  routes.set("/moved", (_req, _body, res) => {
    res.writeHead(307, { location: "/ok" })
    res.end()
  })
  // A multi-byte character cut between two writes.
  routes.set("/split", (_req, body, res) => {
    const text = JSON.stringify({ jsonrpc: "2.0", id: (JSON.parse(body) as { id: number }).id, result: "0x10€" })
    const bytes = Buffer.from(text)
    const cut = bytes.indexOf(Buffer.from("€")) + 1
    res.writeHead(200, { "content-type": "application/json" })
    res.write(bytes.subarray(0, cut))
    setImmediate(() => res.end(bytes.subarray(cut)))
  })
  server = createServer((req, res) => {
    let body = ""
    req.on("data", (d: Buffer) => (body += d.toString()))
    req.on("end", () => {
      const path = req.url ?? "/"
      seen.push({ path, body, auth: req.headers.authorization })
      const handler = routes.get(path)
      if (handler === undefined) json(res, 404, {})
      else handler(req, body, res)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve))
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
})

afterAll(async () => {
  server.closeAllConnections()
  await new Promise<void>((resolve) => server.close(() => resolve()))
})

const client = (path: string, timeout = 5_000, url = `${base}${path}`): PublicClient =>
  createPublicClient({
    transport: http(url, {
      timeout,
      retryCount: 0,
      batch: { batchSize: 200, wait: 0 },
      fetchFn: rpcFetch,
      maxResponseBodySize: false,
    }),
  })

const failure = async (p: Promise<unknown>): Promise<BaseError> => {
  const e = await p.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(e).toBeInstanceOf(BaseError)
  return e as BaseError
}

describe("rpcFetch under viem's http transport", () => {
  it("answers a call, and calls of one tick as one batch", async () => {
    const c = client("/ok")
    expect(await c.getBlockNumber({ cacheTime: 0 })).toBe(16n)
    const before = seen.length
    const both = await Promise.all([c.getBlockNumber({ cacheTime: 0 }), c.getChainId()])
    expect(both[0]).toBe(16n)
    expect(seen.length - before).toBe(1)
    expect(JSON.parse(seen.at(-1)!.body)).toHaveLength(2)
  })

  it("a node's error is an RpcRequestError with its code; an HTTP error an HttpRequestError with its status", async () => {
    const rpc = await failure(client("/rpc-error").getBlockNumber({ cacheTime: 0 }))
    const rpcErr = rpc.walk((e) => e instanceof RpcRequestError) as RpcRequestError | null
    expect(rpcErr?.code).toBe(-32000)
    for (const [path, status] of [
      ["/http-500", 500],
      ["/http-429", 429],
    ] as const) {
      const e = await failure(client(path).getBlockNumber({ cacheTime: 0 }))
      const httpErr = e.walk((x) => x instanceof HttpRequestError) as HttpRequestError | null
      expect(httpErr?.status).toBe(status)
    }
  })

  it("a node that does not answer is a TimeoutError at the transport's timeout", async () => {
    const e = await failure(client("/silent", 300).getBlockNumber({ cacheTime: 0 }))
    expect(e.walk((x) => x instanceof TimeoutError)).not.toBeNull()
  })

  it("an answer over the cap fails the call instead of being kept", async () => {
    const e = await failure(client("/huge").getBlockNumber({ cacheTime: 0 }))
    expect(e.walk((x) => (x as { cause?: unknown }).cause instanceof ResponseTooLarge)).not.toBeNull()
  })

  it("a redirect is followed, a character cut between reads decoded whole, credentials sent as Basic auth", async () => {
    expect(await client("/moved").getBlockNumber({ cacheTime: 0 })).toBe(16n)
    expect(seen.at(-1)!.path).toBe("/ok")
    const res = await rpcFetch(`${base}/split`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 7, method: "eth_blockNumber" }),
    })
    expect(res.ok).toBe(true)
    expect(res.headers.get("Content-Type")).toBe("application/json")
    expect(JSON.parse(await res.text()).result).toBe("0x10€")
    const withCredentials = base.replace("http://", "http://user:pa%20ss@")
    expect(await client("", 5_000, `${withCredentials}/ok`).getBlockNumber({ cacheTime: 0 })).toBe(16n)
    expect(seen.at(-1)!.auth).toBe(`Basic ${Buffer.from("user:pa ss").toString("base64")}`)
  })
})
