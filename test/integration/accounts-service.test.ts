/**
 * The Accounts service (src/Accounts.ts) on its Test layer: a throw-away database and the development config, no
 * HTTP and no chain (no venue chain client: an EOA's link signature is checked locally) and no venue API (every
 * venue links with the generic message). accounts.test.ts and aster-signin.test.ts cover the wire and the
 * agent-approval venue; this proves the concept stands alone: refused links write nothing, and the main path links,
 * shows and unlinks.
 */
import { SqlClient } from "@effect/sql"
import { describe, expect, layer } from "@effect/vitest"
import { Effect, Layer, TestClock } from "effect"
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { ensureAccount } from "../../src/Accounts/Repo.ts"
import { Accounts } from "../../src/Accounts.ts"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import { SecureRandom } from "../../src/SecureRandom.ts"
import { VenueAdapters } from "../../src/Venues/VenueAdapters.ts"
import { failure } from "../support/Exits.ts"
import { testAppConfig } from "../support/TestConfig.ts"

const fresh = () => privateKeyToAccount(generatePrivateKey())

/** A signed-in master (its account row and browser identity, as its first sign-in writes them). */
const signedIn = Effect.gen(function* () {
  const master = fresh().address.toLowerCase()
  yield* ensureAccount({ master, access: "granted", identityId: crypto.randomUUID(), nowMs: Date.now() })
  return master
})

const linkedRows = (master: string) =>
  Effect.flatMap(
    SqlClient.SqlClient,
    (sql) => sql<{ venue: string }>`select venue from linked_accounts where master = ${master} order by venue`,
  )

const Offline = Layer.mergeAll(
  testAppConfig(),
  SecureRandom.Live,
  Layer.succeed(ChainClients, ChainClients.of({ venue: () => undefined, auth: undefined, chain: () => undefined })),
  Layer.succeed(VenueAdapters, VenueAdapters.fromList([])),
)

describe("Accounts service", () => {
  layer(Accounts.Test.pipe(Layer.provideMerge(Offline)), { timeout: 120_000 })((it) => {
    /** The link challenge for `wallet` on `venue`, signed by `signer` (the wallet itself unless given). */
    const signed = (master: string, venue: string, wallet: PrivateKeyAccount, signer = wallet) =>
      Effect.gen(function* () {
        const accounts = yield* Accounts
        const c = yield* accounts.linkChallenge({ master, venue, address: wallet.address })
        const signature = yield* Effect.promise(() => signer.signMessage({ message: c.message }))
        return { venue, address: wallet.address, nonce: c.nonce, signature }
      })

    it.effect("refused links answer their catalogue error and link nothing", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(Date.now())
        const accounts = yield* Accounts
        const master = yield* signedIn
        const wallet = fresh()

        expect(
          failure(yield* Effect.exit(accounts.linkChallenge({ master, venue: "nowhere", address: wallet.address }))),
        ).toEqual({ tag: "NotFound", message: "unknown venue nowhere; see GET /v1/venues" })
        expect(failure(yield* Effect.exit(accounts.link(master, { venue: "aster", address: wallet.address })))).toEqual(
          { tag: "InvalidRequest", message: "nonce and signature are required unless address is the master" },
        )
        const unknown = { venue: "aster", address: wallet.address, nonce: "a".repeat(32), signature: "0x00" }
        expect(failure(yield* Effect.exit(accounts.link(master, unknown)))).toEqual({
          tag: "ChallengeUnknown",
          message: "no link challenge with this nonce",
        })
        // Another master's nonce is unknown to this one.
        const theirs = yield* signed(yield* signedIn, "aster", wallet)
        expect(failure(yield* Effect.exit(accounts.link(master, theirs)))).toMatchObject({ tag: "ChallengeUnknown" })
        // Signed by another key: refused, and the nonce is spent.
        const forged = yield* signed(master, "aster", wallet, fresh())
        expect(failure(yield* Effect.exit(accounts.link(master, forged)))).toMatchObject({ tag: "SignatureInvalid" })
        expect(failure(yield* Effect.exit(accounts.link(master, forged)))).toEqual({
          tag: "ChallengeUsed",
          message: "this link challenge was already used",
        })
        // A nonce issued for one venue does not link another.
        const elsewhere = yield* signed(master, "aster", wallet)
        expect(failure(yield* Effect.exit(accounts.link(master, { ...elsewhere, venue: "hyperliquid" })))).toEqual({
          tag: "InvalidRequest",
          message: "the nonce was issued for another venue or address",
        })
        // Ten minutes on the Effect clock: the challenge expired.
        const late = yield* signed(master, "aster", wallet)
        yield* TestClock.adjust("10 minutes")
        expect(failure(yield* Effect.exit(accounts.link(master, late)))).toEqual({
          tag: "ChallengeExpired",
          message: "the link challenge expired",
        })
        expect(failure(yield* Effect.exit(accounts.unlink(master, "aster")))).toEqual({
          tag: "NotFound",
          message: "no account linked on aster",
        })
        expect(yield* linkedRows(master)).toEqual([])
      }),
    )

    it.effect("links the master itself and a signed wallet, shows them, refuses a second per venue, unlinks", () =>
      Effect.gen(function* () {
        yield* TestClock.setTime(Date.now())
        const accounts = yield* Accounts
        const sql = yield* SqlClient.SqlClient
        const master = yield* signedIn
        const wallet = fresh()

        const own = yield* accounts.link(master, { venue: "hyperliquid", address: master })
        expect(own).toMatchObject({ venue: "hyperliquid", address: master, venue_wallet: null, expires_at: null })
        const challenge = yield* accounts.linkChallenge({ master, venue: "aster", address: wallet.address })
        expect(challenge.message).toContain("Venue: aster")
        expect(challenge.message).toContain(`Address: ${wallet.address}`)
        const signature = yield* Effect.promise(() => wallet.signMessage({ message: challenge.message }))
        const linked = yield* accounts.link(master, {
          venue: "aster",
          address: wallet.address,
          nonce: challenge.nonce,
          signature,
        })
        expect(linked).toMatchObject({ venue: "aster", address: wallet.address.toLowerCase() })

        const account = yield* accounts.account(master)
        expect(account).toMatchObject({ master_address: master, access: "granted" })
        expect(account.quote_identity_id).toMatch(/^[0-9a-f-]{36}$/)
        expect(account.accounts.map((a) => [a.venue, a.address])).toEqual([
          ["aster", wallet.address.toLowerCase()],
          ["hyperliquid", master],
        ])

        // One account per venue; an address linked elsewhere by another master is refused.
        const second = yield* signed(master, "aster", fresh())
        expect(failure(yield* Effect.exit(accounts.link(master, second)))).toEqual({
          tag: "StateConflict",
          message: "an account is already linked on aster; unlink it first",
        })
        const someone = yield* signedIn
        const taken = yield* signed(someone, "aster", wallet)
        expect(failure(yield* Effect.exit(accounts.link(someone, taken)))).toEqual({
          tag: "StateConflict",
          message: "this address is linked to another account on this venue",
        })

        expect(yield* accounts.unlink(master, "aster")).toMatchObject({ venue: "aster" })
        expect(yield* linkedRows(master)).toEqual([{ venue: "hyperliquid" }])
        const journal = yield* sql<{ kind: string }>`
          select kind from journal where master = ${master} and kind like 'account.%linked' order by id`
        expect(journal.map((r) => r.kind)).toEqual(["account.linked", "account.linked", "account.unlinked"])
      }),
    )
  })
})
