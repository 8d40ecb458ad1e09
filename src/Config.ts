import { FileSystem } from "@effect/platform"
import {
  Context,
  Data,
  Effect,
  Config as EffectConfig,
  Either,
  Layer,
  Option,
  ParseResult,
  Redacted,
  Schema,
} from "effect"
import { privateKeyToAddress } from "viem/accounts"
import { DevelopmentConfig } from "./DevelopmentConfig.ts"
import { parseProxyEntry } from "./Domain/ClientAddress.ts"
import { Address, Amount, NonNegativeInt, PositiveInt, VenueId } from "./Domain/Primitives.ts"
import { databaseUrlProblem, parseJsonText, privateKeyProblem } from "./StartupChecks.ts"

/**
 * The deployment configuration: what GET /v1/info and /v1/venues publish, plus the secrets the
 * service needs. Loaded from the JSON file named by SETTLEMENT_CONFIG, validated before anything
 * starts so that a bad file fails with the offending field's path.
 */

const Url = Schema.String.pipe(
  Schema.filter((s) => URL.canParse(s), { message: () => "must be an absolute URL" }),
  Schema.annotations({ identifier: "Url" }),
)

const Origin = Schema.String.pipe(
  Schema.filter((s) => URL.canParse(s) && new URL(s).origin === s, {
    message: () => "must be an origin such as https://app.example.com (scheme, host, optional port; no path)",
  }),
)

export const VenueKind = Schema.Literal("hyperliquid", "aster")
export type VenueKind = typeof VenueKind.Type

/**
 * How a venue chain is watched (actors/VenueWatcher.ts). Every field is optional; the defaults suit a
 * public chain with `safe`/`finalized` block tags and the devnet alike.
 */
export class WatcherSettings extends Schema.Class<WatcherSettings>("WatcherSettings")({
  /** Longest pause between two polls of the chain, milliseconds. */
  poll_ms: Schema.optionalWith(PositiveInt, { default: () => 1000 }),
  /**
   * Between polls the head's number is read this often (milliseconds; one `eth_blockNumber`) and a new block starts
   * the next poll at once, so a step waiting on finality waits for the block, not for poll_ms. At or above poll_ms:
   * off (a poll every poll_ms).
   */
  head_poll_ms: Schema.optionalWith(PositiveInt, { default: () => 250 }),
  /** Largest block range of one `eth_getLogs` page. */
  page_blocks: Schema.optionalWith(PositiveInt, { default: () => 2000 }),
  /** A chain is fresh while its last successful check and its last new head are at most this old. */
  freshness_seconds: Schema.optionalWith(PositiveInt, { default: () => 30 }),
  /** Operator native balance (wei) below which the chain is not ready. */
  min_operator_gas: Schema.optionalWith(Amount, { default: () => "10000000000000000" }),
  /** Indexed balances are compared with on-chain reads this often (and on demand). */
  integrity_interval_seconds: Schema.optionalWith(PositiveInt, { default: () => 60 }),
  /**
   * Absent: `safe` and `finalized` come from the node's block tags. Set for chains without them:
   * finalized = latest - confirmations (safe = latest - confirmations / 2).
   */
  confirmations: Schema.optional(NonNegativeInt),
}) {}

/** An extra contract the relayer may call: functions by signature, e.g. "mint(address,uint256)". */
export class RelayerAllow extends Schema.Class<RelayerAllow>("RelayerAllow")({
  contract: Address,
  functions: Schema.NonEmptyArray(Schema.String.pipe(Schema.pattern(/^[A-Za-z_][A-Za-z0-9_]*\(.*\)$/))),
}) {}

