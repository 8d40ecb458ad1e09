import { Either } from "effect"
import { SECP256K1_N } from "./Domain/Signature.ts"

/**
 * Start-up checks of the environment whose failures must read as one line naming the setting and the
 * fix (never a stack, never a secret): the SETTLEMENT_CONFIG file's JSON syntax, OPERATOR_KEY, and
 * DATABASE_URL (its form here; its reachability when the pool first connects, see Sql/Database.ts).
 * Nothing here echoes the text it judges: a config file holds the operator key, a URL its password.
 */

/** 1-based line and column of a character offset in `text`. */
const lineAndColumn = (text: string, offset: number) => {
  let line = 1
  let lineStart = 0
  for (let i = 0; i < offset && i < text.length; i++) {
    if (text.charCodeAt(i) === 0x0a) {
      line++
      lineStart = i + 1
    }
  }
  return { line, column: offset - lineStart + 1 }
}

/** A prefix JSON.parse refuses only because it ends early: the text is fine up to there. */
const endsEarly = (message: string) => /^Unexpected end of JSON input|^Unterminated string/.test(message)

const parseError = (text: string): string | undefined => {
  try {
    JSON.parse(text)
    return undefined
  } catch (e) {
    return e instanceof Error ? e.message : String(e)
  }
}

/**
 * Where JSON.parse stops on `text`: V8 names the offset for most errors ("… at position N"), not for an
 * unexpected token (its message quotes the text instead, so it is never shown). Without an offset, the
 * first offending character is found by bisection on prefixes: a prefix is fine while parsing it fails
 * only for ending early.
 */
const errorOffset = (text: string, message: string): number => {
  const at = /at position (\d+)/.exec(message)
  if (at) return Number(at[1])
  if (endsEarly(message)) return text.length
  let fine = 0
  let bad = text.length
  while (bad - fine > 1) {
    const mid = (fine + bad) >>> 1
    const m = parseError(text.slice(0, mid))
    if (m === undefined || endsEarly(m)) fine = mid
    else bad = mid
  }
  return bad - 1
}

