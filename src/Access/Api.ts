import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { Address } from "../Domain/Primitives.ts"
import { Forbidden } from "../Http/Errors.ts"
import { RequestBody } from "../Http/RequestBody.ts"
import { Authentication } from "../Http/SecurityContract.ts"

export const AccessValue = Schema.Literal("granted", "required", "suspended")

/** The app's beta-access grant. Admin sessions only. */
export class AccessApi extends HttpApiGroup.make("access")
  .add(
    HttpApiEndpoint.put("setAccess", "/v1/admin/access/:address")
      .setPath(Schema.Struct({ address: Address }))
      .setPayload(
        RequestBody("SetAccessRequest", { access: AccessValue }).annotations({ examples: [{ access: "granted" }] }),
      )
      .addSuccess(
        Schema.Struct({ master_address: Schema.String, access: AccessValue }).annotations({
          examples: [{ master_address: "0x70997970c51812dc3a010c7d01b50e0d17dc79c8", access: "granted" }],
        }),
      )
      .addError(Forbidden)
      .annotate(OpenApi.Summary, "Set an account's beta access")
      .annotate(
        OpenApi.Description,
        "Sets the beta access of the account whose master is `address` (answered lowercase): `granted` lets it " +
          "make new commitments (orders, takes, transfers, withdrawals, closes); `required` and `suspended` make " +
          "them answer 403 ACCESS_REQUIRED (checked when a commitment is made, from the next request on). An " +
          "address that has not signed in yet gets its account now and keeps this access at its first sign-in. " +
          "Setting the same value again answers the same; every call is journaled (account.access_changed, with " +
          "the admin who set it).\n\n" +
          "Admin sessions only (the deployment's `admins`): another session or a maker credential gets 403 " +
          "FORBIDDEN.",
      ),
  )
  .middleware(Authentication)
  .annotate(OpenApi.Title, "Access") {}
