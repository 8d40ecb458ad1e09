/**
 * `npm run maker -- setup`: everything a maker needs before `run`, from one funded owner key.
 *
 *   1. sign in with the owner key (SIWE: the challenge's message, for the owner's address, personal_signed);
 *   2. link the owner's account on the order's venue (its link message, or the venue's agent approval granting
 *      nothing);
 *   3. register a quote identity for the signer key (MAKER_SIGNER_KEY, or a fresh key kept in the state file);
 *   4. issue a `quote` credential bound to it (its `mk_` token goes to the state file only);
 *   5. create the order (client id stored first: a lost answer is recovered by it), check its fund_order sign item
 *      names the escrow you reviewed, sign the items with the owner key and wait until the order is funded.
 *
 * Nothing the service proposes is signed as given: each item is checked, or rebuilt from what the maker chose and
 * signed only if the proposal is exactly that (SignChecks.ts).

 *
 * After each step the state file (mode 0600) is rewritten, so a setup stopped half-way resumes where it stopped.
 * Prints ids and addresses, never a token or key.
 */
import { existsSync, readFileSync } from "node:fs"
import { getAddress, type Hex } from "viem"
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts"
import { pinChainIds } from "./ChainPins.ts"
import { apiOf, retrying } from "./MakerHttp.ts"
import { UsageError } from "./MakerOptions.ts"
import { type MakerState, readState, writeState } from "./MakerState.ts"
import { ServiceRefused } from "./ServiceFaults.ts"
import { checkLink, checkSiwe, orderItemsToSign, registrationToSign } from "./SignChecks.ts"

export interface SetupFlags {
  readonly state: string
  readonly api: string
  readonly venue: string
  readonly "receive-venue"?: string | undefined
  readonly amount: string
  readonly "client-order-id"?: string | undefined
  readonly "venues-from"?: string | undefined
  readonly "escrow-v2": ReadonlyArray<string>
  readonly rpc: ReadonlyArray<string>
  readonly "from-block": ReadonlyArray<string>
  readonly supply: string
  readonly receive: string
  readonly "min-fill": string
  readonly "quote-size"?: string | undefined
  readonly "max-venue-fee": string
  readonly timeout: string
}

interface Venue {
  readonly id: string
  readonly chain_id: number
  readonly escrow: string
  readonly token: string
  readonly decimals: number
}

const HEX_KEY = /^0x[0-9a-fA-F]{64}$/
const HEX_ADDRESS = /^0x[0-9a-fA-F]{40}$/
const UINT = /^[0-9]{1,78}$/

/** `VENUE=VALUE` pairs of a repeated flag. */
const pairs = (flag: string, list: ReadonlyArray<string>, valid: (v: string) => boolean) => {
  const out: Record<string, string> = {}
  for (const item of list) {
    const at = item.indexOf("=")
    const [venue, value] = [item.slice(0, at), item.slice(at + 1)]
    if (at <= 0 || !valid(value)) throw new UsageError(`bad ${flag} ${item}`)
    out[venue] = value
  }
  return out
}

/**
 * The v2 escrows, endpoints and first blocks you reviewed: the flags, over what `--venues-from` names (a deployment
 * config's `venues`: `id`, `rpc_urls`, `escrow_v2.address`, `escrow_v2.deployment_block`; the devnet writes one to
 * .data/devnet-config.json).
 */
