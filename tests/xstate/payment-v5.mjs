// A card payment with a 3-D Secure challenge written for XState 5, in the
// style of XState 5's documentation and Stately's templates for `setup`: named
// `actions`, `guards`, `actors` (`fromPromise`, `fromCallback`) and `delays`;
// `enqueueActions`, `sendTo`, `raise`, `assign`, `emit`; guards combined by
// `and`/`or`/`not` and `stateIn`; `input` computed and literal; `output` of
// final states read by `onDone`; `reenter: true`; a parallel state whose
// second region follows the connection through a callback actor, and
// actors given inline.
//
// Written for idem's tests; licensed MIT OR Apache-2.0, as the project.
// `node tests/xstate/make.mjs` writes its JSON form (payment-v5.json).

export default function paymentV5({ setup, fromPromise, fromCallback, assign, raise, sendTo, emit, enqueueActions, and, or, not, stateIn }) {
  const post = (path) => fromPromise(async ({ input }) => (await fetch(path, { method: "POST", body: JSON.stringify(input) })).json());
  return setup({
    types: {},
    actors: {
      createIntent: post("/payments/intents"),
      confirmIntent: post("/payments/confirm"),
      pollStatus: post("/payments/status"),
      connection: fromCallback(({ sendBack, receive }) => {
        const online = () => sendBack({ type: "ONLINE" });
        const offline = () => sendBack({ type: "OFFLINE" });
        globalThis.addEventListener?.("online", online);
        globalThis.addEventListener?.("offline", offline);
        receive((event) => event.type === "PING" && sendBack({ type: globalThis.navigator?.onLine ? "ONLINE" : "OFFLINE" }));
        return () => {
          globalThis.removeEventListener?.("online", online);
          globalThis.removeEventListener?.("offline", offline);
        };
      }),
    },
    guards: {
      requiresAction: ({ event }) => event.output.status === "requires_action",
      succeeded: ({ event }) => event.output.status === "succeeded",
      isDeclined: ({ event }) => event.error?.code === "card_declined",
      canRetry: ({ context }) => context.attempts < 3,
      hasAmount: ({ context }) => context.amount > 0,
      isTestMode: ({ context }) => context.testMode,
    },
    actions: {
      track: (_, params) => globalThis.analytics?.track(params.event),
      setIntent: assign({ intent: ({ event }) => event.output }),
      clearError: assign({ error: null }),
      notifyHost: emit({ type: "paymentStateChanged" }),
    },
    delays: {
      pollInterval: 2000,
      challengeTimeout: 5 * 60 * 1000,
    },
  }).createMachine({
    id: "payment",
    type: "parallel",
    context: ({ input }) => ({ amount: input?.amount ?? 0, currency: "EUR", intent: null, attempts: 0, error: null, testMode: false }),
    states: {
      flow: {
        initial: "idle",
        states: {
          idle: {
            on: {
              PAY: {
                target: "creating",
                guard: and(["hasAmount", stateIn({ connection: "online" })]),
                actions: [assign({ attempts: ({ context }) => context.attempts + 1 }), "clearError"],
              },
            },
          },
          creating: {
            invoke: {
              id: "createIntent",
              src: "createIntent",
              input: ({ context }) => ({ amount: context.amount, currency: context.currency }),
              onDone: { target: "confirming", actions: "setIntent" },
              onError: { target: "failed", actions: assign({ error: ({ event }) => event.error.message }) },
            },
          },
          confirming: {
            invoke: {
              src: "confirmIntent",
              input: { confirm: true },
              onDone: [
                { target: "challenge", guard: "requiresAction" },
                { target: "succeeded", guard: or(["succeeded", "isTestMode"]) },
                { target: "polling" },
              ],
              onError: [
                { target: "failed", guard: "isDeclined", actions: assign({ error: "declined" }) },
                { target: "retrying", guard: "canRetry" },
                { target: "failed" },
              ],
            },
          },
          challenge: {
            initial: "presenting",
            entry: [emit({ type: "challengeRequired" }), { type: "track", params: { event: "3ds_shown" } }],
            states: {
              presenting: {
                on: {
                  CHALLENGE_COMPLETED: "verified",
                  CHALLENGE_FAILED: "rejected",
                },
                after: { challengeTimeout: "rejected" },
              },
              verified: { type: "final", output: { verified: true } },
              rejected: { type: "final", output: { verified: false } },
            },
            onDone: [
              { target: "polling", guard: ({ event }) => event.output.verified },
              { target: "failed", actions: assign({ error: "challenge" }) },
            ],
          },
          polling: {
            invoke: {
              src: "pollStatus",
              input: ({ context }) => ({ id: context.intent.id }),
              onDone: [
                { target: "succeeded", guard: "succeeded" },
                { target: "polling", reenter: true, guard: not("isDeclined") },
                { target: "failed" },
              ],
              onError: "retrying",
            },
            after: { pollInterval: { target: "polling", reenter: true } },
          },
          retrying: {
            after: { 1000: [{ target: "confirming", guard: stateIn("#payment.connection.online") }, { target: "idle" }] },
          },
          succeeded: {
            type: "final",
            entry: [
              enqueueActions(({ enqueue, check }) => {
                enqueue("notifyHost");
                if (check("isTestMode")) enqueue({ type: "track", params: { event: "test_payment" } });
              }),
              sendTo("connection", { type: "PING" }),
            ],
            output: { status: "paid" },
          },
          failed: {
            entry: ["notifyHost", raise({ type: "PAYMENT_FAILED" })],
            on: {
              RETRY: { target: "confirming", guard: and(["canRetry", not(stateIn({ connection: "offline" }))]) },
              CANCEL: "idle",
            },
          },
        },
        on: {
          PAYMENT_FAILED: { actions: { type: "track", params: { event: "payment_failed" } } },
        },
      },
      connection: {
        initial: "online",
        invoke: { id: "connection", src: "connection" },
        states: {
          online: { on: { OFFLINE: "offline" } },
          offline: {
            on: { ONLINE: "online" },
            invoke: {
              id: "reachability",
              src: fromPromise(async () => fetch("/ping", { method: "HEAD" })),
              onDone: "online",
            },
          },
        },
      },
    },
  });
}