/** How the relayer (actors/TxRelayer.ts) sends the operator's transactions on a venue chain. */
export class RelayerSettings extends Schema.Class<RelayerSettings>("RelayerSettings")({
  /**
   * Milliseconds: the send loop's longest wait for a queued request (it wakes on the queue's notification), and the
   * follow loop's pause between passes over transactions in flight (10× that while none is; a send wakes it).
   */
  poll_ms: Schema.optionalWith(PositiveInt, { default: () => 500 }),
  /**
   * A transaction is re-priced once its nonce has been the lowest open one for this many blocks since its last
   * attempt (blocks spent behind a lower open nonce do not count).
   */
  bump_after_blocks: Schema.optionalWith(PositiveInt, { default: () => 3 }),
  /** Fee increase of a replacement, percent (at least 12.5, plus one wei). */
  bump_percent: Schema.optionalWith(Schema.Number.pipe(Schema.greaterThanOrEqualTo(12.5)), { default: () => 12.5 }),
  /** Cap on maxFeePerGas (wei); absent: no cap. */
  max_fee_per_gas: Schema.optional(Amount),
  /** Gas limit = estimate × gas_margin_percent / 100, at most gas_limit_max. */
  gas_margin_percent: Schema.optionalWith(Schema.Int.pipe(Schema.between(100, 400)), { default: () => 125 }),
  gas_limit_max: Schema.optionalWith(PositiveInt, { default: () => 5_000_000 }),
  /** Queued requests signed per pass. */
  batch: Schema.optionalWith(PositiveInt, { default: () => 64 }),
  /** Contracts and functions allowed besides the escrow's own state-changing functions. */
  allow: Schema.optionalWith(Schema.Array(RelayerAllow), { default: () => [] }),
}) {}

/**
 * How the service talks to a venue's own API (src/Accounts/VenueAdaptersLive.ts). Every field is optional; the
 * defaults are the venues' documented mainnet values. Only what the devnet or a test environment needs to change
 * is exposed.
 */
export class VenueApiSettings extends Schema.Class<VenueApiSettings>("VenueApiSettings")({
  /** A venue request without an answer after this long is "no answer" (an unknown outcome for a transfer). */
  request_timeout_ms: Schema.optionalWith(PositiveInt, { default: () => 10_000 }),
  /** EIP-712 domain chain id of user-signed venue actions (Hyperliquid transfers, Aster agent approvals). */
  signature_chain_id: Schema.optionalWith(PositiveInt, { default: () => 42161 }),
  /** Hyperliquid environment of signed actions. */
  hyperliquid_chain: Schema.optionalWith(Schema.Literal("Mainnet", "Testnet"), {
    default: () => "Mainnet" as const,
  }),
  /** Hyperliquid `sendAsset` USDC token string; default the environment's. */
  usdc_token: Schema.optional(Schema.NonEmptyTrimmedString),
  /** Hyperliquid nonce window (defaults 2 days past, 1 day ahead): how long a signed transfer may still land. */
  nonce_window_past_ms: Schema.optional(PositiveInt),
  nonce_window_future_ms: Schema.optional(PositiveInt),
  /** Aster V3 request-signing domain chain id (1666 mainnet, 714 testnet). */
  api_chain_id: Schema.optional(PositiveInt),
  /** Aster asset name; default the venue's `symbol`. */
  asset: Schema.optional(Schema.NonEmptyTrimmedString),
  /** Aster chain of `to: wallet` withdrawals; default the escrow chain. */
  wallet_chain_id: Schema.optional(PositiveInt),
  /** Aster: an agent approval is relayed only while its nonce is this fresh (the venue's window is 10 s). */
  agent_approval_window_ms: Schema.optionalWith(PositiveInt, { default: () => 10_000 }),
}) {}

/**
 * A retired escrow deployment (LegacyEscrow) that GET /v1/escrow/legacy scans for owners' funds: its address, the
 * block it was deployed at, and the last block it was used at (absent: scanned up to the chain's head).
 */
export class LegacyEscrowDeployment extends Schema.Class<LegacyEscrowDeployment>("LegacyEscrowDeployment")({
  address: Address,
  deployment_block: NonNegativeInt,
  end_block: Schema.optional(NonNegativeInt),
}) {}

/**
 * A SettlementEscrowV2 deployed beside the venue's v1 escrow (settlement v2, DESIGN §6: v1 only drains). The watcher
 * indexes its events from `deployment_block`; its immutables must equal `settlement`'s v2 values (checked at start).
 */
export class EscrowV2Deployment extends Schema.Class<EscrowV2Deployment>("EscrowV2Deployment")({
  address: Address,
  deployment_block: NonNegativeInt,
}) {}

