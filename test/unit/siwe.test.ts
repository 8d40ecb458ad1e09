import { describe, expect, it } from "@effect/vitest"
import { Effect, Either, Fiber, TestClock } from "effect"
import fc from "fast-check"
import { createPublicClient, custom, type Hex, type PublicClient, recoverMessageAddress } from "viem"
import { privateKeyToAccount } from "viem/accounts"
import { SECP256K1_HALF_N, SECP256K1_N } from "../../src/Domain/Signature.ts"
import {
  buildSiweMessage,
  checkSiwe,
  parseSiwe,
  SIWE_MAX_MESSAGE_LENGTH,
  type SiweExpectations,
  verifySiwe,
} from "../../src/Domain/Siwe.ts"
import {
  checkSignatureShape,
  SIWE_MAX_CONTRACT_SIGNATURE_BYTES,
  verifySiweSignature,
} from "../../src/Domain/SiweSignature.ts"
import {
  type SiweChainUnavailable,
  type SiweError,
  type SiweErrorCode,
  verdictCode,
} from "../../src/Domain/SiweVerdicts.ts"

// anvil's well-known development keys: deterministic, never funded anywhere that matters.
const alice = privateKeyToAccount("0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80")
const mallory = privateKeyToAccount("0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d")

const ISSUED_AT = Date.UTC(2031, 4, 6, 7, 8, 9, 10)
const TTL = 10 * 60_000
const params = {
  domain: "app.settle.example",
  uri: "https://app.settle.example",
  chainId: 8453,
  address: alice.address.toLowerCase(),
  nonce: "Qm4t7Zp2Lx9Vb6Nc",
  issuedAtMs: ISSUED_AT,
  expirationTimeMs: ISSUED_AT + TTL,
  statement: "Sign in to the settlement service.",
}
const expectations: SiweExpectations = {
  domain: params.domain,
  uri: params.uri,
  chainId: params.chainId,
  address: alice.address.toUpperCase().replace("0X", "0x"),
  nonce: params.nonce,
  nowMs: ISSUED_AT + 5_000,
}
const message = buildSiweMessage(params)
const signature = await alice.signMessage({ message })

// --- signature surgery -------------------------------------------------------------------------

const hex32 = (n: bigint) => n.toString(16).padStart(64, "0")
const split = (sig: Hex) => ({
  r: BigInt(`0x${sig.slice(2, 66)}`),
  s: BigInt(`0x${sig.slice(66, 130)}`),
  v: Number.parseInt(sig.slice(130, 132), 16),
})
const join = (r: bigint, s: bigint, v: number): Hex => `0x${hex32(r)}${hex32(s)}${v.toString(16).padStart(2, "0")}`
/** The EIP-2 twin: s' = n - s and the other recovery id. ecrecover gives the same signer. */
const highSTwin = (sig: Hex): Hex => {
  const { r, s, v } = split(sig)
  const flipped = v === 27 ? 28 : v === 28 ? 27 : v === 0 ? 1 : 0
  return join(r, SECP256K1_N - s, flipped)
}
const withV = (sig: Hex, v: number): Hex => join(split(sig).r, split(sig).s, v)

// --- assertions --------------------------------------------------------------------------------

/** Every failure must carry its code and must not echo signature bytes. */
const failsWith = (
  effect: Effect.Effect<unknown, SiweError | SiweChainUnavailable>,
  code: SiweErrorCode,
  sig: string = signature,
) =>
  Effect.gen(function* () {
    const error = yield* Effect.flip(effect)
    expect(error._tag).not.toBe("SiweChainUnavailable")
    if (error._tag !== "SiweChainUnavailable") expect(verdictCode(error)).toBe(code)
    for (let i = 2; i + 16 <= sig.length; i += 16) expect(error.message).not.toContain(sig.slice(i, i + 16))
    return error
  })

const leftCode = <A>(result: Either.Either<A, SiweError>): SiweErrorCode | "ok" =>
  Either.isLeft(result) ? verdictCode(result.left) : "ok"

