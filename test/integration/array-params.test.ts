import { SqlClient } from "@effect/sql"
import { describe, expect, it } from "@effect/vitest"
import { Effect, Layer } from "effect"
import { arrayLiteral, bindArrays } from "../../src/Sql/ArrayParams.ts"
import { pgClientLayer } from "../../src/Sql/Notifications.ts"
import { testDatabaseUrl } from "../support/Database.ts"

/** src/Sql/ArrayParams.ts: the pool writes flat array parameters itself; PostgreSQL must read back what was sent. */

const Pool = Layer.unwrapScoped(
  Effect.map(testDatabaseUrl, (url) => pgClientLayer({ url, maxConnections: 1, applicationName: "array-params" })),
)

/** Elements array_in treats specially unquoted: whitespace, delimiters, quotes, escapes, NULL in any case, empty. */
const TRICKY = [
  "0xAbC123",
  "plain_text.with:colons+and-dashes",
  "",
  " padded ",
  "two words",
  "a,b",
  "{braces}",
  'quo"te',
  "back\\slash",
  "NULL",
  "null",
  "NuLl",
  "nullish",
  "tab\there",
  "line\nbreak",
  "ünïcødé",
  "[1:1]={x}",
]

describe("array parameters as literals (src/Sql/ArrayParams.ts)", () => {
  it("writes scalars unquoted only where array_in reads them back unchanged", () => {
    expect(arrayLiteral(["0xab", "12", null, "NULL", "", "a b", 'q"', "b\\s"])).toBe(
      '{0xab,12,NULL,"NULL","","a b","q\\"","b\\\\s"}',
    )
    expect(arrayLiteral([1, 2.5, -3n, true, undefined])).toBe("{1,2.5,-3,true,NULL}")
    expect(arrayLiteral([])).toBe("{}")
    // Not scalars: left to pg's writer.
    expect(arrayLiteral([[1], [2]])).toBeUndefined()
    expect(arrayLiteral([new Date(0)])).toBeUndefined()
    const buffer = Buffer.from("ab")
    expect(bindArrays([1, "x", [buffer], null, ["y"]])).toEqual([1, "x", [buffer], null, "{y}"])
  })

  it.scoped("PostgreSQL reads every array back as sent, through the service's pool", () =>
    Effect.gen(function* () {
      const sql = yield* SqlClient.SqlClient
      const withNull = [...TRICKY, null]
      // Twice: the second run is a named statement (PreparedStatements.ts), the first unnamed.
      for (let i = 0; i < 2; i++) {
        const [texts] = yield* sql<{ a: Array<string | null> }>`select ${withNull}::text[] as a`
        expect(texts!.a).toEqual(withNull)
      }
      const numbers = [
        "1",
        "-2",
        "3.25",
        "1e+21",
        "NaN",
        "115792089237316195423570985008687907853269984665640564039457",
      ]
      const [n] = yield* sql<{ a: Array<string> }>`select ${numbers}::numeric[]::text[] as a`
      expect(n!.a).toEqual(["1", "-2", "3.25", "1000000000000000000000", "NaN", numbers[5]])
      const [b] = yield* sql<{ a: Array<boolean | null> }>`select ${[true, false, null]}::bool[] as a`
      expect(b!.a).toEqual([true, false, null])
      const [i] = yield* sql<{ a: Array<string> }>`select ${[1, 2n, -3]}::bigint[]::text[] as a`
      expect(i!.a).toEqual(["1", "2", "-3"])
    }).pipe(Effect.provide(Pool)),
  )
})
