import { HttpApi } from "@effect/platform"

export interface Route {
  readonly method: string
  readonly path: string
  /** The endpoint declares a request body (a payload schema). */
  readonly payload?: boolean
}

/** The routes an API declares, for telling 405 (path known, other method) from 404. */
export const routesOf = (api: HttpApi.HttpApi.Any): Array<Route> => {
  const routes: Array<Route> = []
  HttpApi.reflect(api as HttpApi.HttpApi<string, never, never, never>, {
    onGroup: () => {},
    onEndpoint: ({ endpoint }) =>
      routes.push({ method: endpoint.method, path: endpoint.path, payload: endpoint.payloadSchema._tag === "Some" }),
  })
  return routes
}

/** Whether a request is for a POST/PUT/PATCH/DELETE route that declares no body (its path and method). */
export const bodilessRoute = (routes: ReadonlyArray<Route>) => {
  const compiled = routes
    .filter((r) => r.payload === false && r.method !== "GET" && r.method !== "HEAD")
    .map((r) => ({ method: r.method, re: toRegExp(r.path) }))
  return (method: string, pathname: string): boolean => compiled.some((r) => r.method === method && r.re.test(pathname))
}

const toRegExp = (path: string) =>
  new RegExp(`^${path.replace(/[.*+?^${}()|[\]\\]/g, "\\$&").replace(/:[A-Za-z_][A-Za-z0-9_]*/g, "[^/]+")}/?$`)

/** Methods allowed on a path, or an empty list when no route has that path. */
export const allowedMethods = (routes: ReadonlyArray<Route>) => {
  const compiled = routes.map((r) => ({ method: r.method, re: toRegExp(r.path) }))
  return (pathname: string): Array<string> => [
    ...new Set(compiled.filter((r) => r.re.test(pathname)).map((r) => r.method)),
  ]
}

/** Routes served outside the HttpApi contract (documents and the stream WebSocket). */
export const RAW_ROUTES: ReadonlyArray<Route> = [
  { method: "GET", path: "/v1/openapi.json" },
  { method: "GET", path: "/v1/asyncapi.json" },
  { method: "GET", path: "/v1/docs" },
  { method: "GET", path: "/v1/stream" },
]
