/**
 * The house's import rules (DESIGN §3, issue 22 item 4), read off the source files:
 * - imports flow one way: Domain ← Chain, Venues, Sql, Cluster ← concepts (their services, repositories and entity
 *   protocols) ← actors ← HTTP (every concept's Api.ts and Http.ts, src/Http) and Stream ← main;
 * - no import cycles;
 * - a repository (a concept file that writes SQL) calls no chain, and the chain layer reads no repository;
 * - Stream does not import HTTP; only the composition root imports actors/;
 * - the typed client and the contract it is made from load no Node-only module and no server code (issue 18 item 1:
 *   a browser app imports them).
 */
import { readdirSync, readFileSync, statSync } from "node:fs"
import { dirname, join, normalize, relative } from "node:path"
import { fileURLToPath } from "node:url"
import { describe, expect, it } from "vitest"

const root = normalize(join(dirname(fileURLToPath(import.meta.url)), "../.."))

/** The spec's concepts, each a module `src/<Concept>.ts` with its folder `src/<Concept>/`. */
const CONCEPTS = [
  "Auth",
  "Accounts",
  "Access",
  "QuoteIdentities",
  "Credentials",
  "Orders",
  "Takes",
  "Settlement",
  "Transfers",
  "Withdrawals",
  "Escrow",
  "Trades",
  "Health",
  "Info",
  "Relayer",
] as const

const TIERS = ["domain", "infrastructure", "concepts", "actors", "edge", "main"] as const
type Tier = (typeof TIERS)[number]

const DOMAIN_FILES = new Set([
  "src/Config.ts",
  "src/DevelopmentConfig.ts",
  "src/SecureRandom.ts",
  "src/StartupChecks.ts",
  "src/FreePort.ts",
  "src/Observability/Log.ts",
  "src/Observability/Metrics.ts",
  "src/Observability/Tracing.ts",
])

/** A concept's HTTP side: its contract and its handlers. */
const isConceptEdge = (file: string) => /^src\/[A-Za-z]+\/(Api|Http|[A-Za-z]+Http)\.ts$/.test(file)

const conceptOf = (file: string): string | undefined =>
  CONCEPTS.find((c) => file === `src/${c}.ts` || file.startsWith(`src/${c}/`))