export class VenueConfig extends Schema.Class<VenueConfig>("VenueConfig")({
  id: VenueId,
  name: Schema.NonEmptyTrimmedString,
  kind: VenueKind,
  chain_id: PositiveInt,
  rpc_urls: Schema.NonEmptyArray(Url),
  token: Address,
  symbol: Schema.NonEmptyTrimmedString,
  decimals: Schema.Int.pipe(Schema.between(0, 36)),
  escrow: Address,
  deployment_block: NonNegativeInt,
  /** The venue's own HTTP API (a simulator on devnet). */
  api_url: Schema.optional(Url),
  /** The venue's SettlementEscrowV2, when deployed (absent: v1 only). */
  escrow_v2: Schema.optional(EscrowV2Deployment),
  /** A retired escrow (LegacyEscrow) whose offers the watcher indexes as well. */
  legacy_escrow: Schema.optional(Address),
  /**
   * Retired deployments the legacy scan reads (`legacy_escrow`, when set, is scanned too, from `deployment_block`);
   * the same contract listed twice is scanned once, over the union of its ranges.
   */
  legacy_escrows: Schema.optionalWith(
    Schema.Array(LegacyEscrowDeployment).pipe(
      Schema.filter((ds) => ds.every((d) => d.end_block === undefined || d.end_block >= d.deployment_block), {
        message: () => "end_block must be at or after deployment_block",
      }),
    ),
    { default: () => [] },
  ),
  /**
   * Smallest zero-id balance (token base units) a close releases into margin: venues drop or refuse tiny
   * deposits. A smaller balance can still be closed to the owner's wallet. Default one token of 6 decimals.
   */
  release_minimum: Schema.optionalWith(Amount, { default: () => "1000000" }),
  watcher: Schema.optionalWith(WatcherSettings, { default: () => WatcherSettings.make({}) }),
  relayer: Schema.optionalWith(RelayerSettings, { default: () => RelayerSettings.make({}) }),
  venue_api: Schema.optionalWith(VenueApiSettings, { default: () => VenueApiSettings.make({}) }),
}) {}

export class Limits extends Schema.Class<Limits>("Limits")({
  requests_per_second: Schema.optionalWith(PositiveInt, { default: () => 60 }),
  request_burst: Schema.optionalWith(PositiveInt, { default: () => 120 }),
  /** Spec, Wire conventions 1: request bodies are at most 64 KiB, so a deployment may lower it, never raise it. */
  body_bytes: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 65536)), { default: () => 65536 }),
  batch_orders: Schema.optionalWith(PositiveInt, { default: () => 20 }),
  /**
   * The spec fixes a lease's ttl_seconds at 5 to 120 and the route's schema applies exactly that, so these are
   * advertised by /v1/info and any other value is refused at start rather than advertised and not applied.
   */
  lease_seconds_min: Schema.optionalWith(Schema.Literal(5), { default: () => 5 as const }),
  lease_seconds_max: Schema.optionalWith(Schema.Literal(120), { default: () => 120 as const }),
  quote_validity_seconds_max: Schema.optionalWith(PositiveInt, { default: () => 300 }),
  take_parts_max: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 8)), { default: () => 8 }),
  pay_window_seconds: Schema.optionalWith(PositiveInt, { default: () => 120 }),
  /** Largest single fill, token base units. */
  fill_max: Schema.optionalWith(Amount, { default: () => "1000000000000" }),
  /** Blocks of one retired contract a GET /v1/escrow/legacy page reads (spec: at most 8,000). */
  legacy_page_blocks: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 8000)), { default: () => 8000 }),
  /**
   * POST /v1/auth/challenge per client (src/Domain/ClientAddress.ts): burst and refill per minute, charged
   * before the per-address and global budgets, so one client exhausts its own budget, never the global one.
   */
  client_challenge_burst: Schema.optionalWith(PositiveInt, { default: () => 60 }),
  client_challenges_per_minute: Schema.optionalWith(PositiveInt, { default: () => 60 }),
  /** GET /v1/stream connections one client may hold on all runners together, subscribed or not, with a token or not. */
  stream_connections_per_client: Schema.optionalWith(Schema.Int.pipe(Schema.between(1, 256)), { default: () => 32 }),
  /**
   * Of the 256 stream connections (all runners together), how many may be without a token (subscribed anonymously or
   * not subscribed yet); the rest are kept for subscriptions with a session or credential token.
   */
  stream_anonymous_connections: Schema.optionalWith(Schema.Int.pipe(Schema.between(0, 256)), { default: () => 192 }),
}) {}