/** A message signed by alice, with arbitrary edits to the fields. */
const signedVariant = (edit: Partial<typeof params>) =>
  Effect.promise(async () => {
    const m = buildSiweMessage({ ...params, ...edit })
    return { message: m, signature: await alice.signMessage({ message: m }) }
  })

/** A public client over a scripted transport; `calls` counts the requests it received. */
const scriptedClient = (answer: (method: string) => Promise<unknown>) => {
  const calls: Array<string> = []
  const client = createPublicClient({
    transport: custom(
      {
        request: async ({ method }: { method: string }) => {
          calls.push(method)
          return answer(method)
        },
      },
      { retryCount: 0 },
    ),
  }) as PublicClient
  return { client, calls }
}

describe("verifySiwe: the happy path", () => {
  it.effect("accepts alice's signature and returns the parsed message", () =>
    Effect.gen(function* () {
      const parsed = yield* verifySiwe({ message, signature, expect: expectations })
      expect(parsed.address).toBe(alice.address)
      expect(parsed.chainId).toBe(8453)
      expect(parsed.expirationTime).toBe(new Date(ISSUED_AT + TTL).toISOString())
    }),
  )

  it.effect("accepts the v = 0 / 1 form of the same signature", () =>
    Effect.gen(function* () {
      const { v } = split(signature)
      const zeroOne = withV(signature, v - 27)
      expect(Either.getOrThrow(checkSignatureShape(zeroOne))).toBe("eoa")
      yield* verifySiwe({ message, signature: zeroOne, expect: expectations })
      // and both recovery ids in both notations are accepted in shape
      for (const other of [0, 1, 27, 28]) expect(leftCode(checkSignatureShape(withV(signature, other)))).toBe("ok")
    }),
  )

  it.effect("needs no RPC for an EOA signature, even with a client given", () =>
    Effect.gen(function* () {
      const { client, calls } = scriptedClient(() => Promise.reject(new Error("must not be called")))
      yield* verifySiwe({ message, signature, expect: expectations, client })
      expect(calls).toEqual([])
    }),
  )
})

