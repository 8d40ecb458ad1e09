/**
 * `npm run maker -- <command>`: the maker CLI (@effect/cli; `--help` on every command).
 *
 *   setup   from one funded owner key: sign in, link the venue, register a quote identity, issue a `quote`
 *           credential, fund an order; writes the state file the other commands read (infra/maker/Setup.ts)
 *   run     the bot: lease, quote publication, v2 reveals, heartbeat lines (infra/maker/Run.ts)
 *   status  the identity's lease and, with MAKER_OWNER_KEY, the order
 *   close   stop quoting and close the order (funds back to the owner); `--revoke` revokes the credential too
 *
 * Exit codes: 0 done; 64 bad usage (nothing sent); 2 a permanent refusal (its code and message printed) or a
 * failure. Flags given without a command mean `run` (the bot's flags before the CLI had commands).
 */
import * as Command from "@effect/cli/Command"
import * as Options from "@effect/cli/Options"
import * as ValidationError from "@effect/cli/ValidationError"
import * as NodeFileSystem from "@effect/platform-node/NodeFileSystem"
import * as NodePath from "@effect/platform-node/NodePath"
import * as NodeTerminal from "@effect/platform-node/NodeTerminal"
import { Cause, Effect, Exit, Layer, Option } from "effect"
import { resolveMakerOptions, UsageError } from "./MakerOptions.ts"
import { DEFAULT_STATE_FILE, readState, StateFileError } from "./MakerState.ts"
import { stopper } from "./ServiceFaults.ts"

// What each command runs is imported when it runs (viem and the chain clients load only then): a usage error or
// `--help` answers fast.
const http = () => import("./MakerHttp.ts")

/** Placeholders in the usage lines, by option name (else `text`). */
const PSEUDO: Record<string, string> = {
  state: "FILE",
  api: "URL",
  venue: "VENUE",
  "receive-venue": "VENUE",
  "venues-from": "FILE",
  "escrow-v2": "VENUE=0x…",
  rpc: "VENUE=URL",
  "from-block": "VENUE=N",
  quote: "VENUE:RECIPIENT:SUPPLY:RECEIVE:MIN_FILL",
  order: "0x…",
  owner: "0x…",
  identity: "UUID",
  "client-order-id": "ID",
}
const text = (name: string, description: string) =>
  Options.text(name).pipe(Options.withPseudoName(PSEUDO[name] ?? "N"), Options.withDescription(description))
const optionalText = (name: string, description: string) => text(name, description).pipe(Options.optional)
const textWithDefault = (name: string, fallback: string, description: string) =>
  text(name, description).pipe(Options.withDefault(fallback))
const repeatedText = (name: string, description: string) => text(name, description).pipe(Options.repeated)
const orUndefined = <A>(o: Option.Option<A>) => Option.getOrUndefined(o)

const state = textWithDefault("state", DEFAULT_STATE_FILE, "the state file setup writes (mode 0600) and run reads")
const api = optionalText("api", "the service's base URL (default: the state file's)")

/** A promise-returning command body as an Effect whose failure is the error itself (sorted in main). */
const attempt = <A>(f: () => Promise<A>) => Effect.tryPromise({ try: f, catch: (e) => e })

const lines = (line: string) => console.log(line)

const loadState = (path: string, explicit: boolean) => {
  const s = readState(path)
  if (s === undefined && explicit) throw new UsageError(`no state file ${path} (run \`npm run maker -- setup\` first)`)
  return s ?? {}
}

