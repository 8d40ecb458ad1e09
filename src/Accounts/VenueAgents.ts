/**
 * The agents ("API wallets") this service holds for accounts on the agent-approval venue (Aster).
 *
 * Where the key lives: one secp256k1 key per venue account (venue, address), generated from SecureRandom when the
 * account first asks for an approval, stored in `venue_agents.key_ciphertext` encrypted with AES-256-GCM under a
 * key derived (HKDF-SHA256) from `agent_key_secret`, or from the operator key when that is not configured. The
 * associated data binds a ciphertext to its venue, account and agent address, so a row cannot be swapped for
 * another's. The plaintext exists only inside `openAgentKey` and the signer built from it (as a Redacted value);
 * it is never logged, never returned, never journaled. The agent is approved with every permission false: its key
 * alone can move nothing; it signs the account's V3 requests (balances, withdrawal relays, history).
 */
import { createCipheriv, createDecipheriv, hkdfSync } from "node:crypto"
import { SqlClient } from "@effect/sql"
import { Clock, Effect, Option, Redacted } from "effect"
import type { Address, Hex } from "viem"
import { privateKeyToAddress } from "viem/accounts"
import type { DeploymentConfig } from "../Config.ts"
import { SECP256K1_N } from "../Domain/Signature.ts"
import { SecureRandom } from "../SecureRandom.ts"
import { appendJournal } from "../Sql/Journal.ts"
import { type AsterAgentResolver, privateKeyAgent } from "../Venues/AsterAgent.ts"
import { AgentUnavailable } from "../Venues/VenueErrors.ts"

const VERSION = 1
const IV_BYTES = 12
const TAG_BYTES = 16

/** The at-rest key of agent keys, derived from the configured secret (or the operator key). */
export interface AgentKeyring {
  readonly key: Buffer
}

export const agentKeyring = (deployment: DeploymentConfig): AgentKeyring => {
  const secret = Redacted.value(deployment.agent_key_secret ?? deployment.operator_key)
  const ikm = Buffer.from(secret.slice(2), "hex")
  return { key: Buffer.from(hkdfSync("sha256", ikm, "cross-venue-settlement", "venue-agent-keys/v1", 32)) }
}

const aad = (venue: string, address: string, agent: string) =>
  Buffer.from(`venue-agent\n${venue}\n${address.toLowerCase()}\n${agent.toLowerCase()}`)

/** version ‖ iv ‖ ciphertext ‖ tag. */
const seal = (ring: AgentKeyring, iv: Uint8Array, associated: Buffer, plaintext: Buffer): Buffer => {
  const cipher = createCipheriv("aes-256-gcm", ring.key, iv)
  cipher.setAAD(associated)
  const body = Buffer.concat([cipher.update(plaintext), cipher.final()])
  return Buffer.concat([Buffer.from([VERSION]), Buffer.from(iv), body, cipher.getAuthTag()])
}

const open = (ring: AgentKeyring, associated: Buffer, blob: Buffer): Buffer | undefined => {
  if (blob.length !== 1 + IV_BYTES + 32 + TAG_BYTES || blob[0] !== VERSION) return undefined
  try {
    const decipher = createDecipheriv("aes-256-gcm", ring.key, blob.subarray(1, 1 + IV_BYTES))
    decipher.setAAD(associated)
    decipher.setAuthTag(blob.subarray(blob.length - TAG_BYTES))
    return Buffer.concat([decipher.update(blob.subarray(1 + IV_BYTES, blob.length - TAG_BYTES)), decipher.final()])
  } catch {
    return undefined
  }
}

export interface NewAgentKey {
  readonly agent: Address
  readonly ciphertext: Buffer
}

/** A fresh agent key for (venue, address), sealed at once; only its address and ciphertext leave. */
export const generateAgentKey = (ring: AgentKeyring, venue: string, address: string) =>
  Effect.gen(function* () {
    const random = yield* SecureRandom
    for (;;) {
      const bytes = Buffer.from(yield* random.bytes(32))
      const scalar = BigInt(`0x${bytes.toString("hex")}`)
      if (scalar === 0n || scalar >= SECP256K1_N) continue
      const agent = privateKeyToAddress(`0x${bytes.toString("hex")}`).toLowerCase() as Address
      const iv = yield* random.bytes(IV_BYTES)
      const ciphertext = seal(ring, iv, aad(venue, address, agent), bytes)
      bytes.fill(0)
      return { agent, ciphertext } satisfies NewAgentKey
    }
  })

/** The agent's private key, or undefined when the ciphertext does not open under this keyring. */
export const openAgentKey = (
  ring: AgentKeyring,
  venue: string,
  address: string,
  agent: string,
  ciphertext: Buffer,
): Redacted.Redacted<Hex> | undefined => {
  const plain = open(ring, aad(venue, address, agent), ciphertext)
  if (plain === undefined || plain.length !== 32) return undefined
  const key = `0x${plain.toString("hex")}` as Hex
  plain.fill(0)
  if (privateKeyToAddress(key).toLowerCase() !== agent.toLowerCase()) return undefined
  return Redacted.make(key)
}

