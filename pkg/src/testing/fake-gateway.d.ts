// Types for `idem/testing/fake-gateway` (testing/fake-gateway.js): an in-memory payment gateway
// that times out, drops answers and fails on demand, to test effects under retries.
export { FakeGateway, gatewayEffects, gatewayFetch, httpGateway } from "../index.js";
export type { Charge, GatewayClient, GatewayFault } from "../index.js";

/** The gateway answered with an error (`status` 4xx: permanent; 5xx: retryable). */
export declare class GatewayError extends Error {
  constructor(status: number, code: string, message: string);
  readonly name: "GatewayError";
  readonly status: number;
  readonly code: string;
}

/** The connection failed after the request was sent: the outcome is unknown. */
export declare class NetworkError extends Error {
  constructor(message?: string);
  readonly name: "NetworkError";
  readonly code: "network_error";
}
