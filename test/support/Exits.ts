/**
 * What a service call's Exit failed with, in the shapes the service tests compare: a typed failure (`Fail`) is
 * read from the cause; a defect, an interruption or a success is never taken for one.
 */
import { Exit } from "effect"

/** The typed failure's tag and message, or undefined when the call did not fail with one. */
export const failure = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail"
    ? { tag: (exit.cause.error as { _tag?: string })._tag, message: (exit.cause.error as { message?: string }).message }
    : undefined

/** [tag, message] of the typed failure; otherwise ["no failure", the cause or "succeeded"]. */
export const failurePair = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail"
    ? [(exit.cause.error as { _tag: string })._tag, (exit.cause.error as { message: string }).message]
    : ["no failure", Exit.isFailure(exit) ? String(exit.cause) : "succeeded"]

/** The typed failure itself; otherwise an object whose `_tag` says what the call ended with instead. */
export const failedWith = <A, E>(exit: Exit.Exit<A, E>) =>
  Exit.isFailure(exit) && exit.cause._tag === "Fail"
    ? (exit.cause.error as { _tag?: string; message?: string })
    : { _tag: `not a failure: ${Exit.isSuccess(exit) ? "success" : exit.cause._tag}` }

/** The typed failure's tag (`failedWith`'s). */
export const tagOf = <A, E>(exit: Exit.Exit<A, E>) => failedWith(exit)._tag
