// The contract between the generic simulator server (VenueSimulator.ts) and one venue's behaviour.
import type { Address } from "viem"
import type { SimResponse } from "./SimHttp.ts"

export interface SimRequest {
  readonly method: string
  readonly path: string
  /** Raw query string without "?" (still encoded). */
  readonly query: string
  /** Raw body text. */
  readonly body: string
  readonly contentType: string
}

export interface SimRoute {
  /** Faults with scope "write" hit state-changing routes, "read" the others. */
  readonly kind: "write" | "read"
  readonly handle: (request: SimRequest) => Promise<SimResponse>
}

export interface VenueBehaviour {
  readonly route: (method: string, path: string) => SimRoute | undefined
  /** The venue's clear-refusal answer (a refuse fault). */
  readonly refusal: (message: string) => SimResponse
  /** The answer after applying a request whose outcome the client cannot know (an acceptThenError fault). */
  readonly unknownError: () => SimResponse
  readonly credit: (user: Address, amount: bigint, book: string) => void
  readonly balance: (user: Address, book: string) => bigint
  /** JSON-safe state for tests and `POST /_control {op:"state"}`. */
  readonly snapshot: () => unknown
  readonly syncDeposits: () => Promise<void>
  readonly stop: () => void
}