export interface VenueAgentRow {
  readonly venue: string
  readonly address: string
  readonly agent_address: string
  readonly key_ciphertext: Buffer
  readonly expires_at: Date | null
  readonly registered_at: Date | null
}

export const findVenueAgent = (venue: string, address: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<VenueAgentRow>`
      select venue, address, agent_address, key_ciphertext, expires_at, registered_at
      from venue_agents where venue = ${venue} and address = ${address.toLowerCase()}`.pipe(
      Effect.map((rows) => Option.fromNullable(rows[0])),
    ),
  )

/**
 * Records the agent the venue just approved for (venue, address): a new key replaces an older one (the older
 * agent stays approved at the venue with no permissions, and is simply never used again).
 */
export const saveApprovedAgent = (p: {
  venue: string
  address: string
  agent: string
  ciphertext: Buffer
  expiresMs: number
  nowMs: number
}) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
      insert into venue_agents (venue, address, agent_address, key_ciphertext, expires_at, registered_at,
                                created_at, updated_at)
      values (${p.venue}, ${p.address.toLowerCase()}, ${p.agent.toLowerCase()}, ${p.ciphertext},
              ${new Date(p.expiresMs)}, ${new Date(p.nowMs)}, ${new Date(p.nowMs)}, ${new Date(p.nowMs)})
      on conflict (venue, address) do update set
        agent_address = excluded.agent_address, key_ciphertext = excluded.key_ciphertext,
        expires_at = excluded.expires_at, registered_at = excluded.registered_at, updated_at = excluded.updated_at`,
  ).pipe(Effect.asVoid)

/**
 * The resolver the Aster adapter signs V3 requests with: the account's approved, unexpired agent, decrypted for
 * the one request. Anything else is AgentUnavailable: none or expired ("link the account again"), or, transient,
 * the database down or a ciphertext that does not open under the configured keyring (the service's own fault).
 */
export const databaseAgentResolver = (
  sql: SqlClient.SqlClient,
  ring: AgentKeyring,
  venue: string,
): AsterAgentResolver => {
  return (user) =>
    Effect.gen(function* () {
      const unavailable = (reason: string, transient = false) =>
        Effect.fail(new AgentUnavailable({ user, reason, transient }))
      const row = yield* findVenueAgent(venue, user).pipe(
        Effect.provideService(SqlClient.SqlClient, sql),
        Effect.catchAll(() => unavailable("the agent store could not be read", true)),
      )
      if (Option.isNone(row)) return yield* unavailable("no agent is approved for this account; link it again")
      const now = yield* Clock.currentTimeMillis
      const { expires_at, agent_address, key_ciphertext } = row.value
      if (expires_at === null || expires_at.getTime() <= now) {
        return yield* unavailable("the agent approval expired; link the account again")
      }
      const key = openAgentKey(ring, venue, user, agent_address, key_ciphertext)
      if (key === undefined) return yield* unavailable("the agent key does not open under the configured secret", true)
      return privateKeyAgent(key)
    })
}

// ---------------------------------------------------------------------------------------------
// Challenges of the agent-approval venue (sign-in and link)
// ---------------------------------------------------------------------------------------------

export interface AgentChallengeFields {
  readonly typedData: unknown
  readonly agent: string
  /** The agent's sealed key (new, or the account's existing one re-approved). */
  readonly ciphertext: Buffer
}

export const insertAgentSignInChallenge = (p: {
  nonce: string
  address: string
  venue: string
  message: string
  nowMs: number
  expiresMs: number
  agent: AgentChallengeFields
}) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
      insert into auth_challenges (nonce, address, message, expires_at, created_at, venue, typed_data, agent_address,
                                   agent_key_ciphertext)
      values (${p.nonce}, ${p.address}, ${p.message}, ${new Date(p.expiresMs)}, ${new Date(p.nowMs)}, ${p.venue},
              ${JSON.stringify(p.agent.typedData)}::jsonb, ${p.agent.agent}, ${p.agent.ciphertext})`,
  ).pipe(Effect.asVoid)

export const insertAgentLinkChallenge = (p: {
  nonce: string
  master: string
  venue: string
  address: string
  message: string
  nowMs: number
  expiresMs: number
  agent: AgentChallengeFields
}) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql`
      insert into link_challenges (nonce, master, venue, address, message, expires_at, created_at, typed_data,
                                   agent_address, agent_key_ciphertext)
      values (${p.nonce}, ${p.master}, ${p.venue}, ${p.address}, ${p.message}, ${new Date(p.expiresMs)},
              ${new Date(p.nowMs)}, ${JSON.stringify(p.agent.typedData)}::jsonb, ${p.agent.agent},
              ${p.agent.ciphertext})`,
  ).pipe(Effect.asVoid)

