// What a check refuses with: a request check's GatewayError, a config's problems.
import { ConfigError, parseConfig } from "../../src/config/load.js";
import { GatewayError } from "../../src/http/errors.js";

/** The GatewayError `fn` throws; anything else thrown is rethrown, and no throw fails the test. */
export function refusal(fn: () => unknown): GatewayError {
  try {
    fn();
  } catch (err) {
    if (err instanceof GatewayError) return err;
    throw err;
  }
  throw new Error("expected a refusal");
}

/** The problems `parseConfig` finds in `raw`; a config it accepts fails the test. */
export function problemsOf(raw: unknown, env: NodeJS.ProcessEnv = {}): string[] {
  try {
    parseConfig(raw, env);
  } catch (err) {
    if (err instanceof ConfigError) return err.problems;
    throw err;
  }
  throw new Error("expected the config to be refused");
}
