// `node --import ./infra/devnet/Preload.mjs <entry>.ts`: loads the heavy libraries natively, then registers tsx.
//
// Why: under tsx's loader hooks every module resolved from node_modules takes a round trip through the hook
// thread, and effect, viem and the @effect/* packages are hundreds of modules. Loaded natively first, they sit in
// the ESM cache and the TypeScript code's later imports of them cost nothing: the service's modules took 2.5 s of
// CPU this way against 4.8 s under the hooks (the devnet's own, 2.4 s against 3.6 s). `import("tsx")` is exactly
// what `--import tsx` does, so everything after this runs as it would under `node --import tsx`.
//
// Plain JavaScript, because it runs before anything can load TypeScript.

// What the devnet process itself needs.
const DEVNET = ["effect", "@effect/platform", "viem", "viem/accounts"]
// What src/main.ts needs (the service, run by `npm start` with SETTLEMENT_CONFIG or by the devnet's launcher).
const SERVICE = [
  ...DEVNET,
  "@effect/platform-node",
  "@effect/sql",
  "@effect/sql-pg",
  "@effect/cluster",
  "@effect/rpc",
  "@effect/workflow",
]

const forService = process.env.DEVNET_PRELOAD === "service" || Boolean(process.env.SETTLEMENT_CONFIG)
// A package that is missing only makes the preload less complete; the real import reports it.
await Promise.all((forService ? SERVICE : DEVNET).map((name) => import(name).catch(() => undefined)))
await import("tsx")
