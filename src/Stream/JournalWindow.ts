import type { JournalEvent } from "./JournalReader.ts"

/**
 * The journal tail's memory of recent rows (src/Stream/JournalTail.ts): a contiguous run of cursors ending at
 * `last`, bounded in rows and bytes. Two sources extend it, in any interleaving, on one thread:
 * - `read`: the answer to `cursor > after` for an `after` at or below `last` when the query was sent. Rows at or
 *   below `last` (added meanwhile by a hand-over) are skipped; a first new cursor above `last + 1` means rows were
 *   pruned while this reader was behind, and the window restarts at what exists.
 * - `handed`: what this process's publisher just published (committed, contiguous). Taken only when it continues
 *   the window exactly; otherwise this reader is behind or ahead of it and its reads settle it.
 * `extended` receives each run of new rows, in order.
 */
export class JournalWindow {
  private rows: Array<JournalEvent> = []
  private bytes = 0

  constructor(
    private lastCursor: bigint,
    private readonly limits: { readonly rows: number; readonly bytes: number },
    private readonly extended: (rows: ReadonlyArray<JournalEvent>) => void,
  ) {}

  /** The highest cursor in the window (or read before it was emptied). */
  get last(): bigint {
    return this.lastCursor
  }

  read(rows: ReadonlyArray<JournalEvent>): void {
    this.extend(this.unseen(rows))
  }

  /** True when the rows were taken. */
  handed(rows: ReadonlyArray<JournalEvent>): boolean {
    const fresh = this.unseen(rows)
    if (fresh[0]?.cursor !== this.last + 1n) return false
    this.extend(fresh)
    return true
  }

  /** Up to `limit` rows after `after`, or undefined when the window does not reach back to `after + 1`. */
  pageAfter(after: bigint, limit: number): ReadonlyArray<JournalEvent> | undefined {
    if (after >= this.last) return []
    const first = this.rows[0]
    if (first === undefined || after + 1n < first.cursor) return undefined
    const start = Number(after + 1n - first.cursor)
    return this.rows.slice(start, start + limit)
  }

  private unseen(rows: ReadonlyArray<JournalEvent>) {
    let i = 0
    while (i < rows.length && rows[i]!.cursor <= this.last) i++
    return i === 0 ? rows : rows.slice(i)
  }

  private extend(rows: ReadonlyArray<JournalEvent>) {
    const first = rows[0]
    if (first === undefined) return
    // Rows were pruned while this reader was behind: restart the window at what exists.
    if (first.cursor !== this.last + 1n) {
      this.rows = []
      this.bytes = 0
    }
    for (const row of rows) {
      this.rows.push(row)
      this.bytes += row.json.length
    }
    const { rows: maxRows, bytes: maxBytes } = this.limits
    if (this.rows.length > maxRows * 1.25 || this.bytes > maxBytes) {
      let drop = Math.max(0, this.rows.length - maxRows)
      let bytes = this.bytes
      for (let i = 0; i < drop; i++) bytes -= this.rows[i]!.json.length
      while (bytes > maxBytes / 2 && drop < this.rows.length - 1) bytes -= this.rows[drop++]!.json.length
      this.rows = this.rows.slice(drop)
      this.bytes = bytes
    }
    this.lastCursor = rows[rows.length - 1]!.cursor
    this.extended(rows)
  }
}
