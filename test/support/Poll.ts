import { Duration, Effect, Schedule } from "effect"

/**
 * Re-runs `read` until `done` holds, pausing `every` between reads and giving up after `within`.
 * Tests poll through this helper only: an unpaced `Effect.repeat` spins as fast as the server
 * answers, spends a session's request budget (60/s) and starves the 2-core CI machine.
 */
export const pollUntil = <A, E, R>(
  read: Effect.Effect<A, E, R>,
  done: (a: A) => boolean,
  options: { readonly every?: Duration.DurationInput; readonly within?: Duration.DurationInput } = {},
) =>
  read.pipe(
    // recurUntil passes the last read through, so the poll yields the value that satisfied `done`.
    Effect.repeat(Schedule.recurUntil(done).pipe(Schedule.addDelay(() => options.every ?? "100 millis"))),
    Effect.timeoutFail({
      duration: options.within ?? "30 seconds",
      onTimeout: () =>
        new Error(`pollUntil: condition not reached within ${Duration.format(options.within ?? "30 seconds")}`),
    }),
  )
