import { HttpApiBuilder, HttpServerRequest } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Auth } from "../Auth.ts"
import { RateLimited } from "../Domain/Errors.ts"
import { Api } from "../Http/Api.ts"
import { ClientIdentity } from "../Http/ClientIdentity.ts"
import { retryAfter } from "../Http/Security.ts"

export const AuthHandlers = HttpApiBuilder.group(Api, "auth", (handlers) =>
  Effect.gen(function* () {
    const auth = yield* Auth
    const identity = yield* ClientIdentity
    return handlers
      .handle("challenge", ({ payload }) =>
        Effect.gen(function* () {
          // The budgets first (the client's by its key from the request, then per address and global).
          const client = identity.of(yield* HttpServerRequest.HttpServerRequest)
          const decision = yield* auth.admitChallenge(client.key, payload.address)
          if (!decision.allowed) {
            yield* retryAfter(decision.retryAfterSeconds)
            return yield* new RateLimited({ message: `too many challenges; retry in ${decision.retryAfterSeconds} s` })
          }
          return yield* auth.challenge({ address: payload.address, venue: payload.venue })
        }),
      )
      .handle("verify", ({ payload }) => auth.verify({ nonce: payload.nonce, signature: payload.signature }))
  }),
).pipe(Layer.provide(Auth.Default))
