// HTTP plumbing shared by the venue simulators: bodies, answers, and the two parameter encodings the venues use
// (Hyperliquid JSON, Aster application/x-www-form-urlencoded with order preserved).
import type { IncomingMessage, ServerResponse } from "node:http"

/** What a simulator route answers. */
export interface SimResponse {
  readonly status: number
  readonly body: string
  readonly contentType: string
}

export const jsonResponse = (status: number, value: unknown): SimResponse => ({
  status,
  body: JSON.stringify(value),
  contentType: "application/json",
})

export const textResponse = (status: number, text: string): SimResponse => ({
  status,
  body: text,
  contentType: "text/plain; charset=utf-8",
})

/** Reads the whole request body as UTF-8, refusing more than `limit` bytes. */
export const readBody = (req: IncomingMessage, limit = 1 << 20): Promise<string> =>
  new Promise((resolve, reject) => {
    const chunks: Array<Buffer> = []
    let size = 0
    req.on("data", (chunk: Buffer) => {
      size += chunk.length
      if (size > limit) {
        reject(new Error("body too large"))
        req.destroy()
        return
      }
      chunks.push(chunk)
    })
    req.on("end", () => resolve(Buffer.concat(chunks).toString("utf8")))
    req.on("error", reject)
  })

export const send = (res: ServerResponse, response: SimResponse): void => {
  res.writeHead(response.status, {
    "content-type": response.contentType,
    "content-length": Buffer.byteLength(response.body),
  })
  res.end(response.body)
}

/** One decoded form parameter, with its raw (still encoded) text. */
export interface FormParam {
  readonly key: string
  readonly value: string
}

const decode = (s: string): string => decodeURIComponent(s.replace(/\+/g, " "))

/** Splits `a=1&b=2` keeping order and duplicates; undefined when a component is not valid percent-encoding. */
export const parseForm = (text: string): ReadonlyArray<FormParam> | undefined => {
  if (text === "") return []
  try {
    return text.split("&").map((part) => {
      const i = part.indexOf("=")
      return i < 0
        ? { key: decode(part), value: "" }
        : { key: decode(part.slice(0, i)), value: decode(part.slice(i + 1)) }
    })
  } catch {
    return undefined
  }
}
