import type { Hex } from "viem"
import { type HashlockTree, hashlockTree } from "../Domain/Hashlocks.ts"

/**
 * The hashlocks and trees of published v2 quote sets, kept per process: a set's hashlocks never change once stored
 * (its root is signed), and building a tree costs ~2 keccak per leaf (seconds for a 65,536-leaf set), which a take
 * would otherwise pay, with the set's JSON read, inside its transaction on the order rows. Keyed by (order,
 * sequence, root); least recently used sets go first once the cached leaves exceed LEAF_BUDGET (roughly 250 bytes
 * per leaf).
 */
const LEAF_BUDGET = 262_144

export interface CachedSet {
  readonly tree: HashlockTree
  /** The published hashlocks, lowercase, by index. */
  readonly hashlocks: ReadonlyArray<Hex>
}

export interface SetKey {
  readonly orderId: string
  readonly sequence: string
  readonly root: string
}

const cache = new Map<string, CachedSet>()
let leaves = 0

const idOf = (k: SetKey) => `${k.orderId.toLowerCase()}/${k.sequence}/${k.root.toLowerCase()}`

/** The cached set, or undefined (then read the hashlocks and `rememberSet` them). */
export const cachedSet = (key: SetKey): CachedSet | undefined => {
  const id = idOf(key)
  const hit = cache.get(id)
  if (hit !== undefined) {
    cache.delete(id)
    cache.set(id, hit)
  }
  return hit
}

/**
 * Builds the tree of `hashlocks` and keeps it when its root is `key.root`; undefined when it is not. `budget`: the
 * cached leaves to keep at most (tests use a small one).
 */
export const rememberSet = (
  key: SetKey,
  hashlocks: ReadonlyArray<Hex>,
  budget = LEAF_BUDGET,
): CachedSet | undefined => {
  const tree = hashlockTree(hashlocks)
  if (tree.root !== key.root.toLowerCase()) return undefined
  const id = idOf(key)
  const entry: CachedSet = { tree, hashlocks: hashlocks.map((h) => h.toLowerCase() as Hex) }
  const before = cache.get(id)
  if (before !== undefined) {
    cache.delete(id)
    leaves -= before.tree.count
  }
  cache.set(id, entry)
  leaves += tree.count
  for (const [k, e] of cache) {
    if (leaves <= budget || k === id) break
    cache.delete(k)
    leaves -= e.tree.count
  }
  return entry
}
