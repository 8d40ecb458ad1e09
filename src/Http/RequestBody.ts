import { Schema } from "effect"

/**
 * A JSON request body: unknown fields are an error, not silently dropped (spec: Wire conventions 1).
 * The parse option is inherited by nested structs and array items.
 */
export const RequestBody = <Fields extends Schema.Struct.Fields>(identifier: string, fields: Fields) =>
  Schema.Struct(fields).annotations({ identifier, parseOptions: { onExcessProperty: "error" } })
