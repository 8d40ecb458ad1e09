/**
 * The maker's state file: what `npm run maker -- setup` made (ids, the order, the reviewed escrows and endpoints,
 * the default quotes) and the two secrets the bot needs (the `mk_` credential; the signer key when setup generated
 * it). Written with mode 0600 after every step of setup, so an interrupted setup resumes where it stopped; `run`,
 * `status` and `close` read it. Nothing else holds the secrets: they are never printed or logged.
 */
import { chmodSync, existsSync, readFileSync, renameSync, writeFileSync } from "node:fs"

export interface MakerState {
  readonly api?: string
  /** The order's owner (signs in, funds the order). */
  readonly owner?: string
  readonly venue?: string
  readonly receive_venue?: string
  readonly identity_id?: string
  readonly signer?: string
  /** Present only when setup generated the signer key (else MAKER_SIGNER_KEY holds it). */
  readonly signer_key?: string
  readonly credential_id?: string
  readonly credential?: string
  /** Set before the order is created: a lost answer is recovered by this id. */
  readonly client_order_id?: string
  readonly amount?: string
  readonly order_id?: string
  /** The order's escrow version (2 = SettlementEscrowV2: the bot derives hashlocks and reveals). */
  readonly escrow_version?: number
  readonly escrows_v2?: Readonly<Record<string, string>>
  readonly rpc?: Readonly<Record<string, string>>
  readonly from_blocks?: Readonly<Record<string, string>>
  /** `VENUE:RECIPIENT:SUPPLY:RECEIVE:MIN_FILL`, as `--quote` takes them. */
  readonly quotes?: ReadonlyArray<string>
  readonly quote_size?: string
}

export const DEFAULT_STATE_FILE = "maker.json"

export class StateFileError extends Error {}

export const readState = (path: string): MakerState | undefined => {
  if (!existsSync(path)) return undefined
  try {
    return JSON.parse(readFileSync(path, "utf8")) as MakerState
  } catch (e) {
    throw new StateFileError(`${path} is not a maker state file (${e instanceof Error ? e.name : "error"})`)
  }
}

/** Replaces the file atomically, readable and writable by its owner only. */
export const writeState = (path: string, state: MakerState) => {
  const tmp = `${path}.tmp`
  writeFileSync(tmp, `${JSON.stringify(state, null, 2)}\n`, { mode: 0o600 })
  chmodSync(tmp, 0o600)
  renameSync(tmp, path)
}
