import { Effect, Either } from "effect"
import { describe, expect, it } from "vitest"
import { decodeDeploymentConfig } from "../../src/Config.ts"
import { DevelopmentConfig } from "../../src/DevelopmentConfig.ts"
import {
  clientKey,
  normalizeAddress,
  parseProxyEntry,
  resolveClient,
  trustedProxies,
} from "../../src/Domain/ClientAddress.ts"

describe("client address", () => {
  it("normalises addresses: IPv4-mapped IPv6, zones, ports, case; refuses non-addresses", () => {
    expect(normalizeAddress("::ffff:127.0.0.2")).toBe("127.0.0.2")
    expect(normalizeAddress("0:0:0:0:0:ffff:10.1.2.3")).toBe("10.1.2.3")
    expect(normalizeAddress(" 203.0.113.7 ")).toBe("203.0.113.7")
    expect(normalizeAddress("203.0.113.7:51234")).toBe("203.0.113.7")
    expect(normalizeAddress("[2001:DB8::1]:443")).toBe("2001:db8::1")
    expect(normalizeAddress("fe80::1%eth0")).toBe("fe80::1")
    for (const bad of ["", "unknown", "example.com", "300.1.1.1", "1.2.3", "_hidden"]) {
      expect(normalizeAddress(bad), bad).toBeUndefined()
    }
  })

  it("keys IPv4 by address and IPv6 by its /64", () => {
    expect(clientKey("198.51.100.4")).toBe("198.51.100.4")
    expect(clientKey("2001:db8:1:2:aaaa:bbbb:cccc:dddd")).toBe("2001:db8:1:2::/64")
    expect(clientKey("2001:db8:1:2::ffff")).toBe("2001:db8:1:2::/64")
    expect(clientKey("2001:db8::")).toBe("2001:db8:0:0::/64")
    expect(clientKey("::1")).toBe("0:0:0:0::/64")
    expect(clientKey("64:ff9b::192.0.2.33")).toBe("64:ff9b:0:0::/64")
  })

  it("parses trusted proxy entries: addresses and CIDR blocks only", () => {
    expect(parseProxyEntry("10.0.0.0/8")).toEqual({ address: "10.0.0.0", prefix: 8, family: 4 })
    expect(parseProxyEntry("127.0.0.1")).toEqual({ address: "127.0.0.1", prefix: undefined, family: 4 })
    expect(parseProxyEntry("fd00::/8")).toEqual({ address: "fd00::", prefix: 8, family: 6 })
    for (const bad of [
      "10.0.0.0/33",
      "fd00::/129",
      "10.0.0.1:80",
      "proxy.internal",
      "10.0.0.0/8/1",
      "10.0.0.0/x",
      "",
    ]) {
      expect(parseProxyEntry(bad), bad).toBeUndefined()
    }
  })

  it("ignores X-Forwarded-For unless the peer is a configured trusted proxy", () => {
    const none = trustedProxies([])
    expect(resolveClient("127.0.0.1", "203.0.113.7", none)).toEqual({ key: "127.0.0.1", address: "127.0.0.1" })
    const trusted = trustedProxies(["127.0.0.1", "10.0.0.0/8"])
    // From an untrusted peer the header is the client's own claim: ignored.
    expect(resolveClient("198.51.100.9", "203.0.113.7", trusted).key).toBe("198.51.100.9")
    // From a trusted peer: the rightmost hop that is not a trusted proxy.
    expect(resolveClient("::ffff:127.0.0.1", "203.0.113.7", trusted).key).toBe("203.0.113.7")
    expect(resolveClient("127.0.0.1", "6.6.6.6, 203.0.113.7", trusted).key).toBe("203.0.113.7")
    expect(resolveClient("127.0.0.1", "6.6.6.6, 203.0.113.7, 10.1.2.3", trusted).key).toBe("203.0.113.7")
    expect(resolveClient("127.0.0.1", "2001:db8:5:6::1, 10.9.9.9", trusted).key).toBe("2001:db8:5:6::/64")
    // No header, an empty one, or only trusted hops.
    expect(resolveClient("127.0.0.1", undefined, trusted).key).toBe("127.0.0.1")
    expect(resolveClient("127.0.0.1", "", trusted).key).toBe("127.0.0.1")
    expect(resolveClient("127.0.0.1", "10.0.0.5, 10.0.0.6", trusted).key).toBe("10.0.0.5")
    // A malformed hop stops the walk at the proxy that forwarded it.
    expect(resolveClient("127.0.0.1", "203.0.113.7, garbage", trusted).key).toBe("127.0.0.1")
    expect(resolveClient("127.0.0.1", "garbage, 10.0.0.6", trusted).key).toBe("10.0.0.6")
    // No peer address (the socket is already gone).
    expect(resolveClient(undefined, "203.0.113.7", trusted).key).toBe("unknown")
  })

  it("config: trusted_proxies defaults to none, takes addresses and CIDR blocks, names a bad entry", () => {
    const decode = (input: unknown) => Effect.runSync(Effect.either(decodeDeploymentConfig(input, "test.json")))
    const plain = decode(DevelopmentConfig)
    expect(Either.isRight(plain) && plain.right.trusted_proxies).toEqual([])
    expect(Either.isRight(plain) && plain.right.limits).toMatchObject({
      client_challenge_burst: 60,
      client_challenges_per_minute: 60,
      stream_connections_per_client: 32,
      stream_anonymous_connections: 192,
    })
    const ok = decode({ ...DevelopmentConfig, trusted_proxies: ["10.0.0.0/8", "fd00::/8", "192.0.2.1"] })
    expect(Either.isRight(ok)).toBe(true)
    const bad = decode({ ...DevelopmentConfig, trusted_proxies: ["10.0.0.1", "lb.internal"] })
    expect(Either.isLeft(bad) && bad.left.message).toMatch(/trusted_proxies\.1: must be an IP address or a CIDR block/)
    const share = decode({ ...DevelopmentConfig, limits: { stream_anonymous_connections: 257 } })
    expect(Either.isLeft(share) && share.left.message).toContain("limits.stream_anonymous_connections")
  })
})
