// The devnet `npm start` runs when no SETTLEMENT_CONFIG is given: a lock on the data dir, PostgreSQL, two anvil
// chains, the contracts (deployed once, then resumed), the venue simulators, the service, and a banner.
//
// Every resource is acquired in the program's scope, so it is released on every exit path (success never
// happens; a failure at any step, or an interruption by SIGINT/SIGTERM/SIGHUP in DevnetMain.ts) in reverse order:
// service, simulators, chains (SIGTERM: anvil dumps its state file), database, lock.
//
// Fresh chains start in automine mode so the deployment's ~25 transactions are mined as they arrive (seconds
// saved on every first start), then switch to interval mining so blocks keep coming and finality advances.
import { existsSync, rmSync } from "node:fs"
import { createServer } from "node:net"
import { relative } from "node:path"
import { Data, Effect, Redacted } from "effect"
import { relocatedDataDir, startEmbeddedPostgresInstance } from "../../src/Sql/EmbeddedPostgres.ts"
import { type AnvilInstance, startAnvil } from "./Anvil.ts"
import type { Deployment } from "./Deploy.ts"
import type { RunningChain } from "./DevnetConfig.ts"
import {
  DEVNET_ROLES,
  type DevnetChainSpec,
  type DevnetOptions,
  type DevnetPaths,
  devnetKey,
  devnetPaths,
  readDeploymentRecord,
  writeJsonAtomic,
} from "./DevnetOptions.ts"
import type { HeldLock, LockChild } from "./Lock.ts"
import { SERVICE_MATCH, type ServiceChild, waitUntilAnswering } from "./Service.ts"
import { startSimulator, type VenueSimulator } from "./Simulators.ts"

/**
 * The modules that need viem and the service's config schema, loaded while PostgreSQL initialises and the chains
 * start rather than before (a second or two of a cold start).
 */
const loadHeavyModules = () =>
  Effect.promise(async () => {
    const [deploy, config, banner] = await Promise.all([
      import("./Deploy.ts"),
      import("./DevnetConfig.ts"),
      import("./Banner.ts"),
    ])
    return {
      deployChain: deploy.deployChain,
      buildDevnetConfig: config.buildDevnetConfig,
      renderBanner: banner.renderBanner,
    }
  })
type HeavyModules = Effect.Effect.Success<ReturnType<typeof loadHeavyModules>>

export class DevnetError extends Data.TaggedError("DevnetError")<{ readonly message: string }> {}

/** Set once a stop was asked for: background errors of things being stopped are expected then, not reported. */
let stopping = false
export const markStopping = () => {
  stopping = true
}

/** Progress lines carry the time since the process started, so a slow phase shows where it is. */
const say = (line: string) => console.log(`[devnet ${(performance.now() / 1000).toFixed(1).padStart(4)}s] ${line}`)
const log = (line: string) => Effect.sync(() => say(line))

const describe = (e: unknown): string => (e instanceof Error ? e.message : String(e))

const attempt = <A>(what: string, f: () => Promise<A>) =>
  Effect.tryPromise({ try: f, catch: (e) => new DevnetError({ message: `${what}: ${describe(e)}` }) })

/** A resource released with the program's scope; a failing release is ignored (the others must still run). */
const resource = <A>(what: string, acquire: () => Promise<A>, release: (a: A) => Promise<void>) =>
  Effect.acquireRelease(attempt(what, acquire), (a) => Effect.promise(() => release(a).catch(() => undefined)))

const rpc = async (url: string, method: string, params: ReadonlyArray<unknown>): Promise<unknown> => {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
    signal: AbortSignal.timeout(5_000),
  })
  const body = (await res.json()) as { result?: unknown; error?: { message?: string } }
  if (body.error !== undefined) throw new Error(`${method}: ${body.error.message ?? JSON.stringify(body.error)}`)
  return body.result
}

const portFree = (port: number) =>
  new Promise<boolean>((resolve) => {
    const server = createServer()
    server.once("error", () => resolve(false))
    server.listen(port, "127.0.0.1", () => server.close(() => resolve(true)))
  })

/** Fixed ports are checked up front, so a busy one is reported with the variable that moves it. */
const checkPorts = (options: DevnetOptions) =>
  Effect.gen(function* () {
    const wanted: Array<{ port: number; what: string; env: string }> = [
      { port: options.apiPort, what: "the service API", env: "PORT" },
    ]
    for (const c of options.chains) {
      const prefix = `DEVNET_${c.kind.toUpperCase()}`
      wanted.push({ port: c.rpcPort, what: `the ${c.name} RPC`, env: `${prefix}_RPC_PORT` })
      wanted.push({ port: c.apiPort, what: `the ${c.name} venue API`, env: `${prefix}_API_PORT` })
    }
    for (const w of wanted) {
      if (w.port !== 0 && !(yield* Effect.promise(() => portFree(w.port)))) {
        return yield* new DevnetError({
          message: `port ${w.port} (${w.what}) is already in use on 127.0.0.1; stop what holds it or set ${w.env}=<port> (0 = any free port)`,
        })
      }
    }
  })

