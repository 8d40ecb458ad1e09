#!/usr/bin/env node
// Lets forge compile offline through solc-js (the npm `solc` package) instead of a downloaded native solc.
// forge invokes a configured compiler in two ways:
//   `solc --version`                    → it parses the last stdout line ("Version: x.y.z+commit…")
//   `solc [flags…] --standard-json`     → standard-JSON input on stdin, standard-JSON output on stdout
// Flags such as --base-path / --include-path / --allow-paths are honoured only to resolve imports that
// forge did not inline (it normally sends every source's content).
import { readFileSync } from "node:fs"
import { createRequire } from "node:module"
import path from "node:path"

const require = createRequire(import.meta.url)
const solc = require("solc")
const args = process.argv.slice(2)

if (args.includes("--version")) {
  // forge only needs a semver on the last line; the platform suffix mirrors the native binary's format.
  const version = solc.version().replace(/\.Emscripten\.clang$/, ".Linux.g++")
  process.stdout.write(`solc, the solidity compiler commandline interface\nVersion: ${version}\n`)
  process.exit(0)
}

if (!args.includes("--standard-json")) {
  process.stderr.write("solc-shim: only --version and --standard-json are supported\n")
  process.exit(1)
}

const flagValues = (flag) => {
  const out = []
  for (let i = 0; i < args.length; i++) {
    if (args[i] === flag && args[i + 1] !== undefined) out.push(...args[i + 1].split(","))
    else if (args[i]?.startsWith(`${flag}=`)) out.push(...args[i].slice(flag.length + 1).split(","))
  }
  return out
}
const roots = [...flagValues("--base-path"), ...flagValues("--include-path"), process.cwd()]

const findImports = (importPath) => {
  for (const root of roots) {
    const candidate = path.isAbsolute(importPath) ? importPath : path.join(root, importPath)
    try {
      return { contents: readFileSync(candidate, "utf8") }
    } catch {
      // try the next root
    }
  }
  return { error: `File not found: ${importPath}` }
}

const input = readFileSync(0, "utf8")
process.stdout.write(solc.compile(input, { import: findImports }))
