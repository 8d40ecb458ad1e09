import { Option, Schema } from "effect"
import { AppConfig, DeploymentConfig } from "../../src/Config.ts"
import { DevelopmentConfig } from "../../src/DevelopmentConfig.ts"

export const TEST_ORIGIN = "https://app.example.com"

/** The development config with a known app origin; tests override parts of it as needed. */
export const testDeployment = (overrides: Record<string, unknown> = {}) =>
  Schema.decodeUnknownSync(DeploymentConfig)({
    ...DevelopmentConfig,
    app_origins: [TEST_ORIGIN],
    ...overrides,
  })

export const testAppConfig = (overrides: Record<string, unknown> = {}) =>
  AppConfig.layer(testDeployment(overrides), { port: 0, databaseUrl: Option.none(), source: "test" })
