import { type AbiEvent, type AbiFunction, toEventSelector, toFunctionSelector } from "viem"
import { describe, expect, it } from "vitest"
import { escrowV2EventsAbi, escrowV2TimingAbi } from "../../src/Chain/EscrowV2Abi.ts"
import { loadEscrowV2Artifact } from "../support/EscrowV2Artifact.ts"

/** The service's hand-written v2 ABI (events the watcher decodes, immutables the start-up check reads) = the artifact's. */
describe("SettlementEscrowV2 ABI used by the service", () => {
  it("every event of the artifact (but OZ's EIP712DomainChanged) is decoded, with the same names and indexed flags", async () => {
    const { abi } = await loadEscrowV2Artifact()
    const shape = (e: AbiEvent) => ({
      selector: toEventSelector(e),
      name: e.name,
      inputs: e.inputs.map((i) => [i.name, i.indexed ?? false]),
    })
    const artifact = abi
      .filter((x): x is AbiEvent => x.type === "event" && x.name !== "EIP712DomainChanged")
      .map(shape)
      .sort((a, b) => a.name.localeCompare(b.name))
    const ours = (escrowV2EventsAbi as ReadonlyArray<AbiEvent>)
      .filter((x) => x.type === "event")
      .map(shape)
      .sort((a, b) => a.name.localeCompare(b.name))
    expect(ours).toEqual(artifact)
  })

  it("the immutables the start-up check reads exist with these signatures", async () => {
    const { abi } = await loadEscrowV2Artifact()
    const selectors = new Set(abi.filter((x): x is AbiFunction => x.type === "function").map(toFunctionSelector))
    for (const f of escrowV2TimingAbi) expect(selectors.has(toFunctionSelector(f)), f.name).toBe(true)
  })
})
