// A user-onboarding flow written for XState 4, in the style of the onboarding
// and multi-step signup machines of production apps and of XState 4's
// documentation on history, final states and done data: steps as a compound
// state with a deep history to come back to after help or a save, a profile
// step of parallel regions each ending in a final state, `onDone` reading the
// final states' `data`, `type: "history"` and `history: true`, a transition to
// a history state by a dotted path, `#id` targets, `onEntry` (XState 4's early
// spelling of `entry`), and a final state of the machine with `data`.
//
// Written for idem's tests; licensed MIT OR Apache-2.0, as the project.
// Its JSON form (onboarding-v4.json) is a plain `JSON.stringify(machine.config)`
// under XState 4.38.3: `XSTATE4=<dir with xstate@4 installed> node tests/xstate/make.mjs`.

export default function onboardingV4({ createMachine, assign, send }) {
  return createMachine(
    {
      id: "onboarding",
      initial: "welcome",
      predictableActionArguments: true,
      context: { user: null, profile: { name: "", avatar: null, role: null }, workspace: null, invited: [], skipped: [] },
      states: {
        welcome: {
          onEntry: "trackStart",
          on: { START: "steps", SKIP_ALL: { target: "finished", actions: assign({ skipped: ["all"] }) } },
        },
        steps: {
          id: "steps",
          initial: "profile",
          on: {
            HELP: "help",
            SAVE_AND_EXIT: "saving",
          },
          states: {
            hist: { type: "history", history: "deep" },
            profile: {
              type: "parallel",
              states: {
                name: {
                  initial: "editing",
                  states: {
                    editing: { on: { SET_NAME: { target: "done", cond: "isNameValid", actions: "setName" } } },
                    done: { type: "final", data: { field: "name" } },
                  },
                },
                avatar: {
                  initial: "empty",
                  states: {
                    empty: {
                      on: {
                        UPLOAD_AVATAR: "uploading",
                        SKIP_AVATAR: { target: "done", actions: assign({ skipped: (ctx) => [...ctx.skipped, "avatar"] }) },
                      },
                    },
                    uploading: {
                      invoke: {
                        src: "uploadAvatar",
                        onDone: { target: "done", actions: "setAvatar" },
                        onError: { target: "empty", actions: "showUploadError" },
                      },
                    },
                    done: { type: "final" },
                  },
                },
              },
              onDone: "role",
            },
            role: {
              on: {
                CHOOSE_ROLE: [
                  { target: "workspace", cond: "isAdminRole", actions: "setRole" },
                  { target: "invite", actions: "setRole" },
                ],
                BACK: "profile",
              },
            },
            workspace: {
              initial: "naming",
              states: {
                naming: {
                  on: { SET_WORKSPACE: { target: "creating", actions: "setWorkspaceName" } },
                },
                creating: {
                  invoke: {
                    src: "createWorkspace",
                    onDone: { target: "created", actions: "setWorkspace" },
                    onError: { target: "naming", actions: "showWorkspaceError" },
                  },
                },
                created: { type: "final", data: { created: true } },
              },
              onDone: "invite",
              on: { BACK: "role" },
            },
            invite: {
              on: {
                ADD_INVITE: { actions: "addInvite" },
                SEND_INVITES: { target: "sendingInvites", cond: "hasInvites" },
                SKIP_INVITES: { target: "complete", actions: assign({ skipped: (ctx) => [...ctx.skipped, "invites"] }) },
                BACK: "#onboarding.steps.role",
              },
            },
            sendingInvites: {
              invoke: {
                src: "sendInvites",
                onDone: "complete",
                onError: { target: "invite", actions: "showInviteError" },
              },
            },
            complete: { type: "final", data: { onboarded: true } },
          },
          onDone: { target: "finishing", actions: send("ONBOARDED") },
        },
        help: {
          initial: "browsing",
          states: {
            browsing: { on: { OPEN_ARTICLE: "reading" } },
            reading: { on: { CLOSE_ARTICLE: "browsing" } },
            lastStep: { history: true },
          },
          on: {
            BACK_TO_STEPS: "#steps.hist",
            CONTACT_SUPPORT: { actions: "openChat" },
          },
        },
        saving: {
          invoke: {
            src: "saveProgress",
            onDone: "saved",
            onError: { target: "steps.hist", actions: "showSaveError" },
          },
        },
        saved: {
          on: { RESUME: "steps.hist" },
        },
        finishing: {
          on: { ONBOARDED: { actions: "trackComplete" } },
          invoke: {
            src: "markOnboarded",
            onDone: "finished",
            onError: "finished",
          },
        },
        finished: {
          type: "final",
          data: (ctx) => ({ user: ctx.user, skipped: ctx.skipped }),
        },
      },
    },
    {
      guards: {
        isNameValid: (_, event) => event.name.trim().length > 1,
        isAdminRole: (_, event) => event.role === "admin",
        hasInvites: (ctx) => ctx.invited.length > 0,
      },
      actions: {
        setName: assign({ profile: (ctx, event) => ({ ...ctx.profile, name: event.name }) }),
        setAvatar: assign({ profile: (ctx, event) => ({ ...ctx.profile, avatar: event.data.url }) }),
        setRole: assign({ profile: (ctx, event) => ({ ...ctx.profile, role: event.role }) }),
        setWorkspaceName: assign({ workspace: (_, event) => ({ name: event.name }) }),
        setWorkspace: assign({ workspace: (_, event) => event.data }),
        addInvite: assign({ invited: (ctx, event) => [...ctx.invited, event.email] }),
        trackStart: () => {},
        trackComplete: () => {},
        showUploadError: () => {},
        showWorkspaceError: () => {},
        showInviteError: () => {},
        showSaveError: () => {},
        openChat: () => {},
      },
      services: {
        uploadAvatar: (_, event) => fetch("/avatar", { method: "PUT", body: event.file }).then((r) => r.json()),
        createWorkspace: (ctx) => fetch("/workspaces", { method: "POST", body: JSON.stringify(ctx.workspace) }).then((r) => r.json()),
        sendInvites: (ctx) => fetch("/invites", { method: "POST", body: JSON.stringify(ctx.invited) }),
        saveProgress: (ctx) => fetch("/onboarding", { method: "PUT", body: JSON.stringify(ctx) }),
        markOnboarded: () => fetch("/onboarding/complete", { method: "POST" }),
      },
    },
  );
}
