/**
 * A scripted HttpClient for venue adapter unit tests: records every request (method, URL, body text) and answers
 * each from a handler: a status and body, a transport failure, or no answer at all (hangs until interrupted).
 */
import { HttpClient, HttpClientError, type HttpClientRequest, HttpClientResponse } from "@effect/platform"
import { Effect, Layer } from "effect"

export interface RecordedRequest {
  readonly method: string
  readonly url: string
  readonly contentType: string | undefined
  readonly body: string
}

export type FakeAnswer = { readonly status: number; readonly body: string } | { readonly transport: string } | "hang"

const bodyText = (request: HttpClientRequest.HttpClientRequest): string =>
  request.body._tag === "Uint8Array" ? new TextDecoder().decode(request.body.body) : ""

export const fakeVenueHttp = (handler: (request: RecordedRequest) => FakeAnswer) => {
  const requests: Array<RecordedRequest> = []
  const client = HttpClient.make((request, url) => {
    const recorded: RecordedRequest = {
      method: request.method,
      url: url.toString(),
      contentType: request.body._tag === "Uint8Array" ? request.body.contentType : undefined,
      body: bodyText(request),
    }
    requests.push(recorded)
    const answer = handler(recorded)
    if (answer === "hang") return Effect.never
    if ("transport" in answer) {
      const cause = Object.assign(new TypeError("fetch failed"), { cause: { code: answer.transport } })
      return Effect.fail(new HttpClientError.RequestError({ request, reason: "Transport", cause }))
    }
    return Effect.succeed(HttpClientResponse.fromWeb(request, new Response(answer.body, { status: answer.status })))
  })
  return { requests, layer: Layer.succeed(HttpClient.HttpClient, client) }
}

export const json = (status: number, value: unknown): FakeAnswer => ({ status, body: JSON.stringify(value) })
