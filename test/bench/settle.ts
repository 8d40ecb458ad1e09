/**
 * The settle bench: settlement v2 by default (new orders settle on v2), test/bench/settle-v2.ts; `BENCH_SETTLE=v1`
 * runs the v1 bench (test/bench/settle-v1.ts) while v1 orders still drain.
 */
await import(process.env.BENCH_SETTLE === "v1" ? "./settle-v1.ts" : "./settle-v2.ts")
