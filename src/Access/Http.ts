import { HttpApiBuilder } from "@effect/platform"
import { Effect, Layer } from "effect"
import { Access } from "../Access.ts"
import { Api } from "../Http/Api.ts"
import { requireAdmin } from "../Http/Guards.ts"

export const AccessHandlers = HttpApiBuilder.group(Api, "access", (handlers) =>
  Effect.gen(function* () {
    const access = yield* Access
    return handlers.handle("setAccess", ({ path, payload }) =>
      Effect.flatMap(requireAdmin, (admin) =>
        access.grant({ master: path.address, access: payload.access, by: admin.master }),
      ),
    )
  }),
).pipe(Layer.provide(Access.Default))