describe("verifySiwe: each check has its own code", () => {
  it.effect("another address signed: SIGNATURE_INVALID", () =>
    Effect.gen(function* () {
      const forged = yield* Effect.promise(() => mallory.signMessage({ message }))
      yield* failsWith(verifySiwe({ message, signature: forged, expect: expectations }), "SIGNATURE_INVALID", forged)
      yield* failsWith(
        verifySiweSignature({ message, signature: forged, address: alice.address }),
        "SIGNATURE_INVALID",
        forged,
      )
    }),
  )

  it.effect("signature over a different message: SIGNATURE_INVALID", () =>
    Effect.gen(function* () {
      const other = yield* signedVariant({ nonce: "AnotherNonce123" })
      yield* failsWith(
        verifySiwe({ message, signature: other.signature, expect: expectations }),
        "SIGNATURE_INVALID",
        other.signature,
      )
    }),
  )

  it.effect("wrong domain: SIWE_DOMAIN_MISMATCH", () =>
    failsWith(
      verifySiwe({ message, signature, expect: { ...expectations, domain: "evil.example" } }),
      "SIWE_DOMAIN_MISMATCH",
    ),
  )

  it.effect("domain that only embeds ours (userinfo, port, case): SIWE_DOMAIN_MISMATCH", () =>
    Effect.gen(function* () {
      for (const domain of ["user@app.settle.example", "app.settle.example:8443", "APP.settle.example"]) {
        const v = yield* signedVariant({ domain, uri: "https://app.settle.example" })
        yield* failsWith(verifySiwe({ ...v, expect: expectations }), "SIWE_DOMAIN_MISMATCH", v.signature)
      }
    }),
  )

  it.effect("scheme prefix other than our URI's: SIWE_DOMAIN_MISMATCH; the matching one passes", () =>
    Effect.gen(function* () {
      const withScheme = async (scheme: string) => {
        const m = `${scheme}://${message}`
        return { message: m, signature: await alice.signMessage({ message: m }) }
      }
      const http = yield* Effect.promise(() => withScheme("http"))
      yield* failsWith(verifySiwe({ ...http, expect: expectations }), "SIWE_DOMAIN_MISMATCH", http.signature)
      const https = yield* Effect.promise(() => withScheme("https"))
      const parsed = yield* verifySiwe({ ...https, expect: expectations })
      expect(parsed.scheme).toBe("https")
    }),
  )

  it.effect("wrong URI: SIWE_URI_MISMATCH", () =>
    failsWith(
      verifySiwe({ message, signature, expect: { ...expectations, uri: "https://app.settle.example/" } }),
      "SIWE_URI_MISMATCH",
    ),
  )

  it.effect("wrong chain id: SIWE_CHAIN_MISMATCH", () =>
    Effect.gen(function* () {
      yield* failsWith(
        verifySiwe({ message, signature, expect: { ...expectations, chainId: 1 } }),
        "SIWE_CHAIN_MISMATCH",
      )
      // a message signed for another chain, checked on ours
      const other = yield* signedVariant({ chainId: 5 })
      yield* failsWith(verifySiwe({ ...other, expect: expectations }), "SIWE_CHAIN_MISMATCH", other.signature)
    }),
  )

  it.effect("message names another address: SIWE_ADDRESS_MISMATCH", () =>
    Effect.gen(function* () {
      const m = buildSiweMessage({ ...params, address: mallory.address })
      const sig = yield* Effect.promise(() => mallory.signMessage({ message: m }))
      yield* failsWith(verifySiwe({ message: m, signature: sig, expect: expectations }), "SIWE_ADDRESS_MISMATCH", sig)
    }),
  )

  it.effect("wrong nonce (including case): SIWE_NONCE_MISMATCH", () =>
    Effect.gen(function* () {
      for (const nonce of ["Zz9Yy8Xx7Ww6Vv5U", params.nonce.toLowerCase()]) {
        yield* failsWith(verifySiwe({ message, signature, expect: { ...expectations, nonce } }), "SIWE_NONCE_MISMATCH")
      }
    }),
  )

  it.effect("expired: CHALLENGE_EXPIRED at and after Expiration Time, valid 1 ms before", () =>
    Effect.gen(function* () {
      const expiry = ISSUED_AT + TTL
      yield* verifySiwe({ message, signature, expect: { ...expectations, nowMs: expiry - 1 } })
      for (const nowMs of [expiry, expiry + 1, expiry + 86_400_000]) {
        yield* failsWith(verifySiwe({ message, signature, expect: { ...expectations, nowMs } }), "CHALLENGE_EXPIRED")
      }
    }),
  )

  it.effect("Issued At in the future beyond the skew: CHALLENGE_NOT_YET_VALID", () =>
    Effect.gen(function* () {
      yield* verifySiwe({ message, signature, expect: { ...expectations, nowMs: ISSUED_AT - 60_000 } })
      yield* failsWith(
        verifySiwe({ message, signature, expect: { ...expectations, nowMs: ISSUED_AT - 60_001 } }),
        "CHALLENGE_NOT_YET_VALID",
      )
      yield* failsWith(
        verifySiwe({ message, signature, expect: { ...expectations, nowMs: ISSUED_AT - 1, skewMs: 0 } }),
        "CHALLENGE_NOT_YET_VALID",
      )
      yield* verifySiwe({ message, signature, expect: { ...expectations, nowMs: ISSUED_AT - 5_000, skewMs: 5_000 } })
    }),
  )

  it.effect("Not Before in the future: CHALLENGE_NOT_YET_VALID; valid from Not Before on", () =>
    Effect.gen(function* () {
      const notBefore = ISSUED_AT + 60_000
      const m = `${message}\nNot Before: ${new Date(notBefore).toISOString()}`
      const sig = yield* Effect.promise(() => alice.signMessage({ message: m }))
      expect(Either.getOrThrow(parseSiwe(m)).notBefore).toBe(new Date(notBefore).toISOString())
      yield* failsWith(
        verifySiwe({ message: m, signature: sig, expect: { ...expectations, nowMs: notBefore - 1 } }),
        "CHALLENGE_NOT_YET_VALID",
        sig,
      )
      yield* verifySiwe({ message: m, signature: sig, expect: { ...expectations, nowMs: notBefore } })
    }),
  )

  it("an unusable clock fails closed", () => {
    const parsed = Either.getOrThrow(parseSiwe(message))
    expect(leftCode(checkSiwe(parsed, { ...expectations, nowMs: Number.NaN }))).toBe("CHALLENGE_EXPIRED")
    expect(leftCode(checkSiwe(parsed, { ...expectations, skewMs: Number.POSITIVE_INFINITY }))).toBe("CHALLENGE_EXPIRED")
    expect(leftCode(checkSiwe(parsed, { ...expectations, skewMs: -1 }))).toBe("CHALLENGE_EXPIRED")
  })

  it.effect("the checks run in the documented order: parse, fields, shape, signature", () =>
    Effect.gen(function* () {
      // bad domain AND malformed signature: the field wins
      yield* failsWith(
        verifySiwe({ message, signature: "0x1234", expect: { ...expectations, domain: "x.example" } }),
        "SIWE_DOMAIN_MISMATCH",
        "0x1234",
      )
      // malformed message AND wrong domain: parsing wins
      yield* failsWith(
        verifySiwe({ message: "hello", signature, expect: { ...expectations, domain: "x.example" } }),
        "SIWE_MALFORMED",
      )
      // expired AND high-s: the clock wins
      const twin = highSTwin(signature)
      yield* failsWith(
        verifySiwe({ message, signature: twin, expect: { ...expectations, nowMs: ISSUED_AT + TTL } }),
        "CHALLENGE_EXPIRED",
        twin,
      )
    }),
  )
})

