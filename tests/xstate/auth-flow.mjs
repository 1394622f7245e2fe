// An authentication flow, in the style of the login/session machines of
// XState 5's examples and Stately's authentication template: a session check
// on start, login with an optional second factor, a session that refreshes its
// token and expires, and logout, each call an invoked promise actor.
//
// Written for idem's tests; licensed MIT OR Apache-2.0, as the project.
// `node tests/xstate/make.mjs` writes its JSON form (auth-flow.json).

export default function authFlow({ setup, fromPromise, assign, emit, raise, and, not, or }) {
  const call = (name) => fromPromise(async ({ input }) => (await fetch(`/auth/${name}`, { method: "POST", body: JSON.stringify(input) })).json());
  return setup({
    actors: {
      checkSession: call("session"),
      login: call("login"),
      verifyCode: call("verify"),
      refreshToken: call("refresh"),
      logout: call("logout"),
    },
    guards: {
      needsSecondFactor: ({ event }) => event.output.mfa === true,
      isLocked: ({ event }) => event.error?.code === "locked",
      hasAttemptsLeft: ({ context }) => context.attempts < 5,
      isRemembered: ({ context }) => context.remember,
    },
    actions: {
      storeSession: assign({ session: ({ event }) => event.output }),
      clearSession: assign({ session: null }),
      track: (_, params) => globalThis.analytics?.track(params.name),
    },
    delays: {
      sessionTimeout: 30 * 60 * 1000,
      codeTimeout: 5 * 60 * 1000,
    },
  }).createMachine({
    id: "auth",
    initial: "checkingSession",
    context: { session: null, attempts: 0, remember: false, error: null },
    states: {
      checkingSession: {
        invoke: {
          src: "checkSession",
          onDone: { target: "signedIn", actions: "storeSession" },
          onError: "signedOut",
        },
      },
      signedOut: {
        entry: "clearSession",
        on: {
          LOGIN: {
            target: "authenticating",
            actions: assign({ attempts: ({ context }) => context.attempts + 1, error: null }),
          },
        },
      },
      authenticating: {
        invoke: {
          id: "login",
          src: "login",
          input: ({ event }) => ({ email: event.email, password: event.password }),
          onDone: [
            { target: "secondFactor", guard: "needsSecondFactor" },
            { target: "signedIn", actions: ["storeSession", { type: "track", params: { name: "login" } }] },
          ],
          onError: [
            { target: "locked", guard: or(["isLocked", not("hasAttemptsLeft")]) },
            { target: "signedOut", actions: assign({ error: "invalidCredentials" }) },
          ],
        },
        on: { CANCEL: "signedOut" },
      },
      secondFactor: {
        initial: "waiting",
        states: {
          waiting: {
            on: { SUBMIT_CODE: "verifying", RESEND: { target: "waiting", reenter: true } },
            after: { codeTimeout: "#auth.signedOut" },
          },
          verifying: {
            invoke: {
              src: "verifyCode",
              input: ({ event }) => ({ code: event.code }),
              onDone: "verified",
              onError: { target: "waiting", actions: assign({ error: "invalidCode" }) },
            },
          },
          verified: { type: "final", output: { method: "totp" } },
        },
        on: { CANCEL: "signedOut" },
        onDone: { target: "signedIn", actions: ["storeSession", emit({ type: "secondFactorPassed" })] },
      },
      locked: {
        entry: emit({ type: "accountLocked" }),
        on: { UNLOCK: { target: "signedOut", actions: assign({ attempts: 0 }) } },
      },
      signedIn: {
        initial: "active",
        entry: raise({ type: "SESSION_STARTED" }),
        states: {
          active: {
            after: { sessionTimeout: [{ target: "refreshing", guard: and(["isRemembered", "hasAttemptsLeft"]) }, { target: "expired" }] },
            on: { ACTIVITY: { target: "active", reenter: true } },
          },
          refreshing: {
            invoke: {
              src: "refreshToken",
              onDone: { target: "active", actions: "storeSession" },
              onError: "expired",
            },
          },
          expired: { type: "final", output: { reason: "expired" } },
        },
        on: {
          SESSION_STARTED: { actions: { type: "track", params: { name: "session" } } },
          LOGOUT: "signingOut",
        },
        onDone: "signedOut",
      },
      signingOut: {
        invoke: { src: "logout", onDone: "signedOut", onError: "signedOut" },
      },
    },
  });
}