interface AgentChallengeRow {
  readonly venue: string | null
  readonly typed_data: unknown
  readonly agent_address: string | null
  readonly agent_key_ciphertext: Buffer | null
}

const toFields = (row: AgentChallengeRow | undefined) =>
  row === undefined || row.typed_data === null || row.agent_address === null || row.agent_key_ciphertext === null
    ? Option.none()
    : Option.some({
        venue: row.venue,
        typedData: row.typed_data,
        agent: row.agent_address,
        ciphertext: row.agent_key_ciphertext,
      })

/** The agent-approval part of a sign-in challenge; none for a SIWE challenge. */
export const findAgentSignInChallenge = (nonce: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<AgentChallengeRow>`
      select venue, typed_data, agent_address, agent_key_ciphertext from auth_challenges where nonce = ${nonce}`.pipe(
      Effect.map((rows) => toFields(rows[0])),
    ),
  )

/** The agent-approval part of a link challenge; none for the generic link message. */
export const findAgentLinkChallenge = (nonce: string, master: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<AgentChallengeRow>`
      select venue, typed_data, agent_address, agent_key_ciphertext from link_challenges
      where nonce = ${nonce} and master = ${master}`.pipe(Effect.map((rows) => toFields(rows[0]))),
  )

export type AgentLinkOutcome =
  | { readonly _tag: "Linked"; readonly row: LinkedRow; readonly created: boolean }
  | { readonly _tag: "VenueTaken" }
  | { readonly _tag: "AddressTaken" }

export interface LinkedRow {
  readonly venue: string
  readonly address: string
  readonly venue_wallet: string | null
  readonly expires_at: Date | null
  readonly linked_at: Date
}

/**
 * Links (master, venue) to `address` with the agent approval's expiry, or refreshes the expiry of that same link
 * (a renewed approval). Another address already linked on the venue by this master, or the address linked by
 * another master, is refused. Run inside the caller's transaction with the agent save.
 */
export const linkWithAgentApproval = (p: {
  master: string
  venue: string
  address: string
  expiresMs: number
  nowMs: number
}) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    Effect.gen(function* () {
      const address = p.address.toLowerCase()
      const current = sql<LinkedRow>`
        select venue, address, venue_wallet, expires_at, linked_at from linked_accounts
        where master = ${p.master} and venue = ${p.venue} for update`
      const refresh = (existing: LinkedRow) =>
        Effect.gen(function* () {
          if (existing.address !== address) return { _tag: "VenueTaken" } as AgentLinkOutcome
          const [row] = yield* sql<LinkedRow>`
            update linked_accounts set expires_at = ${new Date(p.expiresMs)}
            where master = ${p.master} and venue = ${p.venue}
            returning venue, address, venue_wallet, expires_at, linked_at`
          yield* appendJournal({
            kind: "account.linked",
            master: p.master,
            payload: { venue: p.venue, address, expires_at: new Date(p.expiresMs).toISOString() },
          })
          return { _tag: "Linked", row: row!, created: false } as AgentLinkOutcome
        })
      const [existing] = yield* current
      if (existing !== undefined) return yield* refresh(existing)
      const inserted = yield* sql<LinkedRow>`
        insert into linked_accounts (master, venue, address, venue_wallet, expires_at, linked_at)
        values (${p.master}, ${p.venue}, ${address}, null, ${new Date(p.expiresMs)}, ${new Date(p.nowMs)})
        on conflict do nothing
        returning venue, address, venue_wallet, expires_at, linked_at`
      const row = inserted[0]
      if (row === undefined) {
        // A conflict: this master's link of the venue committed meanwhile (an identical request raced this one: a
        // repeat, so refreshed as one), or the address is another master's.
        const [raced] = yield* current
        return raced !== undefined ? yield* refresh(raced) : ({ _tag: "AddressTaken" } as AgentLinkOutcome)
      }
      yield* appendJournal({
        kind: "account.linked",
        master: p.master,
        payload: { venue: p.venue, address, expires_at: new Date(p.expiresMs).toISOString() },
      })
      return { _tag: "Linked", row, created: true } as AgentLinkOutcome
    }),
  )

/** Would linking (master, venue, address) conflict? Checked before anything is sent to the venue. */
export const linkConflict = (master: string, venue: string, address: string) =>
  Effect.flatMap(SqlClient.SqlClient, (sql) =>
    sql<{ master: string; address: string }>`
      select master, address from linked_accounts
      where venue = ${venue} and (master = ${master} or address = ${address.toLowerCase()})`.pipe(
      Effect.map((rows) => {
        for (const r of rows) {
          if (r.master === master && r.address !== address.toLowerCase()) return Option.some("VenueTaken" as const)
          if (r.master !== master) return Option.some("AddressTaken" as const)
        }
        return Option.none()
      }),
    ),
  )