export class SettlementTimings extends Schema.Class<SettlementTimings>("SettlementTimings")({
  maker_timeout_seconds: Schema.optionalWith(PositiveInt, { default: () => 1800 }),
  taker_timeout_seconds: Schema.optionalWith(PositiveInt, { default: () => 3600 }),
  lock_cutoff_seconds: Schema.optionalWith(PositiveInt, { default: () => 60 }),
  reveal_cutoff_seconds: Schema.optionalWith(PositiveInt, { default: () => 600 }),
  /**
   * Settlement v2 (src/Domain/SettlementTimingV2.ts has the inequalities): every configured SettlementEscrowV2 must
   * have been deployed with exactly these immutables (CLAIM_WINDOW, PAY_BY_MAX, MAX_LOCK, MAX_QUOTE_LIFE,
   * TAKER_TIMEOUT_MIN). Defaults: the devnet's values.
   */
  claim_window_seconds: Schema.optionalWith(PositiveInt, { default: () => 600 }),
  pay_by_max_seconds: Schema.optionalWith(PositiveInt, { default: () => 120 }),
  max_lock_seconds: Schema.optionalWith(PositiveInt, { default: () => 7200 }),
  max_quote_life_seconds: Schema.optionalWith(PositiveInt, { default: () => 300 }),
  taker_timeout_min_seconds: Schema.optionalWith(PositiveInt, { default: () => 900 }),
  /**
   * The escrow new orders are funded on (orders.escrow_version, migration 0019): 2 = the venue's `escrow_v2`
   * (settlement v2, where the maker holds each fill's secret), 1 = its v1 `escrow`. A venue without `escrow_v2`
   * funds on v1 whatever this says. v1 orders only drain once this is 2. Default 2 since the whole v2 path runs
   * (orders, quotes, takes, transfers, settlement, the maker's reveal); set 1 to keep new orders on v1.
   */
  escrow_version: Schema.optionalWith(Schema.Literal(1, 2), { default: () => 2 as const }),
  /**
   * Settlement v2 fades (src/Settlement/RepoV2.ts, migration 0020): a maker identity is flagged not routable once its
   * fades (payments final with reveal_cutoff left on a live lock, never claimed) exceed max_fade_rate × max(its
   * chances, fade_min_chances); the floor keeps a new identity from being judged on one or two fills.
   */
  max_fade_rate: Schema.optionalWith(Schema.Number.pipe(Schema.between(0, 1)), { default: () => 0.2 }),
  fade_min_chances: Schema.optionalWith(PositiveInt, { default: () => 5 }),
  /** Settlement v2: a taker account with more locks left unpaid (every lock final, no payment) gets no new take. */
  max_unpaid_locks: Schema.optionalWith(Schema.Int.pipe(Schema.nonNegative()), { default: () => 3 }),
}) {}

export class AccessConfig extends Schema.Class<AccessConfig>("AccessConfig")({
  mode: Schema.optionalWith(Schema.Literal("open", "beta"), { default: () => "open" as const }),
  captcha_site_key: Schema.optionalWith(Schema.String, { default: () => "" }),
}) {}

export class AuthConfig extends Schema.Class<AuthConfig>("AuthConfig")({
  /** SIWE `Chain ID`; default: the first venue's chain. */
  chain_id: Schema.optional(PositiveInt),
  /** Node for ERC-1271/6492 smart-wallet checks; default: that chain's venue RPC URLs. */
  rpc_urls: Schema.optional(Schema.NonEmptyArray(Url)),
  session_days: Schema.optionalWith(Schema.Number.pipe(Schema.positive(), Schema.lessThanOrEqualTo(90)), {
    default: () => 7,
  }),
  statement: Schema.optionalWith(Schema.String, { default: () => "Sign in to the settlement service." }),
}) {}