/**
 * The embedded PostgreSQL for `<data>/pg`, released with the program's scope (its stop is bounded: SIGINT, SIGKILL
 * after 15 s). As root in a private clone the data lives elsewhere (relocatedDataDir): `dataDir` says where.
 */
const embeddedDatabase = (paths: DevnetPaths) =>
  startEmbeddedPostgresInstance({ dataDir: paths.pg }).pipe(
    Effect.mapError(
      (e) =>
        new DevnetError({
          message:
            e.reason === "start"
              ? `${e.message} (is another PostgreSQL using ${paths.pg}?)`
              : e.reason === "data"
                ? `${e.message}; or run \`npm run devnet:reset\` to start over (the new data goes where that user can reach it)`
                : e.message,
        }),
    ),
    Effect.map((db) => ({
      url: Redacted.value(db.url),
      pid: db.pid as number | undefined,
      dataDir: db.dataDir,
      relocated: db.relocated,
    })),
  )

const startChain = (spec: DevnetChainSpec, options: DevnetOptions, paths: DevnetPaths) =>
  resource(
    `anvil chain ${spec.chainId} on port ${spec.rpcPort}`,
    () =>
      startAnvil({
        chainId: spec.chainId,
        port: spec.rpcPort,
        // Finalized lags latest by 2 × slots blocks. Mining stays automatic (a block per transaction) until the
        // contracts are in place, then switches to interval mining.
        slotsInAnEpoch: options.slotsInAnEpoch,
        stateFile: paths.anvilState(spec.chainId),
        // anvil writes the state file when it exits; the interval bounds what a crash of anvil itself loses.
        stateIntervalSeconds: 30,
      }),
    (anvil) => anvil.stop(),
  )

/** On a resumed devnet, the recorded contracts must be in the chain state, or the two are out of step. */
const verifyDeployment = (deployment: Deployment, anvil: AnvilInstance, paths: DevnetPaths) =>
  attempt(`checking the recorded deployment on chain ${deployment.chainId}`, async () => {
    for (const [name, contract] of Object.entries(deployment.contracts)) {
      const code = (await rpc(anvil.rpcUrl, "eth_getCode", [contract.address, "latest"])) as string
      if (code === "0x" || code === "") {
        throw new Error(
          `no code at the recorded ${name} ${contract.address}: the chain state ${paths.anvilState(deployment.chainId)} ` +
            `is missing or older than ${paths.deployment}. Run \`npm run devnet:reset\` to start over.`,
        )
      }
    }
  })

const deployments = (
  options: DevnetOptions,
  paths: DevnetPaths,
  anvils: ReadonlyArray<AnvilInstance>,
  { deployChain }: HeavyModules,
) =>
  Effect.gen(function* () {
    const record = yield* Effect.try({
      try: () => readDeploymentRecord(paths.deployment),
      catch: (e) => new DevnetError({ message: `reading ${paths.deployment}: ${describe(e)}` }),
    })
    if (record === undefined) {
      yield* log("deploying contracts (MockUSDC, venue mocks, margin routers, SettlementEscrow, LegacyEscrow)")
      const deployed = yield* Effect.all(
        options.chains.map((spec, i) =>
          attempt(`deploying on chain ${spec.chainId}`, () =>
            deployChain({ rpcUrl: anvils[i]!.rpcUrl, kind: spec.kind, deployerKey: devnetKey(DEVNET_ROLES.operator) }),
          ),
        ),
        { concurrency: "unbounded" },
      )
      // Recorded only once every chain has its contracts: a start interrupted before this point starts over.
      writeJsonAtomic(paths.deployment, { version: 1, created_at: new Date().toISOString(), chains: deployed })
      return { fresh: true, deployed }
    }
    const deployed: Array<Deployment> = []
    for (const spec of options.chains) {
      const d = record.chains.find((c) => c.kind === spec.kind && c.chainId === spec.chainId)
      if (d === undefined) {
        return yield* new DevnetError({
          message: `${paths.deployment} has no ${spec.kind} chain ${spec.chainId}; run \`npm run devnet:reset\``,
        })
      }
      deployed.push(d)
    }
    yield* Effect.all(
      deployed.map((d, i) => verifyDeployment(d, anvils[i]!, paths)),
      { concurrency: "unbounded" },
    )
    yield* log(`resuming the deployment recorded at ${record.created_at}`)
    return { fresh: false, deployed }
  })

const startSimulators = (chains: ReadonlyArray<Omit<RunningChain, "apiUrl">>) =>
  Effect.all(
    chains.map((chain) =>
      resource<VenueSimulator>(
        `${chain.spec.kind} venue simulator on port ${chain.spec.apiPort}`,
        () =>
          startSimulator(chain, (message) => {
            // Expected while stopping (a poll racing the chain's shutdown); worth reading otherwise.
            if (!stopping) console.error(`[venue-sim ${chain.spec.kind}] ${message}`)
          }),
        (sim) => sim.stop(),
      ),
    ),
    { concurrency: "unbounded" },
  )

/**
 * Runs the devnet until interrupted; fails with a DevnetError saying what went wrong. Takes over the lock and the
 * pre-warmed service process DevnetMain.ts acquired before loading this module, and releases both on every exit path.
 */
