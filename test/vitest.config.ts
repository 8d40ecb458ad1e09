import { defineConfig } from "vitest/config"

// One config for every suite. Each file runs in its own forked worker, so a file-level
// database or anvil chain belongs to that file alone.
export default defineConfig({
  test: {
    root: new URL("..", import.meta.url).pathname,
    include: ["test/unit/**/*.test.ts", "test/integration/**/*.test.ts", "test/e2e/**/*.test.ts"],
    pool: "forks",
    poolOptions: { forks: { maxForks: 2, minForks: 1 } },
    testTimeout: 60_000,
    hookTimeout: 120_000,
    reporters: ["default"],
  },
})
