/**
 * A transfer from a venue whose withdrawal charges a fee (Aster: the fee is signed and taken out of the signed
 * amount). The funding withdrawal must land the whole shortfall, so the fee goes on top of it; a plain withdrawal
 * still signs exactly the amount asked. Before, the shortfall withdrawal landed `fee` short and the TransferDesk
 * waited for the wallet to hold amount_in for good: the funds had left the venue and the take never came.
 */
import { SqlClient } from "@effect/sql"
import { expect, layer } from "@effect/vitest"
import { Effect } from "effect"
import { encodeFunctionData, type Hex } from "viem"
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts"
import { pendingKeys as deskPending, stepTransferDesk } from "../../actors/TransferDesk.ts"
import { mockUSDCAbi } from "../../src/Chain/artifacts/index.ts"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import { SecureRandom } from "../../src/SecureRandom.ts"
import { account, sendCalls } from "../support/ChainDevnet.ts"
import { bearer, post } from "../support/SignIn.ts"
import { baseUrl } from "../support/TestServer.ts"
import type { VenueNode } from "../support/VenueNode.ts"
import {
  asterSignIn,
  code,
  inState,
  lower,
  prepareOk,
  submitFunding,
  USDC,
  WithdrawalDevnet,
  waitFor,
  withdrawalDevnet,
} from "../support/WithdrawalDevnet.ts"

/** Aster's fee in the simulator: 0.5 USDC, taken out of the signed amount. */
const FEE = 500_000n
const Live = withdrawalDevnet({ venues: ["hyperliquid", "aster"], sim: { aster: { withdrawFee: FEE } } })

const mint = (node: VenueNode, to: string, amount: bigint) =>
  Effect.promise(() =>
    sendCalls(node.chain, account(7), [
      {
        to: node.chain.token,
        data: encodeFunctionData({ abi: mockUSDCAbi, functionName: "mint", args: [to as Hex, amount] }),
      },
    ]),
  )

const balanceOf = (node: VenueNode, who: string) =>
  Effect.promise(
    () =>
      node.chain.pub.readContract({
        address: node.chain.token,
        abi: mockUSDCAbi,
        functionName: "balanceOf",
        args: [who as Hex],
      }) as Promise<bigint>,
  )

const sweep = Effect.flatMap(deskPending, (ids) => Effect.forEach(ids, stepTransferDesk, { discard: true })).pipe(
  Effect.provide(ChainClients.Live),
  Effect.provide(SecureRandom.Live),
)

/** An Aster account signed in and linked, `venue` on the venue and `wallet` on its chain. */
const asterAccount = (base: string, node: VenueNode, venue: bigint, wallet: bigint) =>
  Effect.gen(function* () {
    const acct = privateKeyToAccount(generatePrivateKey())
    const token = yield* asterSignIn(base, acct)
    const address = lower(acct.address)
    node.sim.control.credit(address, venue)
    if (wallet > 0n) yield* mint(node, address, wallet)
    return { acct, token, address }
  })

const transferBody = (address: string, amountIn: bigint) => ({
  client_transfer_id: `fee-${crypto.randomUUID()}`,
  from: "aster",
  to: "hyperliquid",
  amount_in: amountIn.toString(),
  min_out: "1",
  payer: address,
  recipient: address,
})

interface Preparation {
  readonly amount: string
  readonly typed_data: { readonly message: Record<string, unknown> } & Parameters<
    ReturnType<typeof privateKeyToAccount>["signTypedData"]
  >[0]
}

layer(Live, { timeout: "240 seconds", excludeTestServices: true })("transfers: the venue's withdrawal fee", (it) => {
  it.effect(
    "the shortfall withdrawal signs shortfall + fee; the wallet then holds amount_in and the desk moves on",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const { aster } = yield* WithdrawalDevnet
        const sql = yield* SqlClient.SqlClient
        const payer = yield* asterAccount(base, aster!, 100n * USDC, 5n * USDC)
        const created = yield* post(
          `${base}/v1/transfers`,
          transferBody(payer.address, 25n * USDC),
          bearer(payer.token),
        )
        expect(created.status, created.text).toBe(201)
        const t = created.json as { id: string; withdrawal_preparation: Preparation }
        // 25 asked, 5 in the wallet: 20 must arrive, so 20.5 is signed with the venue's 0.5 fee.
        const prep = t.withdrawal_preparation
        expect(prep.amount).toBe((20n * USDC + FEE).toString())
        expect(prep.typed_data.message).toMatchObject({ amount: "20.5", fee: "0.5" })

        const submitted = yield* submitFunding(base, payer.token, payer.acct, "aster", prep)
        expect(submitted.status, submitted.text).toBe(200)
        const id = (submitted.json as { id: string }).id
        expect((yield* waitFor(base, payer.token, id, inState("relayed", "failed", "unknown"))).state).toBe("relayed")
        yield* Effect.promise(() => aster!.sim.control.payoutsSettled())
        expect(yield* balanceOf(aster!, payer.address)).toBe(25n * USDC)

        // The wallet covers amount_in: the desk goes on to the take (no maker here, so it records that instead).
        yield* sql`update transfers set next_attempt_at = null where id = ${t.id}`
        yield* sweep
        const [row] = yield* sql<{ error: string }>`select error from transfers where id = ${t.id}`
        expect(row!.error).not.toMatch(/waiting for the payer's wallet/)
        expect(row!.error).not.toBe("")
      }),
  )

  it.effect(
    "a plain withdrawal signs the amount asked; a shortfall whose fee does not fit is refused, nothing made",
    () =>
      Effect.gen(function* () {
        const base = yield* baseUrl
        const { aster } = yield* WithdrawalDevnet
        const sql = yield* SqlClient.SqlClient
        const payer = yield* asterAccount(base, aster!, 20n * USDC + FEE / 2n, 5n * USDC)
        const plain = yield* prepareOk(base, payer.token, { venue: "aster", amount: "10000000", to: "signer" })
        expect(plain.amount).toBe("10000000")
        expect(plain.typed_data.message).toMatchObject({ amount: "10", fee: "0.5" })

        // 20 must arrive, 20.5 would be signed, 20.25 can be withdrawn.
        const count = sql<{ n: string }>`select count(*)::text as n from transfers where master = ${payer.address}`
        const refused = yield* post(
          `${base}/v1/transfers`,
          transferBody(payer.address, 25n * USDC),
          bearer(payer.token),
        )
        expect([refused.status, code(refused)]).toEqual([422, "INSUFFICIENT_BALANCE"])
        expect((refused.json as { error: { message: string } }).error.message).toContain("fee")
        expect((yield* count)[0]!.n).toBe("0")
      }),
  )
})