export const runDevnet = (options: DevnetOptions, held: { readonly lock: HeldLock; readonly service: ServiceChild }) =>
  Effect.gen(function* () {
    const { lock, service } = held
    const paths = devnetPaths(options.dataDir)
    const shownDir = relative(process.cwd(), paths.dataDir) || "."
    // Registered first, so they run last. The service is stopped again, first, further down; stop() is idempotent.
    yield* Effect.addFinalizer(() => Effect.sync(() => lock.release()))
    yield* Effect.addFinalizer(() => Effect.promise(() => service.stop()))
    const serviceChild: LockChild = { name: "service", pid: service.pid, match: SERVICE_MATCH }
    lock.update({ children: [serviceChild] })

    yield* checkPorts(options)

    // An interrupted first start may have left chain state without a deployment record: start those chains over.
    const freshChains = !existsSync(paths.deployment)
    if (freshChains) for (const c of options.chains) rmSync(paths.anvilState(c.chainId), { force: true })
    const existingPg = [paths.pg, relocatedDataDir(paths.pg)].find((d) => existsSync(`${d}/PG_VERSION`))
    if (freshChains && options.databaseUrl === undefined && existingPg !== undefined) {
      const shown = existingPg === paths.pg ? `${shownDir}/pg` : existingPg
      yield* log(`note: keeping the existing database in ${shown} with a new deployment (reset to start clean)`)
    }

    yield* log(
      `starting ${options.databaseUrl === undefined ? `PostgreSQL (${shownDir}/pg) and ` : ""}` +
        `anvil chains ${options.chains.map((c) => c.chainId).join(" and ")}`,
    )
    const [database, anvils, heavy] = yield* Effect.all(
      [
        options.databaseUrl === undefined
          ? embeddedDatabase(paths)
          : Effect.succeed({ url: options.databaseUrl, pid: undefined, dataDir: undefined, relocated: false }),
        Effect.all(
          options.chains.map((c) => startChain(c, options, paths)),
          { concurrency: "unbounded" },
        ),
        loadHeavyModules(),
      ],
      { concurrency: "unbounded" },
    )
    yield* log("database and chains are up")
    if (database.relocated) {
      yield* log(
        `PostgreSQL keeps its data in ${database.dataDir}: it runs as the postgres user (we are root), who cannot reach ${shownDir}/pg (a private parent directory); npm run devnet:reset removes it too`,
      )
    }
    const children: Array<LockChild> = [
      serviceChild,
      ...anvils.map((a) => ({ name: `anvil ${a.chainId}`, pid: a.pid, match: "anvil" })),
      ...(database.pid === undefined ? [] : [{ name: "postgres", pid: database.pid, match: "postgres" }]),
    ]
    lock.update({ children })

    const { fresh, deployed } = yield* deployments(options, paths, anvils, heavy)
    // Interval mining from now on: blocks keep coming with no traffic, finalized lags latest by 2 × slots.
    yield* Effect.all(
      anvils.map((a) =>
        attempt(`interval mining on chain ${a.chainId}`, () =>
          rpc(a.rpcUrl, "evm_setIntervalMining", [options.blockTimeSeconds]),
        ),
      ),
    )

    const base = options.chains.map((spec, i) => ({ spec, deployment: deployed[i]!, rpcUrl: anvils[i]!.rpcUrl }))
    const simulators = yield* startSimulators(base)
    const running: Array<RunningChain> = base.map((c, i) => ({ ...c, apiUrl: simulators[i]?.url }))

    const config = yield* heavy
      .buildDevnetConfig(running)
      .pipe(Effect.mapError((e) => new DevnetError({ message: e.message })))
    writeJsonAtomic(paths.config, config)
    yield* log("contracts in place")

    const apiUrl = `http://127.0.0.1:${options.apiPort}`
    yield* log(`starting the service on ${apiUrl}`)
    // Stopped before the simulators, chains and database (finalizers run in reverse).
    yield* Effect.addFinalizer(() => Effect.promise(() => service.stop()))
    service.go({ SETTLEMENT_CONFIG: paths.config, DATABASE_URL: database.url, PORT: String(options.apiPort) })
    yield* attempt("waiting for the service", () => waitUntilAnswering(`${apiUrl}/v1/info`, service))
    lock.update({ api_url: apiUrl })

    console.log(
      heavy.renderBanner({
        apiUrl,
        chains: running,
        dataDir: paths.dataDir,
        configFile: paths.config,
        database:
          options.databaseUrl === undefined
            ? `${database.url}   (embedded, ${database.relocated ? database.dataDir : `${shownDir}/pg`})`
            : "DATABASE_URL (from the environment)",
        fresh,
        startupMs: performance.now(),
      }),
    )

    // Up until interrupted; the service dying on its own ends the devnet (and says so) rather than idling.
    const { code, signal } = yield* Effect.promise(() => service.exited)
    return yield* new DevnetError({
      message: `the service exited (code ${code}, signal ${signal}); stopping the devnet`,
    })
  }).pipe(Effect.scoped)
