/**
 * The maker client's v2 tests' stack: two anvil chains (hyperliquid 999, aster 42161) whose venues configure their
 * SettlementEscrowV2, the HTTP service on them, and `npm run maker` as a child process.
 */
import { spawn } from "node:child_process"
import { Effect, Layer } from "effect"
import { startTestChain, venueEntry } from "./ChainDevnet.ts"
import { TestDatabaseLive } from "./Database.ts"
import { Chains } from "./DevnetStack.ts"
import { testAppConfig } from "./TestConfig.ts"
import { TestHttpLive } from "./TestServer.ts"

const chain = (chainId: number, kind: "hyperliquid" | "aster") =>
  Effect.acquireRelease(
    Effect.promise(() => startTestChain({ chainId, kind })),
    (c) => Effect.promise(() => c.anvil.stop()),
  )

/** As devnetStack, with each venue's SettlementEscrowV2 configured (`escrow_v2`). */
export const MakerV2Live = Layer.unwrapScoped(
  Effect.gen(function* () {
    const [hl, aster] = yield* Effect.all([chain(999, "hyperliquid"), chain(42161, "aster")], { concurrency: 2 })
    const config = testAppConfig({
      venues: [venueEntry(hl, "hyperliquid", { escrowV2: true }), venueEntry(aster, "aster", { escrowV2: true })].map(
        ({ legacy_escrow: _l, ...v }) => v,
      ),
      auth: { rpc_urls: [hl.anvil.rpcUrl] },
    })
    return TestHttpLive.pipe(
      Layer.provideMerge(TestDatabaseLive),
      Layer.provideMerge(config),
      Layer.merge(Layer.succeed(Chains, { hl, aster })),
    )
  }),
)

/** Runs `npm run maker` (its script) as a child process. */
export const runMaker = (args: Array<string>, env: Record<string, string>) => {
  const child = spawn(process.execPath, ["--import", "tsx", "infra/maker/Maker.ts", ...args], {
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  })
  let output = ""
  child.stdout.on("data", (d: Buffer) => (output += d.toString()))
  child.stderr.on("data", (d: Buffer) => (output += d.toString()))
  const exited = new Promise<number>((resolve) => child.on("exit", (code) => resolve(code ?? -1)))
  return { child, exited, output: () => output }
}
