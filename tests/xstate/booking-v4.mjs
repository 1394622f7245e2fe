// A table-reservation wizard written for XState 4, in the style of the booking
// and multi-step form machines of XState 4's documentation and of production
// apps that run such a wizard as a child of a page machine: a context of nested
// objects updated by `assign` with functions, `send` and `respond`,
// `escalate` and `sendParent` to the parent, `actions.choose`, exit actions,
// `internal: true` transitions, a self-transition that restarts its state,
// `strict`, `meta`, `tags` and `description`, and a machine-level `on` that
// names its children bare.
//
// Written for idem's tests; licensed MIT OR Apache-2.0, as the project.
// Its JSON form (booking-v4.json) is a plain `JSON.stringify(machine.config)`
// under XState 4.38.3: `XSTATE4=<dir with xstate@4 installed> node tests/xstate/make.mjs`.

export default function bookingV4({ createMachine, assign, send, actions }) {
  const { choose, respond, escalate, sendParent, log } = actions;
  return createMachine(
    {
      id: "booking",
      strict: true,
      predictableActionArguments: true,
      initial: "selectingDate",
      description: "Reserve a table: date, time, guest details, a hold on the table, then the reservation.",
      meta: { title: "Table reservation" },
      context: {
        venueId: null,
        slots: [],
        booking: { date: null, time: null, partySize: 2, notes: "" },
        guest: { name: "", email: "", phone: "", marketingOptIn: false },
        hold: { id: null, expiresAt: null },
        reservationId: null,
        errors: {},
      },
      on: {
        CLOSE: { target: "closed", actions: sendParent("BOOKING_CLOSED") },
        STATUS: { actions: respond((ctx) => ({ type: "BOOKING_STATUS", step: ctx.step })) },
        PING: { actions: respond("PONG") },
      },
      states: {
        selectingDate: {
          description: "The guest picks a date; its free slots are loaded.",
          tags: ["form"],
          on: {
            SELECT_DATE: {
              target: "loadingSlots",
              actions: assign({ booking: (ctx, event) => ({ ...ctx.booking, date: event.date, time: null }) }),
            },
          },
        },
        loadingSlots: {
          tags: ["loading"],
          invoke: {
            src: "fetchAvailability",
            onDone: [
              { target: "selectingTime", cond: "hasSlots", actions: "setSlots" },
              { target: "selectingDate", actions: assign({ errors: { date: "fully booked" } }) },
            ],
            onError: { target: "selectingDate", actions: escalate({ message: "availability is unavailable" }) },
          },
        },
        selectingTime: {
          tags: ["form"],
          on: {
            SELECT_TIME: {
              target: "guestDetails",
              actions: assign({ booking: (ctx, event) => ({ ...ctx.booking, time: event.time }) }),
            },
            CHANGE_PARTY_SIZE: {
              internal: true,
              actions: [
                assign({ booking: (ctx, event) => ({ ...ctx.booking, partySize: event.size }) }),
                choose([
                  { cond: "isLargeParty", actions: ["showLargePartyNotice", send("LARGE_PARTY")] },
                  { actions: "hideLargePartyNotice" },
                ]),
              ],
            },
            LARGE_PARTY: { actions: log("large party") },
            REFRESH: { target: "loadingSlots", actions: assign({ slots: [] }) },
            BACK: "selectingDate",
          },
        },
        guestDetails: {
          initial: "editing",
          tags: ["form"],
          meta: { step: 3 },
          on: { BACK: "selectingTime" },
          states: {
            editing: {
              on: {
                UPDATE_FIELD: { internal: true, actions: "updateGuestField" },
                SUBMIT: "validating",
              },
            },
            validating: {
              always: [{ target: "invalid", cond: "hasFieldErrors", actions: "setFieldErrors" }, { target: "valid" }],
            },
            invalid: {
              on: { UPDATE_FIELD: { target: "editing", actions: "updateGuestField" } },
            },
            valid: { type: "final" },
          },
          onDone: "holding",
        },
        holding: {
          description: "A hold on the table while the guest confirms.",
          entry: log((ctx) => `holding ${ctx.booking.date} ${ctx.booking.time}`),
          invoke: {
            id: "holdTable",
            src: "holdTable",
            onDone: { target: "confirming", actions: "setHold" },
            onError: [
              { target: "selectingTime", cond: "isSlotTaken", actions: assign({ errors: { time: "just taken" } }) },
              { target: "failed" },
            ],
          },
        },
        confirming: {
          exit: ["clearCountdown"],
          after: {
            HOLD_DURATION: {
              target: "selectingTime",
              actions: ["releaseHold", assign({ hold: { id: null, expiresAt: null } })],
            },
          },
          on: {
            CONFIRM: { target: "submitting", cond: "hasAcceptedTerms" },
            EXTEND_HOLD: "confirming",
            EDIT_DETAILS: { target: "guestDetails", actions: "releaseHold" },
          },
        },
        submitting: {
          invoke: {
            src: "createReservation",
            onDone: {
              target: "confirmed",
              actions: [
                assign({ reservationId: (_, event) => event.data.id }),
                sendParent((_, event) => ({ type: "BOOKED", reservationId: event.data.id })),
              ],
            },
            onError: { target: "failed", actions: "setSubmitError" },
          },
        },
        confirmed: {
          type: "final",
          data: { status: "confirmed" },
        },
        failed: {
          on: {
            RETRY: "submitting",
            START_OVER: { target: "selectingDate", actions: "resetBooking" },
          },
        },
        closed: { type: "final" },
      },
    },
    {
      services: {
        fetchAvailability: (ctx) => fetch(`/venues/${ctx.venueId}/slots?date=${ctx.booking.date}`).then((r) => r.json()),
        holdTable: (ctx) => fetch("/holds", { method: "POST", body: JSON.stringify(ctx.booking) }).then((r) => r.json()),
        createReservation: (ctx) =>
          fetch("/reservations", { method: "POST", body: JSON.stringify({ ...ctx.booking, guest: ctx.guest, hold: ctx.hold.id }) }).then((r) => r.json()),
      },
      guards: {
        hasSlots: (_, event) => event.data.length > 0,
        isLargeParty: (ctx) => ctx.booking.partySize > 8,
        hasFieldErrors: (ctx) => !ctx.guest.name || !/@/.test(ctx.guest.email),
        isSlotTaken: (_, event) => event.data.status === 409,
        hasAcceptedTerms: (_, event) => event.acceptedTerms === true,
      },
      actions: {
        setSlots: assign({ slots: (_, event) => event.data }),
        updateGuestField: assign({ guest: (ctx, event) => ({ ...ctx.guest, [event.field]: event.value }) }),
        setFieldErrors: assign({ errors: (ctx) => ({ name: !ctx.guest.name, email: !/@/.test(ctx.guest.email) }) }),
        setHold: assign({ hold: (_, event) => ({ id: event.data.id, expiresAt: event.data.expiresAt }) }),
        setSubmitError: assign({ errors: (_, event) => ({ submit: event.data.message }) }),
        resetBooking: assign({ booking: { date: null, time: null, partySize: 2, notes: "" }, errors: {} }),
        releaseHold: (ctx) => fetch(`/holds/${ctx.hold.id}`, { method: "DELETE" }),
        showLargePartyNotice: () => {},
        hideLargePartyNotice: () => {},
        clearCountdown: () => {},
      },
      delays: { HOLD_DURATION: 10 * 60 * 1000 },
    },
  );
}
