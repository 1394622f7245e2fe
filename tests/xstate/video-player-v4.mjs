// A video player written for XState 4 with typegen, in the style of the
// player machines of production streaming apps and of XState 4's
// documentation on parallel states and `id`s: `predictableActionArguments`,
// `schema` and `tsTypes` as typegen writes them, states with `id`s reached
// by `#id` targets, `target` lists entering several regions at once,
// transitions given as lists of strings and of objects mixed, a wildcard
// `on: { "*": ... }` that logs what nothing else handles, `in` guards, a
// self-transition that restarts a timer, and a `delimiter`-free dotted
// target into a sibling's child.
//
// Written for idem's tests; licensed MIT OR Apache-2.0, as the project.
// Its JSON form (video-player-v4.json) is a plain `JSON.stringify(machine.config)`
// under XState 4.38.3: `XSTATE4=<dir with xstate@4 installed> node tests/xstate/make.mjs`.

export default function videoPlayerV4({ createMachine, assign }) {
  return createMachine(
    {
      id: "videoPlayer",
      predictableActionArguments: true,
      tsTypes: {},
      schema: { context: {}, events: {}, services: {} },
      type: "parallel",
      context: { src: null, currentTime: 0, duration: 0, volume: 1, muted: false, captionsTrack: null, errorCount: 0 },
      on: {
        "*": { actions: "logUnhandled" },
      },
      states: {
        playback: {
          id: "playback",
          initial: "empty",
          states: {
            empty: {
              on: { LOAD: { target: "loading", actions: "setSource" } },
            },
            loading: {
              id: "loading",
              invoke: {
                id: "loadMetadata",
                src: "loadMetadata",
                onDone: { target: "ready", actions: "setMetadata" },
                onError: [{ target: "#playback.error", cond: "isFatal" }, { target: "loading" }],
              },
              on: { LOAD: { target: "loading", actions: "setSource" } },
            },
            ready: {
              id: "ready",
              initial: "paused",
              states: {
                paused: {
                  on: {
                    PLAY: [{ target: "playing", cond: "canAutoplay" }, "blocked"],
                    SEEK: { actions: "seek" },
                  },
                },
                blocked: {
                  on: { USER_GESTURE: "playing" },
                },
                playing: {
                  entry: "startPlayback",
                  exit: "pausePlayback",
                  on: {
                    PAUSE: ["paused"],
                    TIME_UPDATE: { actions: "setTime" },
                    WAITING: "#videoPlayer.playback.stalled",
                    ENDED: "#ended",
                  },
                },
                ended: {
                  id: "ended",
                  on: { REPLAY: { target: "playing", actions: assign({ currentTime: 0 }) } },
                },
              },
              on: {
                LOAD: "#loading",
                STOP: "#playback.empty",
              },
            },
            stalled: {
              after: { 8000: "#playback.error" },
              on: {
                CAN_PLAY: "ready.playing",
                STALL_PROGRESS: "stalled",
              },
            },
            error: {
              entry: assign({ errorCount: (ctx) => ctx.errorCount + 1 }),
              on: {
                RETRY: [
                  { target: "loading", cond: "canRetry" },
                  { target: "empty" },
                ],
              },
            },
          },
        },
        volume: {
          initial: "unmuted",
          states: {
            unmuted: {
              on: {
                MUTE: "muted",
                VOLUME_CHANGE: [{ target: "muted", cond: "isZeroVolume" }, { actions: "setVolume" }],
              },
            },
            muted: {
              on: {
                UNMUTE: "unmuted",
                VOLUME_CHANGE: { target: "unmuted", actions: "setVolume" },
              },
            },
          },
        },
        captions: {
          id: "captions",
          initial: "off",
          states: {
            off: {
              on: {
                SHOW_CAPTIONS: { target: "on", in: "#ready" },
              },
            },
            on: {
              on: { HIDE_CAPTIONS: "off", CHANGE_TRACK: { actions: "setCaptionsTrack" } },
            },
          },
        },
        mode: {
          initial: "inline",
          states: {
            inline: {
              on: {
                ENTER_THEATER: ["theater"],
                ENTER_FULLSCREEN: { target: ["fullscreen", "#captions.on"] },
              },
            },
            theater: {
              on: { EXIT_THEATER: "inline", ENTER_FULLSCREEN: "fullscreen" },
            },
            fullscreen: {
              on: {
                EXIT_FULLSCREEN: "inline",
                ESCAPE: { target: ["inline", "#videoPlayer.captions.off"] },
              },
            },
          },
          on: {
            LOAD: { target: ["#videoPlayer.mode.inline", "#loading"], actions: "setSource" },
          },
        },
      },
    },
    {
      services: {
        loadMetadata: (ctx) => new Promise((resolve, reject) => {
          const video = document.createElement("video");
          video.onloadedmetadata = () => resolve({ duration: video.duration });
          video.onerror = () => reject(video.error);
          video.src = ctx.src;
        }),
      },
      guards: {
        isFatal: (_, event) => event.data?.code === 4,
        canAutoplay: () => !globalThis.navigator?.userActivation || globalThis.navigator.userActivation.hasBeenActive,
        canRetry: (ctx) => ctx.errorCount < 3,
        isZeroVolume: (_, event) => event.volume === 0,
      },
      actions: {
        setSource: assign({ src: (_, event) => event.src, currentTime: 0 }),
        setMetadata: assign({ duration: (_, event) => event.data.duration }),
        setTime: assign({ currentTime: (_, event) => event.time }),
        setVolume: assign({ volume: (_, event) => event.volume }),
        setCaptionsTrack: assign({ captionsTrack: (_, event) => event.track }),
        seek: () => {},
        startPlayback: () => {},
        pausePlayback: () => {},
        logUnhandled: (_, event) => console.debug("unhandled", event.type),
      },
    },
  );
}
