import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { InfoBody, VenuesBody } from "./Body.ts"

export class InfoApi extends HttpApiGroup.make("info")
  .add(
    HttpApiEndpoint.get("info", "/v1/info")
      .addSuccess(InfoBody)
      .annotate(OpenApi.Summary, "Show the deployment's values")
      .annotate(
        OpenApi.Description,
        "The deployment's own values. Not a trust root for signing: check escrow addresses, chain ids and tokens " +
          "against your own reviewed configuration before you sign anything they appear in. Public (no bearer, " +
          "not charged). Fixed for the process lifetime except `server_time` (now).\n\n" +
          "`operator`: the service's operator address (it relays every transaction and pays gas). `limits`: each " +
          "session's or credential's request budget (`requests_per_second`, `request_burst`), the body limit in " +
          "bytes, `batch_orders` (configured; no route takes a batch of orders), the lease bounds in seconds " +
          "(configured; PUT /v1/quote-identities/{id}/lease takes 5 to 120), a quote set's longest validity in " +
          "seconds, the most parts a take is split into, the taker's pay window in seconds and the largest " +
          "single fill (`fill_max`, token base units, a decimal string). `settlement`: timeouts and cutoffs in seconds " +
          "(settlement v2's are the v2 escrows' immutables). `chains`: per venue its chain id, token (symbol, " +
          "decimals), escrow and the escrow's deployment block (a decimal string). `access`: `open` (accounts " +
          "start `granted`) or `beta` (an admin grants access), and the captcha site key (empty when none).",
      ),
  )
  .add(
    HttpApiEndpoint.get("venues", "/v1/venues")
      .addSuccess(VenuesBody)
      .annotate(OpenApi.Summary, "List the configured venues")
      .annotate(
        OpenApi.Description,
        "Every venue this deployment settles between, in its configured order: `id` (the venue id every other " +
          "route takes), display `name`, `kind` (the venue's protocol: `hyperliquid` or `aster`), its chain id, " +
          "token (symbol, decimals), escrow and the escrow's deployment block (a decimal string). Public (no " +
          "bearer, not charged); fixed for the process lifetime. Not a trust root for signing.",
      ),
  )
  .annotate(OpenApi.Title, "Deployment") {}
