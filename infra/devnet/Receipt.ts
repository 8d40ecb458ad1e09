import { type Hash, type PublicClient, type TransactionReceipt, TransactionReceiptNotFoundError } from "viem"

/**
 * A mined transaction's receipt, asked for directly every `everyMs` until `timeoutMs`. viem's
 * waitForTransactionReceipt asks once and then once per new block, skipping blocks while it looks the transaction
 * up again: on an automining anvil, the last transaction of a burst can be mined in a block it skipped, and no later
 * block comes to look again. A devnet start timed out that way (60 s) on a busy machine. Times are milliseconds.
 */
export const receiptOf = async (
  client: Pick<PublicClient, "getTransactionReceipt">,
  hash: Hash,
  { everyMs = 50, timeoutMs = 60_000 }: { readonly everyMs?: number; readonly timeoutMs?: number } = {},
): Promise<TransactionReceipt> => {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    try {
      return await client.getTransactionReceipt({ hash })
    } catch (e) {
      if (!(e instanceof TransactionReceiptNotFoundError)) throw e
    }
    if (Date.now() > deadline) throw new Error(`transaction ${hash} was not mined within ${timeoutMs} ms`)
    await new Promise((resolve) => setTimeout(resolve, everyMs))
  }
}