describe("malformed messages: SIWE_MALFORMED", () => {
  const cases: Record<string, string> = {
    empty: "",
    "not SIWE": "please sign this",
    "CRLF line endings": message.replace(/\n/g, "\r\n"),
    "trailing line feed": `${message}\n`,
    "lowercase address": message.replace(alice.address, alice.address.toLowerCase()),
    "version 2": message.replace("Version: 1", "Version: 2"),
    "chain id beyond 2^53": message.replace("Chain ID: 8453", "Chain ID: 99999999999999999999"),
    "leap second in Issued At": message.replace(/Issued At: [^\n]+/, "Issued At: 2031-05-06T07:08:60Z"),
    "31 February": message.replace(/Issued At: [^\n]+/, "Issued At: 2031-02-31T07:08:09Z"),
    "Expiration before Issued At line": message.replace(/(Issued At: [^\n]+)\n(Expiration Time: [^\n]+)/, "$2\n$1"),
    "statement with a line break": message.replace("Sign in to", "Sign in\nto"),
    "short nonce": message.replace(params.nonce, "abc123"),
    "longer than the limit": message.replace("Sign in to", `${"x".repeat(SIWE_MAX_MESSAGE_LENGTH)} Sign in to`),
  }
  for (const [name, text] of Object.entries(cases)) {
    it.effect(name, () =>
      Effect.gen(function* () {
        expect(leftCode(parseSiwe(text))).toBe("SIWE_MALFORMED")
        yield* failsWith(verifySiwe({ message: text, signature, expect: expectations }), "SIWE_MALFORMED")
      }),
    )
  }

  it("buildSiweMessage refuses inputs that would not round-trip", () => {
    const bad: Array<Partial<typeof params>> = [
      { domain: "" },
      { domain: "app.settle.example wants you to sign in with your Ethereum account:\n0x0" },
      { uri: "not a uri" },
      { nonce: "short" },
      { nonce: "has space 12345" },
      { address: "0x1234" },
      { chainId: 0 },
      { chainId: 1.5 },
      { chainId: Number.MAX_SAFE_INTEGER + 1 },
      { statement: "two\nlines" },
      { issuedAtMs: Number.NaN },
      { expirationTimeMs: ISSUED_AT },
      { expirationTimeMs: 8.64e15 + 1 },
    ]
    for (const edit of bad) expect(() => buildSiweMessage({ ...params, ...edit }), JSON.stringify(edit)).toThrow()
  })
})

