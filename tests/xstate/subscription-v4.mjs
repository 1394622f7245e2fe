// A subscription-billing machine written for XState 4, in the style of the
// billing flows of Stripe-backed SaaS apps built on XState 4 and of XState 4's
// documentation on services, delays and eventless transitions: every
// implementation in the machine's options (`services`, `guards`, `actions`,
// `delays`), invoked services by name whose `onDone`/`onError` are lists
// guarded by `cond`, `after` with named delays (one of them computed from the
// context), `always`, XState 4's `on: { "": ... }`, `sendParent` and `log`.
//
// Written for idem's tests; licensed MIT OR Apache-2.0, as the project.
// Its JSON form (subscription-v4.json) is a plain `JSON.stringify(machine.config)`
// under XState 4.38.3: `XSTATE4=<dir with xstate@4 installed> node tests/xstate/make.mjs`.

const DAY = 24 * 60 * 60 * 1000;

export default function subscriptionV4({ createMachine, assign, actions }) {
  const { sendParent, log } = actions;
  return createMachine(
    {
      id: "subscription",
      initial: "loading",
      predictableActionArguments: true,
      context: {
        customerId: null,
        subscription: null,
        plan: "free",
        hasPaymentMethod: false,
        failedPayments: 0,
        maxFailedPayments: 3,
        error: null,
      },
      states: {
        loading: {
          invoke: {
            id: "fetchSubscription",
            src: "fetchSubscription",
            onDone: [
              { target: "trialing", cond: "isTrialing", actions: "setSubscription" },
              { target: "active", cond: "isActive", actions: "setSubscription" },
              { target: "pastDue", cond: "isPastDue", actions: "setSubscription" },
              { target: "free", actions: "setSubscription" },
            ],
            onError: { target: "failure", actions: "setError" },
          },
        },
        failure: {
          on: { RETRY: "loading" },
          after: { RETRY_DELAY: "loading" },
        },
        free: {
          on: {
            SUBSCRIBE: { target: "checkout", actions: assign({ plan: (_, event) => event.plan }) },
            START_TRIAL: { target: "startingTrial", cond: "isTrialEligible" },
          },
        },
        startingTrial: {
          invoke: {
            src: "startTrial",
            onDone: { target: "trialing", actions: "setSubscription" },
            onError: { target: "free", actions: "setError" },
          },
        },
        checkout: {
          invoke: {
            src: "createSubscription",
            onDone: { target: "active", actions: ["setSubscription", "trackConversion"] },
            onError: [
              { target: "free", cond: "isCardDeclined", actions: assign({ error: "card_declined" }) },
              { target: "free", actions: "setError" },
            ],
          },
          on: { CANCEL: "free" },
        },
        trialing: {
          after: {
            TRIAL_REMINDER: { actions: "sendTrialEndingEmail" },
            TRIAL_PERIOD: "convertingTrial",
          },
          on: {
            ADD_PAYMENT_METHOD: { actions: ["savePaymentMethod", assign({ hasPaymentMethod: true })] },
            UPGRADE: { target: "convertingTrial", cond: "hasPaymentMethod" },
            CANCEL: "canceled",
          },
        },
        convertingTrial: {
          invoke: {
            src: "chargeInvoice",
            onDone: { target: "active", actions: "setSubscription" },
            onError: [
              { target: "pastDue", cond: "hasPaymentMethod", actions: "incrementFailedPayments" },
              { target: "expired" },
            ],
          },
        },
        active: {
          initial: "current",
          on: {
            CHANGE_PLAN: { target: ".changingPlan", cond: "isDifferentPlan" },
            CANCEL: [{ target: "cancelAtPeriodEnd", cond: "isAnnualPlan" }, { target: "canceling" }],
            PAYMENT_FAILED: { target: "pastDue", actions: "incrementFailedPayments" },
          },
          states: {
            current: {
              on: { INVOICE_UPCOMING: "renewing" },
            },
            renewing: {
              invoke: {
                src: "chargeInvoice",
                onDone: { target: "current", actions: assign({ failedPayments: 0 }) },
                onError: { target: "#subscription.pastDue", actions: "incrementFailedPayments" },
              },
            },
            changingPlan: {
              invoke: {
                src: "changePlan",
                onDone: { target: "current", actions: "setSubscription" },
                onError: { target: "current", actions: "setError" },
              },
            },
          },
        },
        cancelAtPeriodEnd: {
          on: { RESUME: "active", PERIOD_ENDED: "canceled" },
          after: { BILLING_PERIOD_END: "canceled" },
        },
        canceling: {
          invoke: {
            src: "cancelSubscription",
            onDone: "canceled",
            onError: { target: "active", actions: "setError" },
          },
        },
        pastDue: {
          entry: ["notifyPaymentFailed", sendParent("PAYMENT_PAST_DUE")],
          on: {
            "": { target: "suspended", cond: "tooManyFailedPayments" },
            UPDATE_PAYMENT_METHOD: { target: "retryingPayment", actions: "savePaymentMethod" },
          },
          after: { DUNNING_INTERVAL: "retryingPayment" },
        },
        retryingPayment: {
          invoke: {
            src: "chargeInvoice",
            onDone: { target: "active", actions: [assign({ failedPayments: 0 }), log("payment recovered")] },
            onError: { target: "pastDue", actions: "incrementFailedPayments" },
          },
        },
        suspended: {
          entry: "revokeAccess",
          always: [{ target: "canceled", cond: "gracePeriodOver" }],
          on: { UPDATE_PAYMENT_METHOD: { target: "retryingPayment", actions: "savePaymentMethod" } },
          after: { GRACE_PERIOD: "canceled" },
        },
        canceled: {
          entry: ["revokeAccess", sendParent({ type: "SUBSCRIPTION_ENDED", reason: "canceled" })],
          on: { RESUBSCRIBE: "checkout" },
        },
        expired: { type: "final" },
      },
    },
    {
      services: {
        fetchSubscription: (ctx) => fetch(`/api/customers/${ctx.customerId}/subscription`).then((r) => r.json()),
        startTrial: (ctx) => fetch("/api/trials", { method: "POST", body: JSON.stringify({ customer: ctx.customerId }) }),
        createSubscription: (ctx) => fetch("/api/subscriptions", { method: "POST", body: JSON.stringify({ plan: ctx.plan }) }),
        chargeInvoice: (ctx) => fetch(`/api/subscriptions/${ctx.subscription.id}/pay`, { method: "POST" }),
        changePlan: (_, event) => fetch("/api/subscriptions/plan", { method: "PUT", body: JSON.stringify({ plan: event.plan }) }),
        cancelSubscription: (ctx) => fetch(`/api/subscriptions/${ctx.subscription.id}`, { method: "DELETE" }),
      },
      guards: {
        isTrialing: (_, event) => event.data.status === "trialing",
        isActive: (_, event) => event.data.status === "active",
        isPastDue: (_, event) => event.data.status === "past_due",
        isTrialEligible: (ctx) => ctx.subscription === null,
        isCardDeclined: (_, event) => event.data.code === "card_declined",
        hasPaymentMethod: (ctx) => ctx.hasPaymentMethod,
        isDifferentPlan: (ctx, event) => event.plan !== ctx.plan,
        isAnnualPlan: (ctx) => ctx.subscription.interval === "year",
        tooManyFailedPayments: (ctx) => ctx.failedPayments >= ctx.maxFailedPayments,
        gracePeriodOver: (ctx) => Date.now() > ctx.subscription.graceEndsAt,
      },
      actions: {
        setSubscription: assign({ subscription: (_, event) => event.data, plan: (_, event) => event.data?.plan ?? "free" }),
        setError: assign({ error: (_, event) => event.data.message }),
        incrementFailedPayments: assign({ failedPayments: (ctx) => ctx.failedPayments + 1 }),
        savePaymentMethod: () => {},
        sendTrialEndingEmail: () => {},
        notifyPaymentFailed: () => {},
        revokeAccess: () => {},
        trackConversion: () => {},
      },
      delays: {
        RETRY_DELAY: 5000,
        TRIAL_REMINDER: 11 * DAY,
        TRIAL_PERIOD: 14 * DAY,
        DUNNING_INTERVAL: 3 * DAY,
        GRACE_PERIOD: 7 * DAY,
        BILLING_PERIOD_END: (ctx) => new Date(ctx.subscription.currentPeriodEnd).getTime() - Date.now(),
      },
    },
  );
}