/** How withdrawals are relayed (actors/WithdrawalDesk.ts) and prepared. */
export class WithdrawalSettings extends Schema.Class<WithdrawalSettings>("WithdrawalSettings")({
  /** Pause between two looks for queued withdrawals, milliseconds. */
  poll_ms: Schema.optionalWith(PositiveInt, { default: () => 250 }),
  /** First pause before an unknown withdrawal is checked against venue evidence again; doubles up to the max. */
  reconcile_ms: Schema.optionalWith(PositiveInt, { default: () => 2_000 }),
  reconcile_max_ms: Schema.optionalWith(PositiveInt, { default: () => 60_000 }),
  /** Withdrawals relayed or reconciled at once (each account has at most one in flight). */
  concurrency: Schema.optionalWith(PositiveInt, { default: () => 16 }),
  /** A prepared withdrawal must be submitted within this many seconds (and within the venue's nonce window). */
  preparation_ttl_seconds: Schema.optionalWith(PositiveInt, { default: () => 600 }),
}) {}

/** A trusted proxy: an IPv4 or IPv6 address, or a CIDR block. */
const TrustedProxy = Schema.String.pipe(
  Schema.filter((s) => parseProxyEntry(s) !== undefined, {
    message: () => "must be an IP address or a CIDR block such as 10.0.0.0/8",
  }),
)

/** Never echoes the value: a decode failure names the field only. */
const PrivateKey = Schema.Redacted(
  Schema.String.pipe(
    Schema.pattern(/^0x[0-9a-fA-F]{64}$/),
    Schema.annotations({ message: () => "must be a 0x-prefixed 32-byte hex private key" }),
    // Zero or past the curve's order: viem would throw (with a stack) when deriving the address.
    Schema.filter((k) => privateKeyProblem(k) === undefined, {
      message: () => "is not a valid secp256k1 private key (out of range)",
    }),
  ),
).annotations({ message: () => "must be a 0x-prefixed 32-byte hex private key" })

export class DeploymentConfig extends Schema.Class<DeploymentConfig>("DeploymentConfig")(
  {
    venues: Schema.NonEmptyArray(VenueConfig).pipe(
      Schema.filter((vs) => new Set(vs.map((v) => v.id)).size === vs.length, {
        message: () => "venue ids must be unique",
      }),
    ),
    limits: Schema.optionalWith(Limits, { default: () => Limits.make({}) }),
    settlement: Schema.optionalWith(SettlementTimings, { default: () => SettlementTimings.make({}) }),
    access: Schema.optionalWith(AccessConfig, { default: () => AccessConfig.make({}) }),
    auth: Schema.optionalWith(AuthConfig, { default: () => AuthConfig.make({}) }),
    app_origins: Schema.NonEmptyArray(Origin),
    admins: Schema.optionalWith(Schema.Array(Address), { default: () => [] }),
    operator_key: PrivateKey,
    withdrawals: Schema.optionalWith(WithdrawalSettings, { default: () => WithdrawalSettings.make({}) }),
    /**
     * Secret the at-rest key of the per-account venue agent keys is derived from; default: the operator key
     * (rotating that key then requires every Aster account to link again).
     */
    agent_key_secret: Schema.optional(PrivateKey),
    /**
     * Peers whose `X-Forwarded-For` names the client (addresses or CIDR blocks, e.g. the load balancer's
     * subnet). Empty (the default): the header is ignored and the client is the socket's peer address.
     */
    trusted_proxies: Schema.optionalWith(Schema.Array(TrustedProxy), { default: () => [] }),
  },
  { parseOptions: { onExcessProperty: "error" } },
) {}

/** The SIWE parameters: the app's origin (not the API host) as domain and URI, and the auth chain. */
export const siweSettings = (deployment: DeploymentConfig) => {
  const origin = new URL(deployment.app_origins[0])
  const chainId = deployment.auth.chain_id ?? deployment.venues[0].chain_id
  const venue = deployment.venues.find((v) => v.chain_id === chainId)
  return {
    domain: origin.host,
    uri: origin.origin,
    chainId,
    rpcUrls: deployment.auth.rpc_urls ?? venue?.rpc_urls,
    statement: deployment.auth.statement,
    sessionMs: deployment.auth.session_days * 24 * 3600 * 1000,
  }
}

export class ConfigInvalid extends Data.TaggedError("ConfigInvalid")<{ readonly message: string }> {}

/** Formats decode issues as `path: message` lines; the messages of secret fields carry no value. */
export const describeIssues = (error: ParseResult.ParseError): string =>
  ParseResult.ArrayFormatter.formatErrorSync(error)
    // An optional field's `undefined` alternative adds a second, useless line per bad value.
    .filter((i) => !i.message.startsWith("Expected undefined"))
    .map((i) => `${i.path.length > 0 ? i.path.map((p) => String(p)).join(".") : "(root)"}: ${i.message}`)
    .join("; ")

