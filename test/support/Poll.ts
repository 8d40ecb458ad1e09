import { Duration, Effect, Schedule } from "effect"

/** A read's value for a timeout message: JSON (bigints as text), at most 500 characters. */
const shown = (a: unknown): string => {
  try {
    const text = JSON.stringify(a, (_k, v) => (typeof v === "bigint" ? v.toString() : v)) ?? String(a)
    return text.length > 500 ? `${text.slice(0, 500)}…` : text
  } catch {
    return String(a)
  }
}

/**
 * Re-runs `read` until `done` holds, pausing `every` between reads and giving up after `within`.
 * Tests poll through this helper only: an unpaced `Effect.repeat` spins as fast as the server
 * answers, spends a session's request budget (60/s) and starves the 2-core CI machine.
 *
 * A timeout names the poll that gave up (the caller's source line, captured when the poll is made: the failure's
 * own stack is the fiber runtime's) and the last value it read, so a flaky wait says which condition never held.
 */
export const pollUntil = <A, E, R>(
  read: Effect.Effect<A, E, R>,
  done: (a: A) => boolean,
  options: { readonly every?: Duration.DurationInput; readonly within?: Duration.DurationInput } = {},
) => {
  const caller =
    new Error().stack
      ?.split("\n")
      .slice(2)
      .find((line) => !line.includes("/Poll.ts"))
      ?.trim() ?? "an unknown caller"
  const within = options.within ?? "30 seconds"
  return Effect.suspend(() => {
    let last: { readonly value: A } | undefined
    return read.pipe(
      Effect.tap((value) => {
        last = { value }
      }),
      // recurUntil passes the last read through, so the poll yields the value that satisfied `done`.
      Effect.repeat(Schedule.recurUntil(done).pipe(Schedule.addDelay(() => options.every ?? "100 millis"))),
      Effect.timeoutFail({
        duration: within,
        onTimeout: () =>
          new Error(
            `pollUntil: condition not reached within ${Duration.format(within)} (${caller}); last read: ${
              last === undefined ? "none" : shown(last.value)
            }`,
          ),
      }),
    )
  })
}
