/**
 * Escrow event ingest: the VenueWatcher (getLogs + page-end hash, decode, one transaction per page
 * with the events, the folded state rows, the journal summary and the cursor) vs a raw loop over
 * the same blocks with the same page size (eth_getLogs + one multi-row INSERT of the raw logs),
 * measured in the same run against the same anvil and PostgreSQL. Prints events per second of
 * each and the ratio (target >= 0.5).
 *
 * BENCH_EVENTS (default 3000) fundings are made, BENCH_PER_BLOCK (50) per block, then a tenth of
 * the orders are closed; pages are BENCH_PAGE_BLOCKS (10) blocks.
 */
import { SqlClient } from "@effect/sql"
import { Effect, Layer } from "effect"
import { type Address, encodeFunctionData, type Hex, zeroHash } from "viem"
import { makeVenueWatcher } from "../../actors/VenueWatcher.ts"
import { mockUSDCAbi, settlementEscrowAbi } from "../../src/Chain/artifacts/index.ts"
import { ChainClients } from "../../src/Chain/ChainClients.ts"
import { FaultPoint } from "../../src/Chain/FaultPoint.ts"
import { AppConfig } from "../../src/Config.ts"
import {
  type CloseOffer,
  closeOfferTypedData,
  type FundOrder,
  fundOrderTypedData,
} from "../../src/Domain/EscrowTypedData.ts"
import { account, orderIdOf, startTestChain, type TestChain, venueEntry } from "../support/ChainDevnet.ts"
import { TestDatabaseLive } from "../support/Database.ts"
import { testAppConfig } from "../support/TestConfig.ts"
import { summarize, whole } from "./Summary.ts"

const EVENTS = Number(process.env.BENCH_EVENTS ?? 3000)
const PER_BLOCK = Number(process.env.BENCH_PER_BLOCK ?? 50)
const PAGE_BLOCKS = Number(process.env.BENCH_PAGE_BLOCKS ?? 10)
const DEADLINE_SECONDS = 300

const owner = account(3)
const relayer = account(8)

/** Sends `datas` to the escrow from the relayer account, PER_BLOCK transactions per mined block. */
const sendInBlocks = async (c: TestChain, datas: ReadonlyArray<Hex>) => {
  let nonce = await c.pub.getTransactionCount({ address: relayer.address, blockTag: "pending" })
  const block = await c.pub.getBlock()
  const maxFeePerGas = (block.baseFeePerGas ?? 10n ** 9n) * 4n + 10n ** 9n
  for (let i = 0; i < datas.length; i += PER_BLOCK) {
    const raws = await Promise.all(
      datas.slice(i, i + PER_BLOCK).map((data) =>
        relayer.signTransaction({
          chainId: c.chain.id,
          type: "eip1559",
          to: c.escrow,
          data,
          gas: 300_000n,
          nonce: nonce++,
          maxFeePerGas,
          maxPriorityFeePerGas: 10n ** 9n,
        }),
      ),
    )
    await Promise.all(raws.map((raw) => c.pub.request({ method: "eth_sendRawTransaction", params: [raw] })))
    await c.test.mine({ blocks: 1 })
  }
}

const makeEvents = async (c: TestChain) => {
  const approve = await owner.signTransaction({
    chainId: c.chain.id,
    type: "eip1559",
    to: c.token,
    data: encodeFunctionData({ abi: mockUSDCAbi, functionName: "approve", args: [c.escrow, 2n ** 255n] }),
    gas: 100_000n,
    nonce: await c.pub.getTransactionCount({ address: owner.address }),
    maxFeePerGas: 10n ** 11n,
    maxPriorityFeePerGas: 10n ** 9n,
  })
  await c.pub.request({ method: "eth_sendRawTransaction", params: [approve] })
  await c.test.mine({ blocks: 1 })
  const now = (await c.pub.getBlock()).timestamp
  const funds: Array<Hex> = []
  for (let i = 0; i < EVENTS; i++) {
    const order: FundOrder = {
      orderId: orderIdOf("bench", i),
      owner: owner.address,
      operator: account(0).address,
      quoteSigner: account(5).address,
      amount: 1_000_000n,
      deadline: now + 86_400n,
    }
    const sig = await owner.signTypedData(fundOrderTypedData(c.chain.id, c.escrow, order))
    funds.push(
      encodeFunctionData({
        abi: settlementEscrowAbi,
        functionName: "fund",
        args: [order, sig, { value: 0n, deadline: 0n, v: 0, r: zeroHash, s: zeroHash }],
      }),
    )
  }
  const closes: Array<Hex> = []
  for (let i = 0; i < EVENTS / 10; i++) {
    const offer: CloseOffer = {
      orderId: orderIdOf("bench", i),
      owner: owner.address,
      dex: 0,
      toMargin: false,
      nonce: BigInt(i),
      deadline: now + 86_400n,
    }
    const sig = await owner.signTypedData(closeOfferTypedData(c.chain.id, c.escrow, offer))
    closes.push(encodeFunctionData({ abi: settlementEscrowAbi, functionName: "closeWithSig", args: [offer, sig] }))
  }
  await sendInBlocks(c, [...funds, ...closes])
  await c.test.mine({ blocks: 3 })
}

