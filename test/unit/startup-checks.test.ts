import { Either } from "effect"
import { describe, expect, it } from "vitest"
import {
  databaseUrlProblem,
  describeDatabaseConnectFailure,
  parseJsonText,
  privateKeyProblem,
} from "../../src/StartupChecks.ts"

/** The syntax error's description, or undefined when the text parses. */
const syntaxError = (text: string) =>
  Either.match(parseJsonText(text), { onLeft: (where) => where, onRight: () => undefined })

describe("start-up checks", () => {
  it("a JSON syntax error is located by line and column, without quoting the file", () => {
    expect(parseJsonText('{"a": 1}')).toEqual(Either.right({ a: 1 }))
    expect(parseJsonText('\uFEFF{"a": 1}')).toEqual(Either.right({ a: 1 }))
    expect(syntaxError('{\n  "a": 1\n  "b": 2\n}')).toEqual(
      "line 3, column 3: Expected ',' or '}' after property value",
    )
    // V8 quotes the text around an unexpected token: never shown, the place (here the "," ending "tru") is
    // found by bisection.
    const secret = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"
    const token = syntaxError(`{\n  "key": "${secret}", "x": tru,\n  "y": 1\n}`)
    expect(token).toEqual("line 2, column 88: unexpected character")
    expect(syntaxError(`{"key": "${secret}`)).toEqual("line 1, column 76: Unterminated string")
    expect(syntaxError("")).toEqual("line 1, column 1: the file ends early")
    expect(syntaxError('{"a": 1}\n}')).toEqual(
      "line 2, column 1: Unexpected non-whitespace character after the end of the JSON value",
    )
  })

  it("OPERATOR_KEY: form and range", () => {
    expect(privateKeyProblem(`0x${"11".repeat(32)}`)).toBeUndefined()
    expect(privateKeyProblem("11".repeat(32))).toMatch(/0x-prefixed 32-byte hex/)
    expect(privateKeyProblem(`0x${"1".repeat(63)}`)).toMatch(/0x-prefixed 32-byte hex/)
    expect(privateKeyProblem(`0x${"0".repeat(64)}`)).toMatch(/out of range/)
    expect(privateKeyProblem(`0x${"f".repeat(64)}`)).toMatch(/out of range/)
  })

  it("DATABASE_URL: a postgres URL with a host or a socket directory", () => {
    expect(databaseUrlProblem("postgres://u:p@db.example:5432/app")).toBeUndefined()
    expect(databaseUrlProblem("postgresql://localhost/app")).toBeUndefined()
    expect(databaseUrlProblem("postgres:///app?host=/var/run/postgresql")).toBeUndefined()
    for (const bad of ["notaurl", "", "mysql://u:p@h/db", "postgres://", "http://h/db"]) {
      expect(databaseUrlProblem(bad)).toMatch(/^is not a valid postgres URL/)
    }
  })

  it("a failed first connection names DATABASE_URL, the endpoint, the reason, never the password", () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:1"), { code: "ECONNREFUSED" })
    const line = describeDatabaseConnectFailure("postgres://u:s3cret@127.0.0.1:1/db", refused)
    expect(line).toBe(
      "DATABASE_URL: cannot connect to PostgreSQL at 127.0.0.1:1: connection refused (nothing listens there); " +
        "start PostgreSQL there or fix DATABASE_URL (unset it to use the embedded PostgreSQL)",
    )
    const auth = Object.assign(new Error("password authentication failed for user"), { code: "28P01" })
    expect(describeDatabaseConnectFailure("postgres://u:s3cret@db/app", auth)).toContain(
      "db:5432: password authentication failed",
    )
    const aggregate = Object.assign(new AggregateError([refused]), {})
    expect(describeDatabaseConnectFailure("postgres://localhost/app", aggregate)).toContain("connection refused")
    expect(describeDatabaseConnectFailure("postgres://h/app", new Error("Connection timed out"))).toContain(
      "connection timed out",
    )
  })
})