/** What went wrong, in V8's words when they quote nothing of the text. */
const whatWentWrong = (message: string): string => {
  if (endsEarly(message) && message.startsWith("Unexpected end")) return "the file ends early"
  const plain = message
    .replace(/\s*\(line \d+ column \d+\)/, "")
    .replace(/\s*after JSON at position \d+.*$/, " after the end of the JSON value")
    .replace(/\s*in JSON at position \d+.*$/, "")
    .trim()
  return /["']/.test(plain.replace(/'[,}\]]'/g, "")) || plain.length === 0 || plain.startsWith("Unexpected token")
    ? "unexpected character"
    : plain
}

/** Parses a config file's text; on a syntax error, `line L, column C: what` (no text of the file). */
export const parseJsonText = (file: string): Either.Either<unknown, string> => {
  // A byte-order mark some editors write is not JSON, but not worth refusing a file for.
  const text = file.charCodeAt(0) === 0xfeff ? file.slice(1) : file
  const message = parseError(text)
  if (message === undefined) return Either.right(JSON.parse(text) as unknown)
  const { line, column } = lineAndColumn(text, errorOffset(text, message))
  return Either.left(`line ${line}, column ${column}: ${whatWentWrong(message)}`)
}

/** Why a string is not a usable private key (0x and 64 hex digits, an integer in [1, n - 1]), or undefined. */
export const privateKeyProblem = (key: string): string | undefined => {
  if (!/^0x[0-9a-fA-F]{64}$/.test(key)) return "must be a 0x-prefixed 32-byte hex private key (0x and 64 hex digits)"
  const k = BigInt(key)
  return k === 0n || k >= SECP256K1_N ? "is not a valid secp256k1 private key (out of range)" : undefined
}

/**
 * Why DATABASE_URL is not a PostgreSQL connection URL, or undefined. `postgres://user:password@host:port/db`
 * (or `postgresql://`); a socket directory may be given as `?host=/path` instead of a host.
 */
export const databaseUrlProblem = (url: string): string | undefined => {
  const fix = "expected postgres://user:password@host:5432/database (unset it to use the embedded PostgreSQL)"
  let parsed: URL
  try {
    parsed = new URL(url)
  } catch {
    return `is not a valid postgres URL: ${fix}`
  }
  if (parsed.protocol !== "postgres:" && parsed.protocol !== "postgresql:") {
    return `is not a valid postgres URL (scheme must be postgres:// or postgresql://): ${fix}`
  }
  if (parsed.hostname === "" && !parsed.searchParams.has("host")) {
    return `is not a valid postgres URL (no host): ${fix}`
  }
  return undefined
}

/** `host:port` of a PostgreSQL URL, without user or password (for messages). */
export const databaseEndpoint = (url: string): string => {
  try {
    const parsed = new URL(url)
    const host = parsed.hostname || parsed.searchParams.get("host") || "localhost"
    return `${host}:${parsed.port || "5432"}`
  } catch {
    return "(unparsable URL)"
  }
}

const CONNECT_REASONS: Record<string, string> = {
  ECONNREFUSED: "connection refused (nothing listens there)",
  ENOTFOUND: "host not found",
  EAI_AGAIN: "host name lookup failed",
  ETIMEDOUT: "connection timed out",
  EHOSTUNREACH: "host unreachable",
  ENETUNREACH: "network unreachable",
  ECONNRESET: "connection reset",
  "28P01": "password authentication failed",
  "28000": "the server refused this user",
  "3D000": "the database does not exist",
}

/** The first error code (errno or SQLSTATE) in a cause chain (AggregateErrors included). */
const codeOf = (cause: unknown, depth = 0): string | undefined => {
  if (cause === null || typeof cause !== "object" || depth > 5) return undefined
  const c = cause as { code?: unknown; cause?: unknown; errors?: unknown }
  if (typeof c.code === "string") return c.code
  if (Array.isArray(c.errors)) {
    for (const e of c.errors) {
      const code = codeOf(e, depth + 1)
      if (code !== undefined) return code
    }
  }
  return codeOf(c.cause, depth + 1)
}

/** One line for a failed first connection to DATABASE_URL: where, why, and what would fix it. */
export const describeDatabaseConnectFailure = (url: string, cause: unknown): string => {
  const code = codeOf(cause)
  const timedOut = code === undefined && /timed out/i.test(String((cause as { message?: unknown })?.message ?? ""))
  const reason =
    code !== undefined ? (CONNECT_REASONS[code] ?? `error ${code}`) : timedOut ? "connection timed out" : "failed"
  return (
    `DATABASE_URL: cannot connect to PostgreSQL at ${databaseEndpoint(url)}: ${reason}; ` +
    "start PostgreSQL there or fix DATABASE_URL (unset it to use the embedded PostgreSQL)"
  )
}

/** PostgreSQL's SQLSTATE for a missing privilege. */
const INSUFFICIENT_PRIVILEGE = "42501"

/**
 * One line for a start-up the database refused after connecting (a migration statement, the migrator's own
 * checks): where, PostgreSQL's first line, its SQLSTATE, and the fix. Never the statement or the driver's stack.
 */
export const describeDatabaseStartFailure = (url: string, cause: unknown): string => {
  const code = codeOf(cause)
  const message = (cause as { message?: unknown })?.message
  const said = (typeof message === "string" && message !== "" ? message : "failed").split("\n")[0]!.slice(0, 200)
  const fix =
    code === INSUFFICIENT_PRIVILEGE
      ? "grant this role CREATE on the database's schema (or connect as its owner) or fix DATABASE_URL"
      : "fix the database or DATABASE_URL (unset it to use the embedded PostgreSQL)"
  return (
    `DATABASE_URL: PostgreSQL at ${databaseEndpoint(url)} refused the service's migrations: ${said}` +
    `${code === undefined ? "" : ` (SQLSTATE ${code})`}; ${fix}`
  )
}

/**
 * One line for a listening socket that could not be opened (the API's PORT, RUNNER_PORT, OPERATOR_PORT): the
 * address, the variable that sets it and the fix, from the Node error's code alone (its message and stack stay
 * out). `hint` says what else the variable accepts (e.g. "0 picks one").
 */
export const describeListenFailure = (
  setting: { readonly port: string; readonly host: string },
  address: { readonly host: string; readonly port: number },
  cause: unknown,
  hint?: string,
): string => {
  const code = codeOf(cause)
  const free = `set ${setting.port} to a free port${hint === undefined ? "" : ` (${hint})`}`
  return code === "EADDRINUSE"
    ? `${setting.port} ${address.port} is already in use on ${address.host}: stop the other process or ${free}`
    : `${setting.host}/${setting.port} ${address.host}:${address.port}: cannot listen (${code ?? "failed"}); ` +
        `set ${setting.host} to a local address and ${free}`
}