const setup = Command.make(
  "setup",
  {
    state,
    api: textWithDefault("api", "http://127.0.0.1:8080", "the service's base URL"),
    venue: text("venue", "the venue whose escrow holds the order (the maker supplies its token there)"),
    "receive-venue": optionalText(
      "receive-venue",
      "the venue takers pay on (default: the only other venue); the default quote pays there",
    ),
    amount: text("amount", "the order's amount in base units of the venue's token (e.g. 100000000 = 100 USDC)"),
    "client-order-id": optionalText("client-order-id", "your id for the order (default: generated, kept in the state)"),
    "venues-from": optionalText(
      "venues-from",
      "a deployment config whose venues list the v2 escrows and RPC endpoints you reviewed (devnet: .data/devnet-config.json)",
    ),
    "escrow-v2": repeatedText("escrow-v2", "VENUE=0x…: a v2 escrow you reviewed (overrides --venues-from)"),
    rpc: repeatedText("rpc", "VENUE=URL: your own JSON-RPC endpoint for the venue's chain (reveals)"),
    "from-block": repeatedText("from-block", "VENUE=N: first block the reveal loop scans (the v2 escrow's deployment)"),
    supply: textWithDefault("supply", "999000", "default quote: SUPPLY units of the order's token …"),
    receive: textWithDefault("receive", "1000000", "… for RECEIVE units paid on the receive venue"),
    "min-fill": textWithDefault("min-fill", "100000", "default quote: the smallest fill, in SUPPLY units (≤ supply)"),
    "quote-size": optionalText("quote-size", "the most one quote set offers (default: half the amount)"),
    "max-venue-fee": textWithDefault(
      "max-venue-fee",
      "1000000",
      "base units: the most a venue_transfer may pay the venue as its signed withdrawal fee (Aster's), on top",
    ),
    timeout: textWithDefault("timeout", "300", "seconds to wait for the order to be funded"),
  },
  (flags) =>
    attempt(async () =>
      (await import("./Setup.ts")).runSetup(
        {
          ...flags,
          "receive-venue": orUndefined(flags["receive-venue"]),
          "client-order-id": orUndefined(flags["client-order-id"]),
          "venues-from": orUndefined(flags["venues-from"]),
          "quote-size": orUndefined(flags["quote-size"]),
        },
        process.env,
        lines,
      ),
    ),
).pipe(
  Command.withDescription(
    "Sign in with the owner key (MAKER_OWNER_KEY, funded), link the venue, register a quote identity for the signer " +
      "key (MAKER_SIGNER_KEY, or a fresh one), issue a quote credential, create and fund an order; writes --state.",
  ),
)

const run = Command.make(
  "run",
  {
    state,
    api,
    identity: optionalText("identity", "the quote identity id (default: the state file's)"),
    order: optionalText("order", "the order id, 0x… (default: the state file's)"),
    venue: optionalText("venue", "the order's venue (default: the state file's)"),
    quote: repeatedText(
      "quote",
      "VENUE:RECIPIENT:SUPPLY:RECEIVE:MIN_FILL: a taker paying RECEIVE units to RECIPIENT on VENUE gets SUPPLY " +
        "units of the order (amount_out ≤ amount_in × SUPPLY / RECEIVE), fills of at least MIN_FILL out (default: the state file's)",
    ),
    "quote-size": optionalText("quote-size", "the most one quote set offers, ≤ the order's quotable (default: state)"),
    ttl: textWithDefault("ttl", "30", "lease time-to-live asked at each renewal, 5–120 s"),
    renew: textWithDefault("renew", "5", "seconds between renewals, at most half of --ttl"),
    validity: optionalText(
      "validity",
      "seconds each quote set stays valid (default: 120 when the deployment's /v1/info admits it, else its maximum); " +
        "takes use a set only while more than the lock cutoff is left, so it is replaced when less than " +
        "cutoff + (validity − cutoff)/2 is left",
    ),
    run: textWithDefault("run", "0", "stop after this many seconds (0: until SIGINT/SIGTERM)"),
    heartbeat: textWithDefault("heartbeat", "30", "seconds between heartbeat lines (0: none)"),
    owner: optionalText("owner", "v2: the order's owner address (default: the state file's)"),
    "escrow-v2": repeatedText(
      "escrow-v2",
      "v2: VENUE=0x…, your reviewed v2 escrow of the order's and each quoted venue",
    ),
    rpc: repeatedText("rpc", "v2: VENUE=URL, your own endpoint for each of those venues (reveals)"),
    "from-block": repeatedText("from-block", "v2: VENUE=N, first block the reveal loop scans"),
    hashlocks: textWithDefault("hashlocks", "64", "v2: hashlocks per quote set (one per fill)"),
    "reveal-cutoff": textWithDefault("reveal-cutoff", "600", "v2: reveal only with this many seconds left"),
    "poll-ms": textWithDefault(
      "poll-ms",
      "1000",
      "v2: ms between polls of your endpoints (a reveal's receipt, a new block); about the block time (devnet: 250)",
    ),
    "reveal-only": Options.boolean("reveal-only").pipe(
      Options.withDescription("v2: run the reveal loop alone (no credential, lease or publication)"),
    ),
  },
  (flags) =>
    attempt(async () => {
      const explicit = process.argv.some((a) => a === "--state" || a.startsWith("--state="))
      const options = resolveMakerOptions(
        {
          ...flags,
          api: orUndefined(flags.api),
          identity: orUndefined(flags.identity),
          order: orUndefined(flags.order),
          venue: orUndefined(flags.venue),
          "quote-size": orUndefined(flags["quote-size"]),
          validity: orUndefined(flags.validity),
          owner: orUndefined(flags.owner),
        },
        process.env,
        loadState(flags.state, explicit),
      )
      // SIGINT/SIGTERM end the loops at their next sleep (a pass in flight finishes), then the process exits 0.
      const stop = stopper()
      for (const signal of ["SIGINT", "SIGTERM"] as const) {
        process.once(signal, () => {
          console.log(`maker: ${signal}: stopping`)
          stop.stop()
        })
      }
      await (await import("./Run.ts")).runMaker(options, lines, stop)
    }),
).pipe(
  Command.withDescription(
    "Keep the identity's lease, publish signed quote sets for the order and (v2) reveal each payment to you. " +
      "Secrets: MAKER_CREDENTIAL and MAKER_SIGNER_KEY (default: the state file's), MAKER_PAYEE_KEY (v2: sends the " +
      "reveals and pays their gas; default the signer key).",
  ),
)

