/**
 * What `npm run maker -- setup` signs, checked before any key signs it (DESIGN §12: never sign typed data as the
 * service hands it; §10.2: a sign item is a proposal). The service is not trusted: every item is rebuilt here from
 * what the maker chose (owner, signer, amount, the reviewed escrow) and the service's proposal is signed only when it
 * hashes to exactly that rebuilt message; otherwise setup stops with nothing signed. An operator that slipped a
 * Permit to itself, a QuoteSet or an agent with withdrawal rights into a sign item gets no signature.
 *
 * Pure (no network): the caller reads the proposals and passes what it knows.
 */
import { Either } from "effect"
import { type Address, getAddress, type Hex, hashTypedData, parseUnits } from "viem"
import { linkProblem, signInProblem } from "../../src/Client/SignChecks.ts"
import { parseWithdrawAction } from "../../src/Domain/AsterSignedPayloads.ts"
import { fundOrderTypedData } from "../../src/Domain/EscrowTypedData.ts"
import { fundOrderV2TypedData } from "../../src/Domain/EscrowTypedDataV2.ts"
import { permitTypedData } from "../../src/Domain/Permit.ts"
import { quoteIdentityRegistrationTypedData } from "../../src/Domain/QuoteIdentityRegistration.ts"
import { parseHyperliquidTransfer } from "../../src/Venues/HyperliquidExchangeWire.ts"
import { USDC_SYSTEM_ADDRESS } from "../../src/Venues/HyperliquidTypedData.ts"
import { UsageError } from "./MakerOptions.ts"

// biome-ignore lint/suspicious/noExplicitAny: typed data as proposed on the wire (checked below)
type Wire = any

const refuse = (what: string, why: string): never => {
  throw new UsageError(`refusing to sign the ${what}: ${why}; nothing signed`)
}

const same = (a: unknown, b: string) => typeof a === "string" && a.toLowerCase() === b.toLowerCase()

/**
 * The wire proposal signed only if it is exactly what `rebuild` makes (same EIP-712 hash); returns what to sign. A
 * proposal too malformed to rebuild from (a field missing or of another type) is refused the same way.
 */
const exactly = <T>(what: string, proposed: Wire, rebuild: () => T): T => {
  let rebuilt: T | undefined
  try {
    const candidate = rebuild()
    if (hashTypedData(proposed) === hashTypedData(candidate as Wire)) rebuilt = candidate
  } catch {
    rebuilt = undefined
  }
  return rebuilt ?? refuse(what, "it is not the message this maker chose")
}

/**
 * Sign-in: an EIP-4361 message for the owner's own address, not expired (the typed client's check,
 * src/Client/SignChecks.ts; the CLI talks to one --api, so the message's origin is not pinned).
 */
export const checkSiwe = (message: string, owner: Address, nowMs: number) => {
  const problem = signInProblem(message, { address: owner, nowMs })
  if (problem !== undefined) refuse("sign-in message", problem)
}

/**
 * The account link: exactly the service's link message for the owner, this venue and the session's master, not
 * expired; or the venue's agent approval for the owner granting nothing (every permission false, no IP
 * whitelist) whose body is the challenge's message (src/Client/SignChecks.ts).
 */
export const checkLink = (
  challenge: { readonly message: string; readonly typed_data?: unknown },
  expect: { readonly owner: Address; readonly venue: string; readonly master: string; readonly nowMs: number },
) => {
  const problem = linkProblem(challenge, {
    address: expect.owner,
    venue: expect.venue,
    master: expect.master,
    nowMs: expect.nowMs,
  })
  if (problem !== undefined) refuse(challenge.typed_data === undefined ? "link message" : "agent approval", problem)
}

/** The quote identity's registration: exactly `signer` registering for `master` (the service's domain). */
export const registrationToSign = (proposed: Wire, master: Address, signer: Address) =>
  exactly("quote identity registration", proposed, () =>
    quoteIdentityRegistrationTypedData({
      chainId: Number(proposed?.domain?.chainId),
      verifyingContract: String(proposed?.domain?.verifyingContract ?? "0x0000000000000000000000000000000000000000"),
      master,
      signer,
    }),
  )

export interface OrderExpectation {
  readonly orderId: Hex
  readonly owner: Address
  readonly signer: Address
  /** Base units. */
  readonly amount: bigint
  /** The escrow the maker reviewed, and its version. */
  readonly escrow: Address
  readonly version: 1 | 2
  /** The venue's token (its permit's contract) and decimals. */
  readonly token: Address
  readonly decimals: number
  /** The venue's chain as the maker's own endpoint reports it (ChainPins.ts): fund_order and permit name it. */
  readonly chainId?: number
  /**
   * Base units: the most a venue_transfer may add as the venue's signed withdrawal fee (Aster's `fee`, taken out of
   * the amount on the way, so the service adds it on top of the shortfall). Default 0: no fee accepted.
   */
  readonly maxVenueFee?: bigint
}