const program = (c: TestChain) =>
  Effect.gen(function* () {
    const sql = yield* SqlClient.SqlClient
    const { deployment } = yield* AppConfig
    const venue = deployment.venues[0]
    const from = BigInt(venue.deployment_block)
    const finalized = (yield* Effect.promise(() => c.pub.getBlock({ blockTag: "finalized" }))).number

    // Baseline: eth_getLogs + INSERT per page, nothing else.
    yield* sql`create table bench_raw_logs (block_number bigint, log_index int, block_hash varchar(66),
      tx_hash varchar(66), address varchar(42), topics text[], data text, primary key (block_number, log_index))`
    const clients = yield* ChainClients
    const client = clients.chain(venue.id)!
    const baseStart = performance.now()
    let baseEvents = 0
    for (let lo = from; lo <= finalized; lo += BigInt(PAGE_BLOCKS)) {
      const hi = lo + BigInt(PAGE_BLOCKS) - 1n < finalized ? lo + BigInt(PAGE_BLOCKS) - 1n : finalized
      const logs = yield* Effect.promise(() =>
        client.getLogs({
          address: [venue.escrow as Address, venue.legacy_escrow as Address],
          fromBlock: lo,
          toBlock: hi,
        }),
      )
      baseEvents += logs.length
      for (let i = 0; i < logs.length; i += 1000) {
        yield* sql`insert into bench_raw_logs ${sql.insert(
          logs.slice(i, i + 1000).map((l) => ({
            block_number: String(l.blockNumber),
            log_index: l.logIndex,
            block_hash: l.blockHash,
            tx_hash: l.transactionHash,
            address: l.address.toLowerCase(),
            topics: l.topics,
            data: l.data,
          })),
        )}`
      }
    }
    const baseSeconds = (performance.now() - baseStart) / 1000

    // The watcher over the same blocks. (Its first integrity check is marked done: this measures ingest.)
    yield* sql`insert into chain_status (venue, chain_id, indexed_block, integrity_completed_at)
      values (${venue.id}, ${venue.chain_id}, ${venue.deployment_block - 1}, now())`
    const { handle } = yield* makeVenueWatcher(venue)
    const oursStart = performance.now()
    // Bounded: a watcher that stops advancing ends the bench with an error instead of hanging.
    const deadline = oursStart + DEADLINE_SECONDS * 1000
    for (;;) {
      yield* handle.poll
      const [row] = yield* sql<{ b: string }>`select indexed_block::text as b from chain_status`
      if (BigInt(row!.b) >= finalized) break
      if (performance.now() > deadline) throw new Error(`the watcher reached block ${row!.b} of ${finalized}`)
    }
    const oursSeconds = (performance.now() - oursStart) / 1000
    const [{ n }] = (yield* sql<{ n: string }>`select count(*)::text as n from escrow_events`) as [{ n: string }]
    const oursEvents = Number(n)
    if (oursEvents !== baseEvents) throw new Error(`indexed ${oursEvents} events, the raw loop saw ${baseEvents}`)

    const base = baseEvents / baseSeconds
    const ours = oursEvents / oursSeconds
    console.log(
      `escrow ingest: ${oursEvents} events in ${finalized - from + 1n} blocks, pages of ${PAGE_BLOCKS} blocks (${PER_BLOCK} tx/block)`,
    )
    console.log(`  raw eth_getLogs + INSERT (baseline): ${base.toFixed(0)} events/s (${baseSeconds.toFixed(2)} s)`)
    console.log(
      `  VenueWatcher (decode, fold, state rows, cursor): ${ours.toFixed(0)} events/s (${oursSeconds.toFixed(2)} s)`,
    )
    console.log(`  ratio watcher/baseline: ${(ours / base).toFixed(2)} (target >= 0.7)`)
    summarize({
      bench: `ingest: ${oursEvents} escrow events`,
      figure: `${whole(ours)} events/s`,
      baseline: `raw getLogs + INSERT ${whole(base)} events/s`,
      ratio: ours / base,
      target: ">= 0.7",
      atLeast: 0.7,
    })
  })

const main = async () => {
  const c = await startTestChain({ slotsInAnEpoch: 1 })
  try {
    await c.test.setAutomine(false)
    const t0 = performance.now()
    await makeEvents(c)
    console.log(
      `(made ${EVENTS + EVENTS / 10} escrow transactions in ${((performance.now() - t0) / 1000).toFixed(1)} s)`,
    )
    const config = {
      venues: [
        venueEntry(c, "hyperliquid", { watcher: { page_blocks: PAGE_BLOCKS, integrity_interval_seconds: 3600 } }),
      ],
    }
    await Effect.runPromise(
      program(c).pipe(
        Effect.provide(
          Layer.mergeAll(ChainClients.Live, FaultPoint.Noop).pipe(
            Layer.provideMerge(TestDatabaseLive),
            Layer.provideMerge(testAppConfig(config)),
          ),
        ),
        Effect.scoped,
      ),
    )
  } finally {
    await c.anvil.stop()
  }
}

main().then(
  () => process.exit(0),
  (e) => {
    console.error(e)
    process.exit(1)
  },
)
