/** A test file's throw-away database: src/Sql/TestDatabase.ts, the one every concept's `Test` layer runs on. */
export { SqlTest as TestDatabaseLive, testDatabaseUrl } from "../../src/Sql/TestDatabase.ts"
