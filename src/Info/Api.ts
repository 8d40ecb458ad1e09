import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { InfoBody, VenuesBody } from "./Body.ts"

export class InfoApi extends HttpApiGroup.make("info")
  .add(
    HttpApiEndpoint.get("info", "/v1/info")
      .addSuccess(InfoBody)
      .annotate(OpenApi.Description, "The deployment's own values. Not a trust root for signing."),
  )
  .add(HttpApiEndpoint.get("venues", "/v1/venues").addSuccess(VenuesBody))
  .annotate(OpenApi.Title, "Deployment") {}
