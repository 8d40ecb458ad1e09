/**
 * The API reference stands alone (issue 18 item 3): the generated OpenAPI document lints clean with Redocly's
 * recommended rules, every operation has a summary, a description and examples of what it takes and answers, the
 * guide walks through sign-in, linking, a transfer and a close, and sessions and maker credentials are separate
 * schemes. Which routes accept which scheme is held to behaviour in auth-matrix.test.ts.
 */
import { spawnSync } from "node:child_process"
import { mkdtempSync, rmSync, writeFileSync } from "node:fs"
import { createRequire } from "node:module"
import { tmpdir } from "node:os"
import { dirname, join } from "node:path"
import { OpenApi } from "@effect/platform"
import { describe, expect, it } from "vitest"
import { Api } from "../../src/Http/Api.ts"

type Json = Record<string, unknown>
const spec = OpenApi.fromApi(Api) as unknown as Json
const schemas = ((spec.components as Json).schemas ?? {}) as Record<string, Json>
const paths = spec.paths as Record<string, Record<string, Json>>
const operations = Object.entries(paths).flatMap(([path, methods]) =>
  Object.entries(methods).map(([method, op]) => ({ name: `${method.toUpperCase()} ${path}`, op })),
)

/** A schema with its $ref followed. */
const resolve = (schema: Json | undefined): Json | undefined => {
  const ref = schema?.$ref as string | undefined
  return ref === undefined ? schema : resolve(schemas[ref.replace("#/components/schemas/", "")])
}
/** Examples on the schema, or, for an answer that is one of several schemas (anyOf), on every one of them. */
const hasExample = (schema: Json | undefined): boolean => {
  const s = resolve(schema)
  if (s === undefined) return false
  if (Array.isArray(s.anyOf) && s.examples === undefined) return s.anyOf.every((m) => hasExample(m as Json))
  return Array.isArray(s.examples) ? s.examples.length > 0 : s.example !== undefined
}
const jsonSchemaOf = (content: unknown) => ((content as Json | undefined)?.["application/json"] as Json)?.schema as Json

describe("OpenAPI document", () => {
  it("every operation has a summary, a description and examples of its request body and success answer", () => {
    const missing = operations.flatMap(({ name, op }) => {
      const problems: Array<string> = []
      if (typeof op.summary !== "string" || op.summary.length === 0) problems.push("summary")
      if (typeof op.description !== "string" || op.description.length === 0) problems.push("description")
      const body = jsonSchemaOf((op.requestBody as Json | undefined)?.content)
      if (body !== undefined && !hasExample(body)) problems.push("request example")
      const responses = (op.responses ?? {}) as Record<string, Json>
      for (const [status, response] of Object.entries(responses)) {
        const schema = jsonSchemaOf(response.content)
        if (status.startsWith("2") && schema !== undefined && !hasExample(schema)) problems.push(`${status} example`)
      }
      return problems.length === 0 ? [] : [`${name}: ${problems.join(", ")}`]
    })
    expect(missing).toEqual([])
  })

  it("names a session scheme and a credential scheme, never one bearer for both", () => {
    const schemes = (spec.components as Json).securitySchemes as Json
    expect(Object.keys(schemes).sort()).toEqual(["credential", "session"])
    const used = new Set(
      operations.flatMap(({ op }) => ((op.security ?? []) as Array<Json>).flatMap((r) => Object.keys(r))),
    )
    expect([...used].sort()).toEqual(["credential", "session"])
  })

  it("opens with a guide through sign-in, linking, a transfer and a close", () => {
    const description = (spec.info as Json).description as string
    for (const section of ["Sign in", "Link a venue account", "Move funds across venues", "Close escrowed funds"]) {
      expect(description).toContain(section)
    }
  })

  it("lints with Redocly's recommended rules without an error", () => {
    const dir = mkdtempSync(join(tmpdir(), "openapi-"))
    try {
      const file = join(dir, "openapi.json")
      writeFileSync(file, JSON.stringify(spec))
      const cli = join(dirname(createRequire(import.meta.url).resolve("@redocly/cli/package.json")), "bin/cli.js")
      const run = spawnSync(process.execPath, [cli, "lint", file, "--format=json"], {
        encoding: "utf8",
        env: { ...process.env, REDOCLY_TELEMETRY: "off", REDOCLY_SUPPRESS_UPDATE_NOTICE: "true" },
        timeout: 60_000,
      })
      const report = JSON.parse(run.stdout) as {
        totals: { errors: number }
        problems: Array<{ ruleId: string; severity: string; message: string; location: Array<{ pointer: string }> }>
      }
      const errors = report.problems
        .filter((p) => p.severity === "error")
        .map((p) => `${p.ruleId} at ${p.location[0]?.pointer}: ${p.message}`)
      expect(errors).toEqual([])
      expect(report.totals.errors).toBe(0)
    } finally {
      rmSync(dir, { recursive: true, force: true })
    }
  })
})
