import { STATUS_CODES } from "node:http"
import { Agent, request } from "undici"

/**
 * The `fetchFn` of the service's viem http transports (ChainClients.ts): a JSON-RPC call on undici's `request` API
 * instead of the WHATWG `fetch`. Node's fetch builds a Request, web streams for both bodies and a tee of the request
 * body per call; measured against anvil (500 warm-up calls, then 3,000 in batches of 4, four rounds each), this
 * process spent 231–442 µs of CPU per call with fetch and 69–211 µs with this. Every watcher poll, relayer pass and
 * claim makes several calls; an idle service on two chains used 10–17% less CPU (test/bench/RESULTS.md).
 *
 * What viem reads of the answer is provided: `ok`, `status`, `statusText`, `headers.get` and `text()`. The body is
 * read whole here, up to MAX_BODY_BYTES (viem's own cap, which the transports turn off, `maxResponseBodySize:
 * false`, so that the text is not encoded again to be measured). A redirect is left to `fetch`, which follows it;
 * `request` would not. Abort (viem's timeout) passes through as the signal.
 */

/** viem's default cap on a JSON-RPC answer: a larger body fails the call rather than filling memory. */
export const MAX_BODY_BYTES = 10 * 1024 * 1024

/**
 * The calls' own connection pool (keep-alive, undici's defaults): not the process-wide dispatcher, which Node's
 * bundled fetch (another undici version) may have installed first.
 */
const dispatcher = new Agent()

export class ResponseTooLarge extends Error {
  override readonly name = "ResponseTooLarge"
}

/** The part of a Response that viem's http transport reads. */
interface RpcResponse {
  readonly ok: boolean
  readonly status: number
  readonly statusText: string
  readonly headers: { readonly get: (name: string) => string | null }
  readonly body: null
  readonly text: () => Promise<string>
}

const headerReader = (raw: Record<string, string | Array<string> | undefined>) => ({
  get: (name: string): string | null => {
    const v = raw[name.toLowerCase()]
    return v === undefined ? null : Array.isArray(v) ? v.join(", ") : v
  },
})

const urlOf = (input: string | URL | Request): string =>
  typeof input === "string" ? input : input instanceof URL ? input.href : input.url

export const rpcFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
  const res = await request(urlOf(input), {
    method: (init?.method ?? "POST") as "POST",
    headers: (init?.headers ?? {}) as Record<string, string>,
    body: (init?.body ?? null) as string | null,
    ...(init?.signal ? { signal: init.signal } : {}),
    dispatcher,
  })
  if (res.statusCode >= 300 && res.statusCode < 400) {
    await res.body.dump()
    return fetch(input, init)
  }
  const chunks: Array<Buffer> = []
  let size = 0
  for await (const chunk of res.body as AsyncIterable<Buffer>) {
    size += chunk.length
    if (size > MAX_BODY_BYTES) {
      res.body.destroy()
      throw new ResponseTooLarge(`the node's answer is over ${MAX_BODY_BYTES} bytes`)
    }
    chunks.push(chunk)
  }
  const text = chunks.length === 1 ? chunks[0]!.toString("utf8") : Buffer.concat(chunks).toString("utf8")
  const answer: RpcResponse = {
    ok: res.statusCode >= 200 && res.statusCode < 300,
    status: res.statusCode,
    statusText: STATUS_CODES[res.statusCode] ?? "",
    headers: headerReader(res.headers),
    body: null,
    text: () => Promise.resolve(text),
  }
  return answer as unknown as Response
}
