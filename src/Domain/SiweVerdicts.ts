import { Data } from "effect"
import {
  ChallengeExpired,
  ChallengeNotYetValid,
  classOf,
  SignatureInvalid,
  SignatureMalformed,
  SignatureMalleable,
  SiweAddressMismatch,
  SiweChainMismatch,
  SiweDomainMismatch,
  SiweMalformed,
  SiweNonceMismatch,
  SiweUriMismatch,
} from "./Errors.ts"

/*
 * What a sign-in check can answer: a verdict about the message (Siwe.ts) or the signature (SiweSignature.ts), each an
 * error of the catalogue, or the auth chain not answering, which is never a verdict.
 */

/** The verdicts about a message or signature: errors of the catalogue (their messages never contain signature bytes). */
const SIWE_VERDICTS = [
  SiweMalformed,
  SiweDomainMismatch,
  SiweUriMismatch,
  SiweChainMismatch,
  SiweAddressMismatch,
  SiweNonceMismatch,
  ChallengeExpired,
  ChallengeNotYetValid,
  SignatureMalformed,
  SignatureMalleable,
  SignatureInvalid,
] as const

/** A verdict about the message or signature. */
export type SiweError = InstanceType<(typeof SIWE_VERDICTS)[number]>

/** The wire code of a verdict. */
export type SiweErrorCode = (typeof SIWE_VERDICTS)[number]["code"]

/** The wire code of a verdict (from the catalogue). */
export const verdictCode = (e: SiweError): SiweErrorCode => classOf(e).code as SiweErrorCode

/** The auth chain could not answer (transport failure, node error, timeout). Never means "valid". */
export class SiweChainUnavailable extends Data.TaggedError("SiweChainUnavailable")<{
  readonly message: string
  readonly cause?: unknown
}> {}
