import { request } from "node:http"
import { Effect } from "effect"

export interface RawResponse {
  readonly status: number
  readonly headers: Record<string, string | Array<string> | undefined>
  readonly text: string
  readonly json: unknown
}

/**
 * A request with full control over framing (e.g. a chunked body without Content-Length), through
 * node:http so that nothing in a client library adds or rewrites headers.
 */
export const rawRequest = (
  url: string,
  options: {
    readonly method?: string
    readonly headers?: Record<string, string>
    readonly body?: string | Buffer
    readonly chunked?: boolean
  } = {},
) =>
  Effect.async<RawResponse, Error>((resume) => {
    const req = request(url, { method: options.method ?? "GET", headers: options.headers ?? {} }, (res) => {
      const chunks: Array<Buffer> = []
      res.on("data", (c: Buffer) => chunks.push(c))
      res.on("end", () => {
        const text = Buffer.concat(chunks).toString("utf8")
        let json: unknown
        try {
          json = text.length > 0 ? JSON.parse(text) : undefined
        } catch {
          json = undefined
        }
        resume(Effect.succeed({ status: res.statusCode ?? 0, headers: res.headers, text, json }))
      })
      res.on("error", (e) => resume(Effect.fail(e)))
    })
    req.on("error", (e) => resume(Effect.fail(e)))
    if (options.body !== undefined) {
      if (options.chunked) {
        // Several writes without Content-Length: node frames them as Transfer-Encoding: chunked.
        const body = Buffer.from(options.body)
        for (let i = 0; i < body.length; i += 8192) req.write(body.subarray(i, i + 8192))
      } else {
        req.setHeader("content-length", Buffer.byteLength(options.body))
        req.write(options.body)
      }
    }
    req.end()
  })
