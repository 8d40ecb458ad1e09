import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { HealthDegraded, HealthOk } from "../Domain/Health.ts"

export class HealthApi extends HttpApiGroup.make("health")
  .add(
    HttpApiEndpoint.get("health", "/health")
      .addSuccess(HealthOk)
      .addError(HealthDegraded)
      .annotate(OpenApi.Description, "Readiness: 200 when ready, else 503 with the same body."),
  )
  .add(
    HttpApiEndpoint.get("live", "/health/live")
      .addSuccess(Schema.Struct({ status: Schema.Literal("live") }))
      .annotate(OpenApi.Description, "Process liveness only."),
  )
  .annotate(OpenApi.Title, "Health") {}
