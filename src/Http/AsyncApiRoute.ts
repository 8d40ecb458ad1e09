/** `GET /v1/asyncapi.json`: the AsyncAPI 3 document of /v1/stream (src/Stream/AsyncApi.ts), beside /v1/openapi.json. */
import { HttpApiBuilder, HttpServerResponse } from "@effect/platform"
import { asyncApiDocument } from "../Stream/AsyncApi.ts"

export const ASYNCAPI_PATH = "/v1/asyncapi.json"

export const AsyncApiLive = HttpApiBuilder.Router.use((router) => {
  const document = asyncApiDocument()
  return router.get(ASYNCAPI_PATH, HttpServerResponse.json(document))
})