const tierOf = (file: string): Tier => {
  if (file.startsWith("actors/")) return "actors"
  if (file === "src/main.ts" || file === "src/ChainLive.ts") return "main"
  if (file.startsWith("src/Domain/") || DOMAIN_FILES.has(file)) return "domain"
  if (/^src\/(Chain|Venues|Sql|Cluster)\//.test(file) || file === "src/Cluster.ts") return "infrastructure"
  if (conceptOf(file) !== undefined) return isConceptEdge(file) ? "edge" : "concepts"
  if (/^src\/(Http|Stream|Observability|Client)\//.test(file) || file === "src/Stream.ts") return "edge"
  throw new Error(`${file}: no tier; add it to test/unit/import-flow.test.ts`)
}

const sourceFiles = (dir: string): Array<string> =>
  readdirSync(join(root, dir)).flatMap((name) => {
    const path = `${dir}/${name}`
    if (statSync(join(root, path)).isDirectory()) return name === "artifacts" ? [] : sourceFiles(path)
    return path.endsWith(".ts") ? [path] : []
  })

const FILES = [...sourceFiles("src"), ...sourceFiles("actors")]

/** Relative imports (static, `export … from`, dynamic) of a file, as repository paths; type-only ones included. */
const importsOf = (file: string): Array<string> => {
  const text = readFileSync(join(root, file), "utf8")
  const specs = [...text.matchAll(/(?:from\s+|import\s*\(\s*|^import\s+)["'](\.{1,2}\/[^"']+)["']/gm)].map((m) => m[1]!)
  return specs.map((s) => relative(root, normalize(join(root, dirname(file), s))))
}

const GRAPH = new Map(FILES.map((f) => [f, importsOf(f).filter((t) => t.endsWith(".ts"))]))

/** Chain modules that reach a node (reads, sends, deployment checks), as opposed to pure encoding and decoding. */
const CHAIN_CALLS = /^src\/Chain\/(ChainClients|TokenReads|RpcError|LegacyScan|EscrowV2Check)\.ts$/

describe("import flow", () => {
  it("every file has a tier", () => {
    expect(() => FILES.forEach(tierOf)).not.toThrow()
  })

  it("imports flow Domain ← Chain, Venues, Sql ← concepts ← actors ← HTTP, Stream ← main", () => {
    const upward = [...GRAPH].flatMap(([file, targets]) =>
      targets
        .filter((t) => t.startsWith("src/") || t.startsWith("actors/"))
        .filter((t) => TIERS.indexOf(tierOf(t)) > TIERS.indexOf(tierOf(file)))
        .map((t) => `${file} (${tierOf(file)}) → ${t} (${tierOf(t)})`),
    )
    expect(upward).toEqual([])
  })

  it("has no import cycles", () => {
    const cycles: Array<string> = []
    const state = new Map<string, "open" | "done">()
    const stack: Array<string> = []
    const visit = (file: string) => {
      state.set(file, "open")
      stack.push(file)
      for (const target of GRAPH.get(file) ?? []) {
        if (!GRAPH.has(target)) continue
        if (state.get(target) === "open") cycles.push([...stack.slice(stack.indexOf(target)), target].join(" → "))
        else if (state.get(target) === undefined) visit(target)
      }
      stack.pop()
      state.set(file, "done")
    }
    for (const file of GRAPH.keys()) if (state.get(file) === undefined) visit(file)
    expect(cycles).toEqual([])
  })

  it("a repository calls no chain; the chain layer reads no repository", () => {
    // A repository writes SQL (a tagged `sql` template or sql.unsafe); a service that only captures the client to
    // provide it to repository calls, or opens a transaction around them, is not one.
    const runsSql = (file: string) => /\bsql(<[^>]*>)?`|\bsql\.unsafe\(/.test(readFileSync(join(root, file), "utf8"))
    const repositoriesCallingChains = FILES.filter((f) => tierOf(f) === "concepts" && runsSql(f)).flatMap((f) =>
      (GRAPH.get(f) ?? []).filter((t) => CHAIN_CALLS.test(t)).map((t) => `${f} → ${t}`),
    )
    const chainReadingRepositories = FILES.filter((f) => f.startsWith("src/Chain/")).flatMap((f) =>
      (GRAPH.get(f) ?? [])
        .filter((t) => tierOf(t) !== "domain" && !t.startsWith("src/Chain/"))
        .map((t) => `${f} → ${t}`),
    )
    expect({ repositoriesCallingChains, chainReadingRepositories }).toEqual({
      repositoriesCallingChains: [],
      chainReadingRepositories: [],
    })
  })

  it("Stream does not import HTTP; only the composition root imports actors/", () => {
    const streamToHttp = FILES.filter((f) => f.startsWith("src/Stream/") || f === "src/Stream.ts").flatMap((f) =>
      (GRAPH.get(f) ?? []).filter((t) => t.startsWith("src/Http/") || isConceptEdge(t)).map((t) => `${f} → ${t}`),
    )
    const actorImporters = FILES.filter((f) => !f.startsWith("actors/") && f !== "src/main.ts").flatMap((f) =>
      (GRAPH.get(f) ?? []).filter((t) => t.startsWith("actors/")).map((t) => `${f} → ${t}`),
    )
    expect({ streamToHttp, actorImporters }).toEqual({ streamToHttp: [], actorImporters: [] })
  })

  it("every concept has its module and folder", () => {
    const missing = CONCEPTS.flatMap((c) => (FILES.includes(`src/${c}.ts`) ? [] : [`src/${c}.ts`]))
    expect(missing).toEqual([])
  })

  it("the typed clients and the contract load no Node-only module and no server code", () => {
    // Value imports only: `import type` is erased and loads nothing.
    const valueImports = (file: string) =>
      [
        ...readFileSync(join(root, file), "utf8").matchAll(
          /^(?:import|export)\s+(?!type\b)[^;]*?from\s+["']([^"']+)["']/gm,
        ),
      ].map((m) => m[1]!)
    const closure = new Set<string>()
    const visit = (file: string) => {
      if (closure.has(file)) return
      closure.add(file)
      for (const spec of valueImports(file)) {
        if (!spec.startsWith(".")) continue
        const target = relative(root, normalize(join(root, dirname(file), spec)))
        if (target.endsWith(".ts")) visit(target)
      }
    }
    visit("src/Client/ApiClient.ts")
    visit("src/Client/StreamClient.ts")
    const nodeOnly = [...closure].flatMap((f) =>
      valueImports(f)
        .filter((spec) => spec.startsWith("node:") || /^@effect\/(sql|platform-node|cluster)/.test(spec))
        .map((spec) => `${f} → ${spec}`),
    )
    const server = [...closure].filter((f) =>
      /^src\/(Sql\/|Config\.ts|SecureRandom\.ts|Chain\/|Venues\/)|\/(Repo|Http)\.ts$|^src\/Http\/(Security|Server)\.ts$/.test(
        f,
      ),
    )
    expect({ nodeOnly, server }).toEqual({ nodeOnly: [], server: [] })
    expect(closure.has("src/Http/Api.ts")).toBe(true)
  })

  it("reads imports of every form", () => {
    expect(importsOf("src/main.ts")).toContain("actors/Actors.ts")
  })
})
