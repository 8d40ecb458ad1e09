/**
 * Test support for the SIWE smart-wallet integration test: a throwaway anvil on a free loopback port, and
 * the ERC-1271 wallet + CREATE2 factory of test/support/contracts/SmartWallet.sol compiled with solc-js.
 */
import { type ChildProcess, spawn } from "node:child_process"
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import { fileURLToPath } from "node:url"
import { Effect } from "effect"
import type { Abi, Hex } from "viem"
import { freePort } from "../../src/FreePort.ts"

const require = createRequire(import.meta.url)

export const ANVIL_BIN = fileURLToPath(
  new URL("../../node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil", import.meta.url),
)

/** anvil's first development account: funded, used only to deploy. */
export const ANVIL_DEPLOYER_KEY: Hex = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"

export interface SiweAnvil {
  readonly url: string
  readonly port: number
  readonly chainId: number
  readonly stop: () => Promise<void>
}

/** Starts anvil on 127.0.0.1 at a free port and resolves once it listens. */
export const startSiweAnvil = async (chainId = 31337, timeoutMs = 15_000): Promise<SiweAnvil> => {
  const port = await Effect.runPromise(freePort)
  const child = spawn(
    ANVIL_BIN,
    ["--host", "127.0.0.1", "--port", String(port), "--chain-id", String(chainId), "--accounts", "2"],
    { stdio: ["ignore", "pipe", "pipe"] },
  )
  let output = ""
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill("SIGKILL")
      reject(new Error(`anvil did not start within ${timeoutMs} ms:\n${output}`))
    }, timeoutMs)
    const onData = (data: Buffer) => {
      output += data.toString()
      if (output.includes("Listening on")) {
        clearTimeout(timer)
        resolve()
      }
    }
    child.stdout?.on("data", onData)
    child.stderr?.on("data", onData)
    child.once("error", (error) => {
      clearTimeout(timer)
      reject(error)
    })
    child.once("exit", (code) => {
      clearTimeout(timer)
      reject(new Error(`anvil exited with ${code}:\n${output}`))
    })
  })
  // Keep draining its output so a chatty anvil never blocks on a full pipe.
  child.stdout?.resume()
  child.stderr?.resume()
  return { url: `http://127.0.0.1:${port}`, port, chainId, stop: () => stopChild(child) }
}

const stopChild = (child: ChildProcess): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) return resolve()
    const kill = setTimeout(() => child.kill("SIGKILL"), 5_000)
    child.once("exit", () => {
      clearTimeout(kill)
      resolve()
    })
    child.kill("SIGTERM")
  })

export interface CompiledContract {
  readonly abi: Abi
  readonly bytecode: Hex
}

interface SolcOutput {
  readonly errors?: ReadonlyArray<{ readonly severity: string; readonly formattedMessage: string }>
  readonly contracts: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>
}

/** Compiles SmartWallet.sol with solc-js (the pinned `solc` package). */
export const compileSmartWallet = (): { wallet: CompiledContract; factory: CompiledContract } => {
  const solc = require("solc") as { compile: (input: string) => string }
  const source = readFileSync(new URL("./contracts/SmartWallet.sol", import.meta.url), "utf8")
  const input = {
    language: "Solidity",
    sources: { "SmartWallet.sol": { content: source } },
    settings: {
      optimizer: { enabled: true, runs: 200 },
      outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
    },
  }
  const output = JSON.parse(solc.compile(JSON.stringify(input))) as SolcOutput
  const errors = (output.errors ?? []).filter((e) => e.severity === "error")
  if (errors.length > 0) throw new Error(`solc:\n${errors.map((e) => e.formattedMessage).join("\n")}`)
  const pick = (name: string): CompiledContract => {
    const contract = output.contracts["SmartWallet.sol"]?.[name]
    if (contract === undefined) throw new Error(`solc produced no ${name}`)
    return { abi: contract.abi, bytecode: `0x${contract.evm.bytecode.object}` }
  }
  return { wallet: pick("SmartWallet"), factory: pick("SmartWalletFactory") }
}
