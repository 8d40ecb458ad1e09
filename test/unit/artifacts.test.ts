import { readFileSync } from "node:fs"
import path from "node:path"
import { describe, expect, it } from "vitest"
import {
  compilerSettings,
  contracts,
  contractsDir,
  generateArtifacts,
  readCommittedArtifacts,
} from "../../infra/contracts/gen-artifacts.ts"

// The committed src/Chain/artifacts must be exactly what the generator makes from the current Solidity sources
// (a stale ABI or bytecode would deploy or decode something other than what forge tested).
describe("src/Chain/artifacts", () => {
  it("match a fresh compilation of infra/contracts/src", () => {
    const generated = generateArtifacts()
    const committed = readCommittedArtifacts()
    expect([...committed.keys()].sort()).toEqual([...generated.keys()].sort())
    for (const [file, content] of generated) {
      expect(committed.get(file), `${file} is stale: run npm run contracts:gen`).toBe(content)
    }
    expect(generated.size).toBe(contracts.length + 1)
  })

  it("use the compiler settings forge uses (foundry.toml)", () => {
    const toml = readFileSync(path.join(contractsDir, "foundry.toml"), "utf8")
    const value = (key: string) => new RegExp(`^${key}\\s*=\\s*(.+)$`, "m").exec(toml)?.[1]?.trim()
    expect(value("optimizer")).toBe(String(compilerSettings.optimizer.enabled))
    expect(value("optimizer_runs")).toBe(String(compilerSettings.optimizer.runs))
    expect(value("evm_version")).toBe(`"${compilerSettings.evmVersion}"`)
    expect(value("bytecode_hash")).toBe(`"${compilerSettings.metadata.bytecodeHash}"`)
    expect(value("cbor_metadata")).toBe(String(compilerSettings.metadata.appendCBOR))
  })
})
