import { BlockList, isIP } from "node:net"

/**
 * Who a request comes from, for per-client budgets (challenges, stream connections): the address of
 * the socket's peer, or, only when that peer is a configured trusted proxy, the rightmost address of
 * `X-Forwarded-For` that is not itself a trusted proxy. Pure; the HTTP side is src/Http/ClientIdentity.ts.
 *
 * The budget key is the IPv4 address itself, or the /64 prefix of an IPv6 address (a single host is
 * usually given a whole /64, so one key per address would let it rotate through 2^64 budgets).
 */
export interface Client {
  /** The budget key: `a.b.c.d`, or `xxxx:xxxx:xxxx:xxxx::/64`; `unknown` when the socket had no address. */
  readonly key: string
  /** The address the key comes from (normalised). */
  readonly address: string
}

const V4_WITH_PORT = /^(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3}):\d{1,5}$/
const V6_BRACKETED = /^\[([^\]]+)\](?::\d{1,5})?$/

/**
 * A textual address as the key's address: IPv4-mapped IPv6 (`::ffff:a.b.c.d`) as IPv4, an IPv6 zone
 * (`%eth0`) dropped, lowercase; a port (`a.b.c.d:port`, `[v6]:port`, as some proxies write them)
 * removed. `undefined` when it is not an IP address.
 */
export const normalizeAddress = (raw: string): string | undefined => {
  let s = raw.trim()
  const bracketed = V6_BRACKETED.exec(s)
  if (bracketed) s = bracketed[1]!
  else {
    const withPort = V4_WITH_PORT.exec(s)
    if (withPort) s = withPort[1]!
  }
  const zone = s.indexOf("%")
  if (zone >= 0) s = s.slice(0, zone)
  s = s.toLowerCase()
  const family = isIP(s)
  if (family === 4) return s
  if (family !== 6) return undefined
  const mapped = /^(?:0{0,4}:){0,4}:?(?:0{0,4}:)?ffff:(\d{1,3}\.\d{1,3}\.\d{1,3}\.\d{1,3})$/.exec(s)
  if (mapped && isIP(mapped[1]!) === 4) return mapped[1]!
  return s
}

/** The eight 16-bit groups of a valid IPv6 address (an embedded IPv4 tail included). */
const ipv6Groups = (address: string): Array<number> => {
  let text = address
  const v4 = /(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(text)
  if (v4) {
    const [a, b, c, d] = v4.slice(1).map(Number) as [number, number, number, number]
    text = `${text.slice(0, v4.index)}${((a << 8) | b).toString(16)}:${((c << 8) | d).toString(16)}`
  }
  const [head, tail] = text.includes("::") ? (text.split("::") as [string, string]) : [text, undefined]
  const parse = (part: string) => (part === "" ? [] : part.split(":").map((g) => Number.parseInt(g, 16)))
  const left = parse(head)
  if (tail === undefined) return left
  const right = parse(tail)
  return [...left, ...Array<number>(8 - left.length - right.length).fill(0), ...right]
}

/** The budget key of a normalised address: IPv4 as is, IPv6 by its /64. */
export const clientKey = (address: string): string =>
  isIP(address) === 6
    ? `${ipv6Groups(address)
        .slice(0, 4)
        .map((g) => g.toString(16))
        .join(":")}::/64`
    : address

/** An entry of `trusted_proxies`: an IPv4 or IPv6 address, or a CIDR block (`10.0.0.0/8`, `fd00::/8`). */
export const parseProxyEntry = (
  entry: string,
): { readonly address: string; readonly prefix: number | undefined; readonly family: 4 | 6 } | undefined => {
  const [text, prefixText, ...rest] = entry.split("/")
  if (text === undefined || rest.length > 0 || isIP(text) === 0) return undefined
  const address = normalizeAddress(text)
  if (address === undefined) return undefined
  const family = isIP(address) as 4 | 6
  if (prefixText === undefined) return { address, prefix: undefined, family }
  if (!/^\d{1,3}$/.test(prefixText)) return undefined
  const prefix = Number(prefixText)
  return prefix <= (family === 4 ? 32 : 128) ? { address, prefix, family } : undefined
}

export interface TrustedProxies {
  /** True when at least one proxy is configured: only then is `X-Forwarded-For` read at all. */
  readonly configured: boolean
  readonly has: (address: string) => boolean
}

/** The configured trusted proxies (entries already validated by the config schema). */
export const trustedProxies = (entries: ReadonlyArray<string>): TrustedProxies => {
  const list = new BlockList()
  for (const entry of entries) {
    const parsed = parseProxyEntry(entry)
    if (parsed === undefined) throw new Error(`trusted_proxies: not an IP address or CIDR block: ${entry}`)
    const type = parsed.family === 4 ? "ipv4" : "ipv6"
    if (parsed.prefix === undefined) list.addAddress(parsed.address, type)
    else list.addSubnet(parsed.address, parsed.prefix, type)
  }
  return {
    configured: entries.length > 0,
    has: (address) => entries.length > 0 && list.check(address, isIP(address) === 6 ? "ipv6" : "ipv4"),
  }
}

const client = (address: string): Client => ({ key: clientKey(address), address })

/**
 * The client of a request. `remote` is the socket's peer address; `forwardedFor` the request's
 * `X-Forwarded-For` (every header line, comma-joined). The header is read only when the peer is a
 * trusted proxy, and then from the right: each hop a trusted proxy appended is skipped while it is
 * itself a trusted proxy; the first one that is not is the client. A hop that is not an address
 * stops the walk at the proxy that forwarded it, so a client can never choose its own identity by
 * writing the header itself (it can only add hops to the left of the ones our proxies append).
 */
export const resolveClient = (
  remote: string | undefined,
  forwardedFor: string | undefined,
  trusted: TrustedProxies,
): Client => {
  let current = remote === undefined ? undefined : normalizeAddress(remote)
  if (current === undefined) return { key: "unknown", address: "unknown" }
  if (!trusted.configured || forwardedFor === undefined || !trusted.has(current)) return client(current)
  const hops = forwardedFor.split(",")
  for (let i = hops.length - 1; i >= 0; i--) {
    const hop = normalizeAddress(hops[i]!)
    if (hop === undefined) break
    current = hop
    if (!trusted.has(hop)) break
  }
  return client(current)
}
