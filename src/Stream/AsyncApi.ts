/**
 * The AsyncAPI 3 document of `GET /v1/stream` (issue 18): the subscription the client sends, the event pages and
 * control frames the server sends, every event kind with its channel, visibility and the operation that emits it.
 * Built from src/Stream/events.schema.json (the frames and kinds) with its `#/$defs/…` references rewritten to
 * `#/components/schemas/…` (they do not resolve inside an AsyncAPI document), and from CONTROL_CODES.
 */
import eventsSchema from "./events.schema.json" with { type: "json" }
import { CONTROL_CODES, STREAM_LIMITS } from "./StreamProtocol.ts"

type Json = unknown

/** `#/$defs/kinds/x` → `#/components/schemas/x`; `#/$defs/X` → `#/components/schemas/X`, at any depth. */
const rewriteRefs = (value: Json): Json => {
  if (Array.isArray(value)) return value.map(rewriteRefs)
  if (typeof value !== "object" || value === null) return value
  return Object.fromEntries(
    Object.entries(value).map(([k, v]) => [
      k,
      k === "$ref" && typeof v === "string"
        ? v.replace(/^#\/\$defs\/kinds\//, "#/components/schemas/").replace(/^#\/\$defs\//, "#/components/schemas/")
        : rewriteRefs(v),
    ]),
  )
}

const defs = (eventsSchema as { $defs: Record<string, Json> }).$defs
const kinds = defs.kinds as Record<string, { description?: string; "x-emitted-by"?: string; "x-channel"?: string }>

/** The event kinds, each with its channel and the operation that emits it. */
export const EVENT_KINDS = Object.entries(kinds).map(([kind, schema]) => ({
  kind,
  channel: schema["x-channel"] ?? "",
  emittedBy: schema["x-emitted-by"] ?? "",
  description: schema.description ?? "",
}))

const controlCodes = Object.entries(CONTROL_CODES)

export const asyncApiDocument = () => {
  const { kinds: _kinds, ...frames } = defs
  const schemas = rewriteRefs({ ...frames, ...kinds }) as Record<string, Json>
  schemas.StreamControl = {
    ...(schemas.StreamControl as Record<string, Json>),
    description:
      "Server → client, then the socket closes with the WebSocket close code of its `code`: " +
      controlCodes.map(([code, close]) => `${code} (${close})`).join(", ") +
      ". Clients branch on `code`, never on `message`.",
  }
  return {
    asyncapi: "3.0.0",
    info: {
      title: "Cross-Venue Settlement stream",
      version: "v1",
      description:
        "One WebSocket at `/v1/stream` on the API's host. Within 5 s of the upgrade the client sends one " +
        "StreamSubscription (its token in the message, never in the URL; `cursor` = the last processed " +
        "`next_cursor`, or a snapshot's `x-event-cursor` header, to resume without a gap). The server then sends " +
        "EventPage frames in journal order and, when it closes, one StreamControl frame. Inbound messages are at " +
        `most ${STREAM_LIMITS.maxInboundBytes} bytes. The REST API is described by /v1/openapi.json.`,
    },
    defaultContentType: "application/json",
    channels: {
      stream: {
        address: "/v1/stream",
        title: "The event stream",
        description: "Channels inside the stream: `trades` (public) and `account` (a session, or a `read` credential).",
        messages: {
          subscription: { $ref: "#/components/messages/subscription" },
          eventPage: { $ref: "#/components/messages/eventPage" },
          control: { $ref: "#/components/messages/control" },
        },
      },
    },
    operations: {
      subscribe: {
        action: "send",
        channel: { $ref: "#/channels/stream" },
        summary: "Subscribe (once, first frame): token, cursor, channels, pairs",
        messages: [{ $ref: "#/channels/stream/messages/subscription" }],
      },
      receiveEvents: {
        action: "receive",
        channel: { $ref: "#/channels/stream" },
        summary: "Event pages in journal order",
        description: `Event kinds (channel; emitted by): ${EVENT_KINDS.map((k) => `${k.kind} (${k.channel}; ${k.emittedBy})`).join("; ")}.`,
        messages: [{ $ref: "#/channels/stream/messages/eventPage" }],
      },
      receiveControl: {
        action: "receive",
        channel: { $ref: "#/channels/stream" },
        summary: "Why the server closes, before it closes",
        messages: [{ $ref: "#/channels/stream/messages/control" }],
      },
    },
    components: {
      messages: {
        subscription: { name: "StreamSubscription", payload: { $ref: "#/components/schemas/StreamSubscription" } },
        eventPage: { name: "EventPage", payload: { $ref: "#/components/schemas/EventPage" } },
        control: { name: "StreamControl", payload: { $ref: "#/components/schemas/StreamControl" } },
      },
      schemas,
    },
  }
}