/**
 * The order's sign items, each rebuilt from the expectation: `fund_order` (this order, this owner, this signer,
 * this amount, the reviewed escrow), `permit` (the owner's tokens, to the reviewed escrow, exactly the amount),
 * and a `venue_transfer` (a venue transfer to the owner's own address of at most the amount, plus a signed venue
 * fee of at most `maxVenueFee`). Any other item, or
 * any difference, stops setup. Returns kind → typed data to sign.
 */
export const orderItemsToSign = (
  items: ReadonlyArray<{ readonly kind: string; readonly typed_data: Wire }>,
  e: OrderExpectation,
): Record<string, Wire> => {
  const out: Record<string, Wire> = {}
  for (const { kind, typed_data: td } of items) {
    if (kind in out) refuse(kind, "it is proposed twice")
    switch (kind) {
      case "fund_order":
        out[kind] = exactly(kind, td, () => {
          const chainId = e.chainId ?? Number(td.domain.chainId)
          const message = {
            orderId: e.orderId,
            owner: e.owner,
            operator: getAddress(td.message.operator),
            quoteSigner: e.signer,
            amount: e.amount,
            deadline: BigInt(td.message.deadline),
          }
          return e.version === 2
            ? fundOrderV2TypedData(chainId, e.escrow, message)
            : fundOrderTypedData(chainId, e.escrow, message)
        })
        break
      case "permit":
        if (!same(td?.domain?.verifyingContract, e.token)) refuse(kind, "it is not a permit of the venue's token")
        if (e.chainId !== undefined && Number(td?.domain?.chainId) !== e.chainId) {
          refuse(kind, `it is a permit on chain ${td?.domain?.chainId}, not ${e.chainId}`)
        }
        out[kind] = exactly(kind, td, () =>
          permitTypedData(td.domain, {
            owner: e.owner,
            spender: e.escrow,
            value: e.amount,
            nonce: BigInt(td.message.nonce),
            deadline: BigInt(td.message.deadline),
          }),
        )
        break
      case "venue_transfer":
        checkVenueTransfer(td, e)
        out[kind] = td
        break
      default:
        refuse(kind, "setup signs only fund_order, permit and venue_transfer items")
    }
  }
  if (out.fund_order === undefined || out.permit === undefined) refuse("order", "fund_order or permit is missing")
  return out
}

/**
 * A venue transfer to the owner's own wallet of at most the amount: Hyperliquid's SendAsset to the USDC system
 * address from the main account (credits the sender's own HyperEVM address), or Aster's withdrawal to the owner.
 */
const checkVenueTransfer = (td: Wire, e: OrderExpectation) => {
  const hyperliquid = parseHyperliquidTransfer(td, td?.message?.hyperliquidChain)
  const aster = parseWithdrawAction(td, {
    asset: String(td?.message?.token ?? ""),
    asterChain: String(td?.message?.["aster chain"] ?? ""),
    allowedChainIds: [Number(td?.domain?.chainId)],
  })
  const parsed = Either.isRight(hyperliquid)
    ? {
        destination: String(hyperliquid.right.action.destination),
        amount: String(hyperliquid.right.action.amount),
        fee: "0",
      }
    : Either.isRight(aster)
      ? { destination: String(aster.right.destination), amount: aster.right.amount, fee: aster.right.fee }
      : refuse("venue transfer", "it is neither a Hyperliquid transfer nor an Aster withdrawal")
  if (td.primaryType !== "HyperliquidTransaction:SendAsset" && td.primaryType !== "Action") {
    refuse("venue transfer", `${td.primaryType} is not a transfer to the owner's wallet`)
  }
  const ownWallet =
    td.primaryType === "Action"
      ? same(parsed.destination, e.owner)
      : same(parsed.destination, USDC_SYSTEM_ADDRESS) && td.message.fromSubAccount === ""
  if (!ownWallet) refuse("venue transfer", "it pays another address than the owner's own wallet")
  let units: bigint
  let fee: bigint
  try {
    units = parseUnits(parsed.amount, e.decimals)
    fee = parseUnits(parsed.fee, e.decimals)
  } catch {
    return refuse("venue transfer", `amount ${parsed.amount} or fee ${parsed.fee} is not a decimal`)
  }
  // The venue takes its fee out of the amount: what reaches the wallet is amount - fee.
  if (fee > (e.maxVenueFee ?? 0n)) {
    refuse("venue transfer", `its venue fee ${parsed.fee} is more than --max-venue-fee allows`)
  }
  if (units <= fee || units - fee > e.amount) {
    refuse("venue transfer", `it moves ${parsed.amount} (fee ${parsed.fee}), more than the order`)
  }
}
