/**
 * Array parameters as PostgreSQL array literals, written without pg's per-element quoting where none is needed.
 *
 * pg turns a JS array parameter into `{"e1","e2",…}`, each element escaped by two regex replaces and quoted. The
 * chain index sends a page's rows as ~30 arrays of 500 hex strings and decimals (src/Escrow/ChainIndex.ts): pg's
 * writer took ~2.0 ms of this process's CPU a page, a join 0.2 ms (2026-12-02, 30 × 500 elements).
 *
 * An element goes unquoted only when `array_in` reads it back unchanged: ASCII letters, digits and `_ . : + -`
 * (no whitespace, which it trims; none of `{ } " \ ,`), non-empty, and not NULL in any case (which it reads as a
 * null). Anything else, and any array with an element other than a string, number, bigint, boolean or null
 * (a nested array, a Buffer, a Date, an object), is left to pg's own writer, so the literal always means what
 * pg's would.
 */

const PLAIN = /^[A-Za-z0-9_.:+-]+$/
const NULL_WORD = /^null$/i

/** An element as pg writes it (prepareValue: `toString`), quoted and escaped unless plain. */
const element = (text: string): string =>
  PLAIN.test(text) && !NULL_WORD.test(text) ? text : `"${text.replace(/\\/g, "\\\\").replace(/"/g, '\\"')}"`

/** The array's literal, or undefined when an element is not a scalar (pg's writer handles it). */
export const arrayLiteral = (values: ReadonlyArray<unknown>): string | undefined => {
  let out = "{"
  for (let i = 0; i < values.length; i++) {
    if (i > 0) out += ","
    const v = values[i]
    if (v === null || v === undefined) out += "NULL"
    else if (typeof v === "string") out += element(v)
    else if (typeof v === "number" || typeof v === "bigint" || typeof v === "boolean") out += element(String(v))
    else return undefined
  }
  return `${out}}`
}

/** A statement's parameters with each flat array of scalars as its literal; anything else unchanged. */
export const bindArrays = (values: ReadonlyArray<unknown>): Array<unknown> =>
  values.map((v) => (Array.isArray(v) ? (arrayLiteral(v) ?? v) : v))