export const decodeDeploymentConfig = (input: unknown, source: string) =>
  Schema.decodeUnknown(DeploymentConfig, { errors: "all", onExcessProperty: "error" })(input).pipe(
    Effect.mapError((e) => new ConfigInvalid({ message: `invalid configuration in ${source}: ${describeIssues(e)}` })),
  )

export interface AppConfigShape {
  readonly deployment: DeploymentConfig
  readonly port: number
  /** Absent: the embedded PostgreSQL is used. */
  readonly databaseUrl: Option.Option<Redacted.Redacted<string>>
  /** Lowercase address of the operator key. */
  readonly operator: string
  /** Where the file came from, for the start-up line. */
  readonly source: string
}

export class AppConfig extends Context.Tag("AppConfig")<AppConfig, AppConfigShape>() {
  static readonly make = (deployment: DeploymentConfig, rest: Omit<AppConfigShape, "deployment" | "operator">) =>
    AppConfig.of({
      deployment,
      operator: privateKeyToAddress(Redacted.value(deployment.operator_key) as `0x${string}`).toLowerCase(),
      ...rest,
    })

  static readonly layer = (deployment: DeploymentConfig, rest: Omit<AppConfigShape, "deployment" | "operator">) =>
    Layer.succeed(AppConfig, AppConfig.make(deployment, rest))

  /**
   * Reads SETTLEMENT_CONFIG (a JSON file), PORT and DATABASE_URL. Without SETTLEMENT_CONFIG the
   * built-in development config is used. OPERATOR_KEY, when set, replaces `operator_key`.
   */
  static readonly fromEnv = Layer.effect(
    AppConfig,
    Effect.gen(function* () {
      const fs = yield* FileSystem.FileSystem
      const path = yield* EffectConfig.option(EffectConfig.nonEmptyString("SETTLEMENT_CONFIG"))
      const operatorKey = yield* EffectConfig.option(EffectConfig.redacted("OPERATOR_KEY"))
      const port = yield* EffectConfig.port("PORT").pipe(EffectConfig.withDefault(8080))
      const databaseUrl = yield* EffectConfig.option(EffectConfig.redacted("DATABASE_URL"))
      // Each failure below is one line naming the variable and the fix, never a value (start-up errors).
      if (Option.isSome(operatorKey)) {
        const problem = privateKeyProblem(Redacted.value(operatorKey.value))
        if (problem !== undefined) {
          return yield* new ConfigInvalid({
            message: `OPERATOR_KEY ${problem}: fix it, or unset it to use operator_key`,
          })
        }
      }
      if (Option.isSome(databaseUrl)) {
        const problem = databaseUrlProblem(Redacted.value(databaseUrl.value))
        if (problem !== undefined) return yield* new ConfigInvalid({ message: `DATABASE_URL ${problem}` })
      }
      const { raw, source } = Option.isSome(path)
        ? {
            raw: yield* fs.readFileString(path.value).pipe(
              Effect.mapError(
                (e) =>
                  new ConfigInvalid({
                    message: `SETTLEMENT_CONFIG ${path.value}: cannot read the file (${e._tag === "SystemError" ? (e.reason === "NotFound" ? "no such file" : e.reason) : "bad path"}); point SETTLEMENT_CONFIG at your deployment config`,
                  }),
              ),
              Effect.flatMap((text) =>
                Either.match(parseJsonText(text), {
                  onLeft: (where) =>
                    Effect.fail(
                      new ConfigInvalid({
                        message: `SETTLEMENT_CONFIG ${path.value}: not valid JSON at ${where}; fix the file there`,
                      }),
                    ),
                  onRight: Effect.succeed,
                }),
              ),
            ),
            source: path.value,
          }
        : { raw: DevelopmentConfig as unknown, source: "built-in development config" }
      const withKey =
        Option.isSome(operatorKey) && typeof raw === "object" && raw !== null
          ? { ...raw, operator_key: Redacted.value(operatorKey.value) }
          : raw
      const deployment = yield* decodeDeploymentConfig(withKey, source)
      return AppConfig.make(deployment, { port, databaseUrl, source })
    }),
  )
}
