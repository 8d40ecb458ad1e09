/**
 * How deep a JSON text nests, judged before it is parsed. JSON.parse itself copes with very deep
 * input, but everything that walks the value afterwards (schema decoding, error formatting) recurses,
 * and 30,000 nested arrays (60 KB, under the body limit) overflowed the stack: a 500 for bad input.
 * No request or stream frame of this API needs more than a handful of levels; 64 leaves room for any
 * typed data a wallet signs.
 */
export const MAX_JSON_DEPTH = 64

const QUOTE = 0x22
const BACKSLASH = 0x5c
const OPEN_ARRAY = 0x5b
const CLOSE_ARRAY = 0x5d
const OPEN_OBJECT = 0x7b
const CLOSE_OBJECT = 0x7d

/**
 * True when `text` opens more than `limit` arrays or objects inside one another. One pass, no
 * recursion, no allocation: brackets are counted outside strings only, and inside a string a
 * backslash skips the character it escapes (so `\"` does not end the string). Malformed input is not
 * judged here (closing brackets without an opener just lower the count): JSON.parse refuses it later.
 */
export const exceedsJsonDepth = (text: string, limit: number = MAX_JSON_DEPTH): boolean => {
  let depth = 0
  let inString = false
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i)
    if (inString) {
      if (c === BACKSLASH) i++
      else if (c === QUOTE) inString = false
    } else if (c === QUOTE) {
      inString = true
    } else if (c === OPEN_ARRAY || c === OPEN_OBJECT) {
      if (++depth > limit) return true
    } else if (c === CLOSE_ARRAY || c === CLOSE_OBJECT) {
      depth--
    }
  }
  return false
}

/** The message every refusal of too-deep JSON carries (HTTP envelope and stream control frame alike). */
export const tooDeepMessage = (what: string) =>
  `${what} is nested deeper than ${MAX_JSON_DEPTH} levels of arrays and objects`
