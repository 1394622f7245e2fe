// A checkout written for XState 4, in the style of the shopping-cart and
// checkout machines of XState 4's documentation and its community examples:
// `cond` (named, and with parameters beside the type), `send` to the machine
// itself and delayed, `assign` of literal values, `actions.raise`,
// invoked services with `data`, `onDone` of a compound state reading the
// final state's `data`, and the v4 idioms `key`-less ids, `internal: false`
// and `on: { "": ... }`.
//
// Written for idem's tests; licensed MIT OR Apache-2.0, as the project.
// Its JSON form (checkout-v4.json) is a plain `JSON.stringify(machine.config)`
// under XState 4.38.3: `XSTATE4=<dir with xstate@4 installed> node tests/xstate/make.mjs`.

export default function checkoutV4({ createMachine, assign, send, actions }) {
  const { raise } = actions;
  return createMachine(
    {
      id: "checkout",
      initial: "cart",
      predictableActionArguments: true,
      context: { items: [], coupon: null, shipping: null, paymentAttempts: 0, orderId: null },
      states: {
        cart: {
          on: {
            ADD_ITEM: { actions: "addItem" },
            REMOVE_ITEM: { actions: "removeItem" },
            APPLY_COUPON: { actions: send({ type: "VALIDATE_COUPON" }) },
            VALIDATE_COUPON: [
              { cond: { type: "isCouponValid", minTotal: 20 }, actions: assign({ couponStatus: "valid" }) },
              { actions: assign({ coupon: null, couponStatus: "rejected" }) },
            ],
            CHECKOUT: { target: "details", cond: "hasItems" },
          },
        },
        details: {
          initial: "shipping",
          states: {
            shipping: {
              on: {
                SET_SHIPPING: { target: "billing", actions: "saveShipping" },
                BACK: "#checkout.cart",
              },
            },
            billing: {
              on: {
                SAME_AS_SHIPPING: { target: "review", actions: assign({ billingSameAsShipping: true }) },
                SET_BILLING: { target: "review", actions: "saveBilling" },
                BACK: "shipping",
              },
            },
            review: {
              on: {
                CONFIRM: "confirmed",
                EDIT: { target: "shipping", internal: false },
              },
            },
            confirmed: { type: "final", data: { step: "details", complete: true } },
          },
          onDone: { target: "payment", actions: raise("DETAILS_COMPLETE") },
        },
        payment: {
          initial: "choosing",
          on: { DETAILS_COMPLETE: { actions: send("LOG_STEP") }, LOG_STEP: { actions: "logStep" } },
          states: {
            choosing: {
              on: {
                PAY_CARD: { target: "charging", actions: assign({ method: "card" }) },
                PAY_INVOICE: { target: "charging", cond: "isBusinessCustomer", actions: assign({ method: "invoice" }) },
              },
            },
            charging: {
              invoke: {
                id: "charge",
                src: "chargePayment",
                data: { currency: "EUR", capture: true },
                onDone: { target: "#checkout.placingOrder", actions: "savePayment" },
                onError: [
                  { target: "choosing", cond: { type: "isRetryable" }, actions: assign({ paymentError: "retry" }) },
                  { target: "#checkout.failed" },
                ],
              },
            },
          },
        },
        placingOrder: {
          invoke: {
            src: "placeOrder",
            onDone: { target: "placed", actions: "saveOrder" },
            onError: "failed",
          },
        },
        placed: {
          entry: send({ type: "NOTIFY" }, { delay: 500 }),
          on: {
            "": [{ target: "complete", cond: "isDigitalOnly" }],
            SHIPPED: "complete",
          },
        },
        failed: {
          on: { RETRY: "payment", CANCEL: "cart" },
        },
        complete: { type: "final", data: { status: "complete" } },
      },
    },
    {
      actions: {
        addItem: assign({ items: (ctx, e) => [...ctx.items, e.item] }),
        removeItem: assign({ items: (ctx, e) => ctx.items.filter((i) => i.id !== e.id) }),
        saveShipping: assign({ shipping: (_, e) => e.address }),
        saveBilling: assign({ billing: (_, e) => e.address }),
        savePayment: assign({ paymentId: (_, e) => e.data.id }),
        saveOrder: assign({ orderId: (_, e) => e.data.orderId }),
        logStep: () => {},
      },
      guards: {
        isCouponValid: (ctx, _, { cond }) => ctx.items.reduce((s, i) => s + i.price, 0) >= cond.minTotal,
        hasItems: (ctx) => ctx.items.length > 0,
        isBusinessCustomer: (ctx) => Boolean(ctx.vatId),
        isRetryable: (_, e) => e.data?.retryable === true,
        isDigitalOnly: (ctx) => ctx.items.every((i) => i.digital),
      },
      services: {
        chargePayment: (_, __, { data }) => fetch("/pay", { method: "POST", body: JSON.stringify(data) }),
        placeOrder: (ctx) => fetch("/orders", { method: "POST", body: JSON.stringify(ctx.items) }),
      },
    },
  );
}