const reviewed = (flags: SetupFlags) => {
  const escrows: Record<string, string> = {}
  const rpc: Record<string, string> = {}
  const fromBlocks: Record<string, string> = {}
  const file = flags["venues-from"]
  if (file !== undefined) {
    if (!existsSync(file)) throw new UsageError(`--venues-from ${file}: no such file`)
    const venues = (
      JSON.parse(readFileSync(file, "utf8")) as {
        venues?: ReadonlyArray<{
          id: string
          rpc_urls?: ReadonlyArray<string>
          escrow_v2?: { address: string; deployment_block?: number | string }
        }>
      }
    ).venues
    if (!Array.isArray(venues)) throw new UsageError(`--venues-from ${file}: no "venues" list`)
    for (const v of venues) {
      if (v.escrow_v2?.address !== undefined) escrows[v.id] = v.escrow_v2.address
      if (v.rpc_urls?.[0] !== undefined) rpc[v.id] = v.rpc_urls[0]
      if (v.escrow_v2?.deployment_block !== undefined) fromBlocks[v.id] = String(v.escrow_v2.deployment_block)
    }
  }
  Object.assign(
    escrows,
    pairs("--escrow-v2", flags["escrow-v2"], (v) => HEX_ADDRESS.test(v)),
  )
  Object.assign(
    rpc,
    pairs("--rpc", flags.rpc, (v) => /^https?:\/\/\S+$/.test(v)),
  )
  Object.assign(
    fromBlocks,
    pairs("--from-block", flags["from-block"], (v) => /^[0-9]{1,20}$/.test(v)),
  )
  return { escrows, rpc, fromBlocks }
}

/** Sign-in with Ethereum: the challenge's message personal_signed exactly as given. Returns the session token. */
export const signIn = async (base: string, owner: PrivateKeyAccount) => {
  const api = apiOf(base)
  const challenge = await api((c) => c.auth.challenge({ payload: { address: owner.address } }))
  checkSiwe(challenge.message, owner.address, Date.now())
  const signature = await owner.signMessage({ message: challenge.message })
  const verified = await api((c) => c.auth.verify({ payload: { nonce: challenge.nonce, signature } }))
  return verified.token
}

