import { Clock, Duration, Effect, Option } from "effect"
import type { PublicClient } from "viem"

/**
 * Waits for the chain's next block, for at most `within` ms: reads the head's number every `every` ms and returns as
 * soon as it differs from `known`. A read that fails or hangs ends the wait too: the caller's poll then meets the
 * fault and reports it. Without a known head, or with `every` at or above `within`, it is a plain pause of `within`.
 */
export const awaitNewHead = (client: PublicClient, known: bigint | undefined, every: number, within: number) =>
  Effect.gen(function* () {
    if (known === undefined || every >= within) return yield* Effect.sleep(Duration.millis(within))
    const deadline = (yield* Clock.currentTimeMillis) + within
    for (;;) {
      const left = deadline - (yield* Clock.currentTimeMillis)
      yield* Effect.sleep(Duration.millis(Math.min(every, left)))
      if ((yield* Clock.currentTimeMillis) >= deadline) return // poll_ms is up: the poll reads the head itself
      // cacheTime 0: viem otherwise answers from its cache for the client's polling interval (4 s by default).
      const head = yield* Effect.tryPromise(() => client.getBlockNumber({ cacheTime: 0 })).pipe(
        Effect.timeout(Duration.millis(Math.max(every, left))),
        Effect.option,
      )
      if (Option.isNone(head) || head.value !== known) return
    }
  })