/** The state's api (or --api), the owner's session when MAKER_OWNER_KEY is set. */
const context = async (stateFile: string, apiFlag: string | undefined, needOwner: boolean) => {
  const { retrying } = await http()
  const { signIn } = await import("./Setup.ts")
  const { privateKeyToAccount } = await import("viem/accounts")
  const s = loadState(stateFile, true)
  const base = (apiFlag ?? s.api ?? "").replace(/\/$/, "")
  if (base === "") throw new UsageError("missing --api")
  const ownerKey = process.env.MAKER_OWNER_KEY
  if (needOwner && (ownerKey === undefined || !/^0x[0-9a-fA-F]{64}$/.test(ownerKey))) {
    throw new UsageError("MAKER_OWNER_KEY must hold the owner's key")
  }
  const token =
    ownerKey === undefined || ownerKey === ""
      ? undefined
      : await retrying(() => signIn(base, privateKeyToAccount(ownerKey as `0x${string}`)), lines)
  return { s, base, token }
}

const status = Command.make("status", { state, api }, (flags) =>
  attempt(async () => {
    const { s, base, token } = await context(flags.state, orUndefined(flags.api), false)
    const { apiOf, retrying } = await http()
    const credential = process.env.MAKER_CREDENTIAL || s.credential
    const bearer = token ?? credential
    if (s.identity_id !== undefined && bearer !== undefined) {
      const api = apiOf(base, bearer)
      const id = await retrying(
        () => api((c) => c.quoteIdentities.getIdentity({ path: { id: s.identity_id! } })),
        lines,
      )
      const live = Date.parse(id.lease_expires_at) > Date.now()
      lines(
        `identity ${id.id}: signer ${id.signer}, generation ${id.generation}, lease ${live ? "live until" : "expired at"} ` +
          `${id.lease_expires_at}${id.revoked ? ", REVOKED" : ""}` +
          (id.fade ? `, fades ${id.fade.fades}/${id.fade.chances}${id.fade.flagged_at ? " (flagged)" : ""}` : ""),
      )
    }
    if (s.order_id === undefined) return lines("order: none yet (run setup)")
    if (token === undefined) return lines(`order ${s.order_id}: set MAKER_OWNER_KEY to read it (a credential cannot)`)
    const session = apiOf(base, token)
    const o = await retrying(() => session((c) => c.orders.get({ path: { id: s.order_id! } })), lines)
    lines(
      `order ${o.id} on ${o.venue}: ${o.state}; amount ${o.amount}, escrow available ${o.escrow_available ?? "-"}, ` +
        `quotable ${o.quotable ?? "-"}, filled ${o.filled ?? "0"}, received ${o.received ?? "0"}`,
    )
    const set = o.quote_set
    lines(
      set
        ? `quote set ${set.sequence}: ${set.active ? "active" : "inactive"}, valid until ${set.valid_until}, size ${set.quote_size}`
        : "quote set: none",
    )
  }),
).pipe(
  Command.withDescription(
    "Show the quote identity's lease (with MAKER_CREDENTIAL or the state's credential) and, with MAKER_OWNER_KEY, " +
      "the order: state, escrow available, filled, the current quote set.",
  ),
)

