import { HttpApiEndpoint, HttpApiGroup, OpenApi } from "@effect/platform"
import { Schema } from "effect"
import { HealthDegraded, HealthOk } from "../Domain/Health.ts"

/** The documentation's example report: two chains at their finalized heads, one runner of the cluster. */
const chain = (venue: string, chainId: number, block: string, finalized: string) => ({
  venue,
  chain_id: chainId,
  ready: true,
  block,
  finalized_block: finalized,
  checked_at: "2025-06-02T09:29:59.400Z",
  finalized_at: "2025-06-02T09:29:58.000Z",
  error: "",
  operator_gas: "4200000000000000000",
  integrity_checked_at: "2025-06-02T09:25:00.000Z",
  integrity_completed_at: "2025-06-02T09:25:02.000Z",
  integrity_error: "",
  integrity_mismatch: false,
})
const REPORT = {
  server_time: "2025-06-02T09:30:00.000Z",
  pending_transactions: 0,
  chains: [chain("hyperliquid", 999, "1843210", "1843208"), chain("aster", 42161, "918274", "918270")],
  journal_unpublished: 0,
  journal_oldest_unpublished_seconds: 0,
  cluster: {
    actors: [
      { kind: "journal-publisher", active: 1, restarts: 0, last_failure: null, mailbox_depth: 0 },
      { kind: "quote-identity-lease", active: 1, restarts: 0, last_failure: null, mailbox_depth: 0 },
      { kind: "tx-relayer", active: 2, restarts: 0, last_failure: null, mailbox_depth: 0 },
      { kind: "venue-watcher", active: 2, restarts: 0, last_failure: null, mailbox_depth: 0 },
    ],
    mailbox_depth: 0,
    runners: [
      {
        address: "10.0.0.5:34431",
        alive: true,
        heartbeat_age_ms: 820,
        shards: 300,
        singletons: [
          "journal-publisher",
          "tx-relayer:aster:0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266",
          "tx-relayer:hyperliquid:0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266",
          "venue-watcher:aster",
          "venue-watcher:hyperliquid",
        ],
      },
    ],
  },
  alerts: [],
}

export class HealthApi extends HttpApiGroup.make("health")
  .add(
    HttpApiEndpoint.get("health", "/health")
      .addSuccess(HealthOk.annotations({ examples: [new HealthOk({ status: "ok", ready: true, ...REPORT })] }))
      .addError(
        HealthDegraded.annotations({
          examples: [
            new HealthDegraded({
              status: "degraded",
              ready: false,
              ...REPORT,
              chains: [
                REPORT.chains[0]!,
                { ...REPORT.chains[1]!, ready: false, error: "indexing: block 918262 of finalized 918270" },
              ],
            }),
          ],
        }),
      )
      .annotate(OpenApi.Summary, "Check readiness")
      .annotate(
        OpenApi.Description,
        "Readiness: 200 when ready, else 503 with the same body (`status: degraded`), not the error envelope. " +
          "Ready: every chain fresh at its finalized head with enough operator gas and no integrity mismatch, " +
          "fewer than 32 pending transactions, and the journal and relayer tables readable (a failed read shows " +
          "as not ready, never a 500). Each chain's `error` says why it is not ready (empty when it is). Beside " +
          "these, `cluster` (actors, mailbox depth, runners) never changes readiness, and `alerts` lists what " +
          "waits for a person; of them only `relayer_out_of_gas` (`degrades: true`) takes part. Every runner " +
          "answers the same (the figures come from rows). Public (no bearer, not charged); block numbers and " +
          "gas are decimal strings.",
      ),
  )
  .add(
    HttpApiEndpoint.get("live", "/health/live")
      .addSuccess(Schema.Struct({ status: Schema.Literal("live") }).annotations({ examples: [{ status: "live" }] }))
      .annotate(OpenApi.Summary, "Check liveness")
      .annotate(
        OpenApi.Description,
        'Process liveness only: always `{"status": "live"}` (200) while the process answers HTTP; it reads ' +
          "nothing (no database, no chain), so it says nothing about readiness (see GET /health). Public (no " +
          "bearer, not charged).",
      ),
  )
  .annotate(OpenApi.Title, "Health") {}
