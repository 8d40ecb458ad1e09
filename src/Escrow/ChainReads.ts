/**
 * What the escrow concept reads from chains, kept apart from its SQL (a repository calls no chain): whether an
 * owner signed a CloseOffer (locally for an EOA, ERC-1271 on the venue's chain for a contract) and one page of the
 * legacy scan. src/Escrow.ts builds these at construction and passes what they read to its repository.
 */
import { Effect } from "effect"
import { type Address, type Hex, recoverTypedDataAddress } from "viem"
import { ChainClients } from "../Chain/ChainClients.ts"
import { legacyDeployments, scanLegacyPage } from "../Chain/LegacyScan.ts"
import type { closeOfferOn } from "../Chain/OrderEscrow.ts"
import type { DeploymentConfig, VenueConfig } from "../Config.ts"
import { ChainUnavailable, SignatureInvalid } from "../Domain/Errors.ts"
import type { LegacyPosition } from "../Domain/LegacyCursor.ts"

export type CloseOfferTypedData = ReturnType<typeof closeOfferOn>["typedData"]

export const makeEscrowChainReads = (deployment: DeploymentConfig) =>
  Effect.gen(function* () {
    const clients = yield* ChainClients
    const legacy = legacyDeployments(deployment)

    /**
     * The signature is the owner's: recovered locally (EOA); otherwise, when the owner is a contract, by the
     * chain (ERC-1271), where a node failure is CHAIN_UNAVAILABLE, never "valid".
     */
    const verifyOwner = (venue: VenueConfig, typedData: CloseOfferTypedData, signature: Hex, owner: string) =>
      Effect.gen(function* () {
        const recovered = yield* Effect.tryPromise(() => recoverTypedDataAddress({ ...typedData, signature })).pipe(
          Effect.orElseSucceed(() => undefined),
        )
        if (recovered?.toLowerCase() === owner) return
        const client = clients.venue(venue.id)
        const unavailable = () =>
          Effect.fail(
            new ChainUnavailable({ message: "the chain node failed checking a contract signature", retryable: true }),
          )
        if (client === undefined)
          return yield* new SignatureInvalid({ message: "the CloseOffer is not signed by the owner" })
        const code = yield* Effect.tryPromise(() => client.getCode({ address: owner as Address })).pipe(
          Effect.catchAll(unavailable),
        )
        if (code === undefined || code === "0x") {
          return yield* new SignatureInvalid({ message: "the CloseOffer is not signed by the order's owner" })
        }
        const valid = yield* Effect.tryPromise(() =>
          client.verifyTypedData({ ...typedData, address: owner as Address, signature }),
        ).pipe(Effect.catchAll(unavailable))
        if (!valid) return yield* new SignatureInvalid({ message: "the CloseOffer is not signed by the order's owner" })
      })

    /**
     * One page of the scan of the retired escrow deployments for offers of `owners`, from `position` (the start
     * when undefined), at most `pageBlocks` blocks of one contract. On the watcher's client: no viem-level retries
     * (retryRpc retries briefly; a dead node fails fast). Fails with RpcError or UnknownDeployment.
     */
    const legacyPage = (owners: ReadonlyArray<string>, position: LegacyPosition | undefined, pageBlocks: bigint) =>
      scanLegacyPage(legacy, (id) => clients.chain(id), owners, position, pageBlocks)

    return { verifyOwner, legacyPage } as const
  })