/** Links `owner` on `venue` (its link message, or the venue's agent approval); an account already linked is fine. */
const link = async (base: string, token: string, owner: PrivateKeyAccount, venue: string) => {
  const api = apiOf(base, token)
  const me = await api((c) => c.account.me())
  const accounts = me.accounts as ReadonlyArray<{ venue: string; address: string }>
  if (accounts.some((a) => a.venue === venue && getAddress(a.address) === owner.address)) return "already linked"
  const challenge = (await api((c) => c.account.linkChallenge({ payload: { venue, address: owner.address } }))) as {
    nonce: string
    message: string
    typed_data?: unknown
  }
  checkLink(challenge, { owner: owner.address, venue, master: String(me.master_address), nowMs: Date.now() })
  const signature: Hex =
    challenge.typed_data === undefined
      ? await owner.signMessage({ message: challenge.message })
      : await owner.signTypedData(challenge.typed_data as never)
  try {
    await api((c) =>
      c.account.link({ payload: { venue, address: owner.address, nonce: challenge.nonce, signature } as never }),
    )
  } catch (e) {
    if (e instanceof ServiceRefused && e.status === 409) return "already linked"
    throw e
  }
  return challenge.typed_data === undefined ? "linked" : "linked (agent approval registered)"
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

export const runSetup = async (flags: SetupFlags, env: NodeJS.ProcessEnv, log: (line: string) => void) => {
  const ownerKey = env.MAKER_OWNER_KEY
  if (ownerKey === undefined || !HEX_KEY.test(ownerKey)) {
    throw new UsageError("MAKER_OWNER_KEY must hold the owner's 32-byte hex key (it signs in and funds the order)")
  }
  const owner = privateKeyToAccount(ownerKey as Hex)
  const envSigner = env.MAKER_SIGNER_KEY
  if (envSigner !== undefined && envSigner !== "" && !HEX_KEY.test(envSigner)) {
    throw new UsageError("MAKER_SIGNER_KEY must be a 32-byte hex key")
  }
  if (!UINT.test(flags.amount) || BigInt(flags.amount) === 0n) {
    throw new UsageError("--amount must be a positive integer (base units)")
  }
  for (const [name, v] of [
    ["--supply", flags.supply],
    ["--receive", flags.receive],
    ["--min-fill", flags["min-fill"]],
    ["--max-venue-fee", flags["max-venue-fee"]],
  ] as const) {
    if (!UINT.test(v)) throw new UsageError(`${name} must be an integer (base units)`)
  }
  if (BigInt(flags.supply) === 0n || BigInt(flags.receive) === 0n || BigInt(flags["min-fill"]) > BigInt(flags.supply)) {
    throw new UsageError("--supply and --receive must be positive and --min-fill at most --supply")
  }
  const quoteSize = flags["quote-size"] ?? (BigInt(flags.amount) / 2n).toString()
  if (!UINT.test(quoteSize) || BigInt(quoteSize) === 0n || BigInt(quoteSize) > BigInt(flags.amount)) {
    throw new UsageError("--quote-size must be a positive integer at most --amount")
  }
  const timeoutSeconds = Number(flags.timeout)
  if (!Number.isInteger(timeoutSeconds) || timeoutSeconds < 1) throw new UsageError("--timeout must be seconds")
  const api = flags.api.replace(/\/$/, "")
  let state: MakerState = readState(flags.state) ?? {}
  if (state.owner !== undefined && getAddress(state.owner) !== owner.address) {
    throw new UsageError(`${flags.state} belongs to owner ${state.owner}: use another --state`)
  }
  if (state.order_id !== undefined && (state.venue !== flags.venue || state.amount !== flags.amount)) {
    throw new UsageError(
      `${flags.state} already holds order ${state.order_id} (${state.amount} on ${state.venue}): use another --state`,
    )
  }
  const save = (patch: MakerState) => {
    state = { ...state, ...patch }
    writeState(flags.state, state)
  }
  const retry = <A>(f: () => Promise<A>) => retrying(f, log)
  const publicApi = apiOf(api)

  const venues: ReadonlyArray<Venue> = (await retry(() => publicApi((c) => c.info.venues()))).data
  const venue = venues.find((v) => v.id === flags.venue)
  if (venue === undefined) {
    throw new UsageError(`--venue ${flags.venue} is not one of ${venues.map((v) => v.id).join(", ")}`)
  }
  const others = venues.filter((v) => v.id !== venue.id)
  const receiveId = flags["receive-venue"] ?? (others.length === 1 ? others[0]!.id : undefined)
  if (receiveId === undefined || !others.some((v) => v.id === receiveId)) {
    throw new UsageError(`--receive-venue must be one of ${others.map((v) => v.id).join(", ")}`)
  }
  const { escrows, rpc, fromBlocks } = reviewed(flags)
  save({ api, owner: owner.address, venue: venue.id, receive_venue: receiveId, amount: flags.amount })

  log(`Owner ${owner.address} signs in (SIWE)`)
  const token = await retry(() => signIn(api, owner))
  const session = apiOf(api, token)
  log(`  ${venue.id}: ${await retry(() => link(api, token, owner, venue.id))}`)

  if (state.identity_id === undefined) {
    const signerKey = (envSigner || state.signer_key || generatePrivateKey()) as Hex
    const signer = privateKeyToAccount(signerKey)
    // A generated key lives in the state file only; one from the environment stays there.
    save({ signer: signer.address, ...(envSigner ? {} : { signer_key: signerKey }) })
    const prepared = await retry(() =>
      session((c) => c.quoteIdentities.prepareIdentity({ payload: { signer: signer.address } })),
    )
    const signature = await signer.signTypedData(
      registrationToSign(prepared.typed_data, owner.address, signer.address) as never,
    )
    const identity = await retry(() =>
      session((c) => c.quoteIdentities.createIdentity({ payload: { signer: signer.address, signature } })),
    )
    save({ identity_id: identity.id })
  }
  log(`  quote identity ${state.identity_id} (signer ${state.signer}${state.signer_key ? ", a fresh key" : ""})`)

  if (state.credential === undefined) {
    const credential = await retry(() =>
      session((c) =>
        c.credentials.createCredential({
          payload: { quote_identity_id: state.identity_id!, scopes: ["quote"], label: "maker cli" } as never,
        }),
      ),
    )
    save({ credential_id: credential.id, credential: credential.token })
  }
  log(`  credential ${state.credential_id} (scope quote; its mk_ token is in ${flags.state}, mode 0600)`)

  const clientOrderId = state.client_order_id ?? flags["client-order-id"] ?? `maker-${crypto.randomUUID()}`
  save({ client_order_id: clientOrderId })
  const created = await retry(() =>
    session((c) =>
      c.orders.create({
        payload: {
          client_order_id: clientOrderId,
          venue: venue.id,
          receive_venue: receiveId,
          owner_address: owner.address,
          amount: flags.amount,
          quote_identity_id: state.identity_id!,
        } as never,
      }),
    ),
  )
  const orderId = created.order.id as Hex
  const items = created.to_sign as unknown as Array<{
    kind: string
    typed_data: { domain?: { verifyingContract?: string } }
  }>
  // The escrow the owner's FundOrder names must be one you reviewed: the v2 escrow (--escrow-v2) or the venue's v1.
  const fund = items.find((i) => i.kind === "fund_order")
  const named = fund?.typed_data.domain?.verifyingContract
  const v2Escrow = escrows[venue.id]
  const version =
    named !== undefined && v2Escrow !== undefined && getAddress(named) === getAddress(v2Escrow)
      ? 2
      : named !== undefined && getAddress(named) === getAddress(venue.escrow) && v2Escrow === undefined
        ? 1
        : undefined
  if (version === undefined) {
    throw new UsageError(
      `the order's fund_order names escrow ${named ?? "(none)"} on ${venue.id}, not the one you reviewed ` +
        `(${v2Escrow ?? "none given: --escrow-v2 or --venues-from"}); nothing signed`,
    )
  }
  if (version === 2) {
    for (const id of [venue.id, receiveId]) {
      if (escrows[id] === undefined) throw new UsageError(`a v2 order needs --escrow-v2 ${id}=0x… (reviewed)`)
    }
    // The FundOrder and permit are signed for the chain the owner's own endpoint reports (ChainPins.ts).
    await pinChainIds(venues, rpc, [venue.id, receiveId])
  }
  const involved = [venue.id, receiveId]
  const only = (r: Record<string, string>): Record<string, string> =>
    Object.fromEntries(involved.flatMap((id) => (r[id] === undefined ? [] : [[id, r[id]] as const])))
  save({
    order_id: orderId,
    escrow_version: version,
    ...(version === 2 ? { escrows_v2: only(escrows), rpc: only(rpc), from_blocks: only(fromBlocks) } : {}),
    quotes: [`${receiveId}:${owner.address}:${flags.supply}:${flags.receive}:${flags["min-fill"]}`],
    quote_size: quoteSize,
  })
  log(`  order ${orderId} (client id ${clientOrderId}): ${flags.amount} on ${venue.id}, settlement v${version}`)
  if (created.order.state === "preparing") {
    const toSign = orderItemsToSign(items, {
      orderId,
      owner: owner.address,
      signer: getAddress(state.signer!),
      amount: BigInt(flags.amount),
      escrow: getAddress(version === 2 ? v2Escrow! : venue.escrow),
      version,
      token: getAddress(venue.token),
      decimals: venue.decimals,
      maxVenueFee: BigInt(flags["max-venue-fee"]),
      // v1 orders drain only (no --rpc asked): their items keep the proposal's chain.
      ...(version === 2 ? { chainId: venue.chain_id } : {}),
    })
    const signatures: Record<string, Hex> = {}
    for (const [kind, typedData] of Object.entries(toSign)) signatures[kind] = await owner.signTypedData(typedData)
    log(`  signed ${items.map((i) => i.kind).join(", ")} with the owner key`)
    await retry(() => session((c) => c.orders.sign({ path: { id: orderId }, payload: signatures as never })))
  }
  const started = Date.now()
  let last = ""
  for (;;) {
    const order = await retry(() => session((c) => c.orders.get({ path: { id: orderId } })))
    if (order.state !== last) log(`  order ${order.state}${order.state === "funded" ? "" : " …"}`)
    last = order.state
    if (order.state === "funded") break
    if (order.state === "failed" || order.state === "closed") {
      throw new ServiceRefused(409, "ORDER_FAILED", `the order ended ${order.state}: ${order.error ?? ""}`)
    }
    if (Date.now() - started > timeoutSeconds * 1000) {
      throw new ServiceRefused(408, "TIMEOUT", `the order is ${order.state} after ${timeoutSeconds} s; run setup again`)
    }
    await sleep(2_000)
  }
  log(
    `Ready: quote ${state.quotes![0]} (size ${quoteSize}) with \`npm run maker -- run${flags.state === "maker.json" ? "" : ` --state ${flags.state}`}\``,
  )
  return state
}
