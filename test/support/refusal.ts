// The refusal a request check throws, for tests of the kinds' request parsing.
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
