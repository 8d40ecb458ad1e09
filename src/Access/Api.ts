import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Address } from "../Domain/Primitives.ts"
import { Forbidden } from "../Http/Errors.ts"
import { RequestBody } from "../Http/RequestBody.ts"
import { Authentication } from "../Http/Security.ts"

export const AccessValue = Schema.Literal("granted", "required", "suspended")

/** The app's beta-access grant. Admin sessions only. */
export class AccessApi extends HttpApiGroup.make("access")
  .add(
    HttpApiEndpoint.put("setAccess", "/v1/admin/access/:address")
      .setPath(Schema.Struct({ address: Address }))
      .setPayload(RequestBody("SetAccessRequest", { access: AccessValue }))
      .addSuccess(Schema.Struct({ master_address: Schema.String, access: AccessValue }))
      .addError(Forbidden)
      .annotate(OpenApi.Description, "Grants, requires or suspends an account's beta access."),
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Access") {}