const close = Command.make(
  "close",
  {
    state,
    api,
    "to-margin": Options.boolean("to-margin").pipe(
      Options.withDescription("return the funds into the owner's venue margin instead of the wallet"),
    ),
    revoke: Options.boolean("revoke").pipe(
      Options.withDescription("also revoke the credential (and with it the quote identity): irreversible"),
    ),
  },
  (flags) =>
    attempt(async () => {
      const { s, base, token } = await context(flags.state, orUndefined(flags.api), true)
      const { apiOf, retrying } = await http()
      const session = apiOf(base, token)
      if (s.order_id === undefined || s.venue === undefined) throw new UsageError(`${flags.state} holds no order`)
      await retrying(() => session((c) => c.orders.cancelQuotes({ path: { id: s.order_id! } })), lines)
      lines(`quotes of order ${s.order_id} deactivated`)
      const closed = await retrying(
        () =>
          session((c) =>
            c.escrow.managedClose({
              payload: { venue: s.venue!, order_id: s.order_id!, to_margin: flags["to-margin"] } as never,
            }),
          ),
        lines,
      )
      lines(
        `order ${s.order_id} closing (available ${closed.available ?? "-"}): the escrow returns it to the owner's ` +
          `${flags["to-margin"] ? "margin" : "wallet"} once final; a running bot stops at its next quote set`,
      )
      if (flags.revoke && s.credential_id !== undefined) {
        await retrying(() => session((c) => c.credentials.revokeCredential({ path: { id: s.credential_id! } })), lines)
        lines(`credential ${s.credential_id} revoked`)
      }
    }),
).pipe(
  Command.withDescription(
    "With MAKER_OWNER_KEY: deactivate the order's quotes and close the order through the service (operatorClose).",
  ),
)

const maker = Command.make("maker").pipe(
  Command.withDescription("A maker's command line: setup, run, status, close. `<command> --help` for each."),
  Command.withSubcommands([setup, run, status, close]),
)

const cli = Command.run(maker, { name: "maker", version: "1.0.0" })

/** The bot's flags before the CLI had commands (`npm run maker -- --api …`) mean `run`. */
const BUILT_IN = new Set(["--help", "-h", "--version", "--wizard", "--completions", "--log-level"])
const withCommand = (argv: ReadonlyArray<string>) => {
  const first = argv[2]
  return first?.startsWith("-") && !BUILT_IN.has(first.split("=")[0]!)
    ? [...argv.slice(0, 2), "run", ...argv.slice(2)]
    : [...argv]
}

const main = async () => {
  const platform = Layer.mergeAll(NodeFileSystem.layer, NodePath.layer, NodeTerminal.layer)
  const exit = await Effect.runPromiseExit(cli(withCommand(process.argv)).pipe(Effect.provide(platform)))
  if (Exit.isSuccess(exit)) process.exit(0)
  const failure = Cause.failureOption(exit.cause)
  const e = Option.isSome(failure) ? failure.value : Cause.squash(exit.cause)
  // @effect/cli has printed its own validation errors.
  if (ValidationError.isValidationError(e)) process.exit(64)
  console.error(`maker: ${e instanceof Error ? e.message : String(e)}`)
  process.exit(e instanceof UsageError || e instanceof StateFileError ? 64 : 2)
}

if (import.meta.url === `file://${process.argv[1]}`) void main()
