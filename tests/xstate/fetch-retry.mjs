// A data-fetching machine with retries, in the style of the fetch and retry
// examples of XState 5's documentation and Stately's templates: an invoked
// promise actor, onDone/onError, guarded retries with a named backoff delay,
// cancellation and a stale-while-revalidate refresh.
//
// Written for idem's tests; licensed MIT OR Apache-2.0, as the project.
// `node tests/xstate/make.mjs` writes its JSON form (fetch-retry.json).

export default function fetchRetry({ setup, fromPromise, assign, and, not }) {
  return setup({
    actors: {
      fetchUser: fromPromise(async ({ input }) => {
        const res = await fetch(`/api/users/${input.userId}`);
        if (!res.ok) throw Object.assign(new Error(res.statusText), { status: res.status });
        return res.json();
      }),
    },
    guards: {
      isNotFound: ({ event }) => event.error?.status === 404,
      canRetry: ({ context }) => context.retries < context.maxRetries,
      isOnline: () => globalThis.navigator?.onLine ?? true,
      hasUser: ({ context }) => context.user !== null,
    },
    actions: {
      reportError: ({ event }) => console.error(event.error),
    },
    delays: {
      backoff: 2000,
      staleAfter: 5 * 60 * 1000,
    },
  }).createMachine({
    id: "userFetcher",
    initial: "idle",
    context: { userId: null, user: null, error: null, retries: 0, maxRetries: 3 },
    states: {
      idle: {
        on: {
          FETCH: { target: "loading", actions: assign({ userId: ({ event }) => event.userId, retries: 0 }) },
        },
      },
      loading: {
        invoke: {
          id: "fetchUser",
          src: "fetchUser",
          input: ({ context }) => ({ userId: context.userId }),
          onDone: {
            target: "success",
            actions: assign({ user: ({ event }) => event.output, error: null }),
          },
          onError: [
            { target: "notFound", guard: "isNotFound" },
            { target: "retrying", guard: and(["canRetry", "isOnline"]), actions: "reportError" },
            { target: "failure", actions: ["reportError", assign({ error: ({ event }) => event.error })] },
          ],
        },
        on: { CANCEL: "idle" },
        after: { 15000: { target: "failure", actions: assign({ error: "timeout" }) } },
      },
      retrying: {
        entry: assign({ retries: ({ context }) => context.retries + 1 }),
        after: { backoff: "loading" },
        on: { CANCEL: "idle" },
      },
      success: {
        after: { staleAfter: "stale" },
        on: { FETCH: { target: "loading", guard: not("hasUser") }, REFRESH: "loading" },
      },
      stale: {
        on: { REFRESH: "loading", FETCH: "loading" },
      },
      notFound: {
        on: { FETCH: "loading" },
      },
      failure: {
        on: {
          RETRY: { target: "loading", actions: assign({ retries: 0, error: null }) },
          FETCH: "loading",
        },
      },
    },
  });
}