describe("signature shape", () => {
  const sig65 = (r: bigint, s: bigint, v = 27) => join(r, s, v)
  const r = split(signature).r

  it.effect("wrong length: SIGNATURE_MALFORMED", () =>
    Effect.gen(function* () {
      const cases = [
        "0x",
        signature.slice(0, 130), // 64 bytes (EIP-2098 compact length)
        signature.slice(0, 131), // odd number of hex digits
        signature.slice(2), // no 0x
        `${signature.slice(0, 129)}zz`, // not hex
        ` ${signature}`,
        `0x${"ab".repeat(SIWE_MAX_CONTRACT_SIGNATURE_BYTES + 1)}`,
      ]
      for (const bad of cases) {
        expect(leftCode(checkSignatureShape(bad))).toBe("SIGNATURE_MALFORMED")
        yield* failsWith(verifySiwe({ message, signature: bad, expect: expectations }), "SIGNATURE_MALFORMED", bad)
      }
    }),
  )

  it("longer hex up to the limit is a contract signature", () => {
    expect(Either.getOrThrow(checkSignatureShape(`${signature}00`))).toBe("contract")
    expect(Either.getOrThrow(checkSignatureShape(`0x${"ab".repeat(SIWE_MAX_CONTRACT_SIGNATURE_BYTES)}`))).toBe(
      "contract",
    )
  })

  it.effect("v not in {0, 1, 27, 28}: SIGNATURE_MALFORMED", () =>
    Effect.gen(function* () {
      for (const v of [2, 3, 26, 29, 35, 36, 255]) {
        const bad = withV(signature, v)
        expect(leftCode(checkSignatureShape(bad))).toBe("SIGNATURE_MALFORMED")
        yield* failsWith(verifySiwe({ message, signature: bad, expect: expectations }), "SIGNATURE_MALFORMED", bad)
      }
    }),
  )

  it("r or s outside [1, n): SIGNATURE_MALFORMED", () => {
    for (const bad of [
      sig65(0n, 1n),
      sig65(r, 0n),
      sig65(SECP256K1_N, 1n),
      sig65(r, SECP256K1_N),
      sig65(r, 2n ** 256n - 1n),
    ])
      expect(leftCode(checkSignatureShape(bad))).toBe("SIGNATURE_MALFORMED")
  })

  it("s = n/2 is low, s = n/2 + 1 is high", () => {
    expect(leftCode(checkSignatureShape(sig65(r, SECP256K1_HALF_N)))).toBe("ok")
    expect(leftCode(checkSignatureShape(sig65(r, SECP256K1_HALF_N + 1n)))).toBe("SIGNATURE_MALLEABLE")
  })

  it.effect("the high-s twin of a valid signature: SIGNATURE_MALLEABLE (viem alone would accept it)", () =>
    Effect.gen(function* () {
      for (const base of [signature, withV(signature, split(signature).v - 27)]) {
        const twin = highSTwin(base)
        // ecrecover still yields alice: that is the malleability
        expect(yield* Effect.promise(() => recoverMessageAddress({ message, signature: twin }))).toBe(alice.address)
        expect(leftCode(checkSignatureShape(twin))).toBe("SIGNATURE_MALLEABLE")
        yield* failsWith(
          verifySiweSignature({ message, signature: twin, address: alice.address }),
          "SIGNATURE_MALLEABLE",
          twin,
        )
        yield* failsWith(verifySiwe({ message, signature: twin, expect: expectations }), "SIGNATURE_MALLEABLE", twin)
      }
    }),
  )

  it.effect("an address that is not 20 bytes is refused before any recovery", () =>
    failsWith(verifySiweSignature({ message, signature, address: "0x1234" }), "SIWE_ADDRESS_MISMATCH"),
  )
})

describe("verifySiweSignature: the chain path (scripted transport)", () => {
  const contractSig = `0x${"11".repeat(96)}` as Hex

  it.effect("a contract signature without a client: SIGNATURE_INVALID", () =>
    failsWith(
      verifySiweSignature({ message, signature: contractSig, address: alice.address }),
      "SIGNATURE_INVALID",
      contractSig,
    ),
  )

  it.effect("the chain says valid (eth_call returns true): accepted", () =>
    Effect.gen(function* () {
      const { client, calls } = scriptedClient(async () => "0x01")
      yield* verifySiweSignature({ message, signature: contractSig, address: alice.address, client })
      expect(calls).toEqual(["eth_call"])
    }),
  )

  it.effect("the chain says invalid (false, or a revert): SIGNATURE_INVALID", () =>
    Effect.gen(function* () {
      const no = scriptedClient(async () => "0x00").client
      yield* failsWith(
        verifySiweSignature({ message, signature: contractSig, address: alice.address, client: no }),
        "SIGNATURE_INVALID",
        contractSig,
      )
      const reverts = scriptedClient(() =>
        Promise.reject({ code: 3, message: "execution reverted", data: "0x" }),
      ).client
      yield* failsWith(
        verifySiweSignature({ message, signature: contractSig, address: alice.address, client: reverts }),
        "SIGNATURE_INVALID",
        contractSig,
      )
    }),
  )

  it.effect("the RPC fails: SiweChainUnavailable, for contract and for non-recovering 65-byte signatures", () =>
    Effect.gen(function* () {
      const down = scriptedClient(() => Promise.reject(new Error("connect ECONNREFUSED 127.0.0.1:1"))).client
      const forged = yield* Effect.promise(() => mallory.signMessage({ message }))
      for (const sig of [contractSig, forged]) {
        const error = yield* Effect.flip(
          verifySiweSignature({ message, signature: sig, address: alice.address, client: down }),
        )
        expect(error._tag).toBe("SiweChainUnavailable")
        expect(error.message).not.toContain(sig.slice(2, 20))
      }
      const busy = scriptedClient(() => Promise.reject({ code: -32005, message: "limit exceeded" })).client
      const error = yield* Effect.flip(
        verifySiweSignature({ message, signature: contractSig, address: alice.address, client: busy }),
      )
      expect(error._tag).toBe("SiweChainUnavailable")
    }),
  )

  it.effect("the RPC never answers: SiweChainUnavailable after the timeout", () =>
    Effect.gen(function* () {
      const hung = scriptedClient(() => new Promise<never>(() => {})).client
      const fiber = yield* Effect.fork(
        Effect.flip(verifySiweSignature({ message, signature: contractSig, address: alice.address, client: hung })),
      )
      yield* TestClock.adjust("10 seconds")
      const error = yield* Fiber.join(fiber)
      expect(error._tag).toBe("SiweChainUnavailable")
    }),
  )
})

describe("property: low-s signatures verify, their high-s twins never do", () => {
  const key = fc
    .uint8Array({ minLength: 32, maxLength: 32 })
    .map((bytes) => BigInt(`0x${Buffer.from(bytes).toString("hex")}`))
    .filter((k) => k > 0n && k < SECP256K1_N)
    .map((k) => `0x${hex32(k)}` as Hex)

  it("random keys and messages", async () => {
    await fc.assert(
      fc.asyncProperty(key, fc.string({ unit: "binary", maxLength: 300 }), fc.boolean(), async (pk, text, zeroOne) => {
        const account = privateKeyToAccount(pk)
        const signed = await account.signMessage({ message: text })
        const sig = zeroOne ? withV(signed, split(signed).v - 27) : signed
        const ok = await Effect.runPromise(
          Effect.either(verifySiweSignature({ message: text, signature: sig, address: account.address })),
        )
        expect(Either.isRight(ok)).toBe(true)
        const twin = highSTwin(sig)
        const rejected = await Effect.runPromise(
          Effect.either(verifySiweSignature({ message: text, signature: twin, address: account.address })),
        )
        expect(
          Either.isLeft(rejected) && rejected.left._tag !== "SiweChainUnavailable" && verdictCode(rejected.left),
        ).toBe("SIGNATURE_MALLEABLE")
      }),
      { numRuns: 60 },
    )
  })
})
