// A media player as parallel regions, in the style of the video and audio
// player machines of XState's examples and Stately's media player template:
// playback (a track loaded by an invoked promise actor, playing and paused
// with a history state to come back to after buffering), volume, and
// fullscreen that is only allowed while a track is ready.
//
// Written for idem's tests; licensed MIT OR Apache-2.0, as the project.
// `node tests/xstate/make.mjs` writes its JSON form (media-player.json).

export default function mediaPlayer({ setup, fromPromise, assign, raise, emit, stateIn, not }) {
  return setup({
    actors: {
      loadTrack: fromPromise(async ({ input }) => {
        const res = await fetch(`/tracks/${input.trackId}`);
        return { url: (await res.json()).url, duration: Number(res.headers.get("x-duration")) };
      }),
    },
    guards: {
      isAtEnd: ({ context }) => context.position >= context.duration,
      isLoud: ({ context }) => context.level > 80,
    },
    actions: {
      startAudio: () => globalThis.audio?.play(),
      stopAudio: () => globalThis.audio?.pause(),
    },
    delays: { bufferTimeout: 10000 },
  }).createMachine({
    id: "player",
    type: "parallel",
    context: { trackId: null, url: null, position: 0, duration: 0, level: 50 },
    states: {
      playback: {
        initial: "idle",
        states: {
          idle: {
            on: { LOAD: { target: "loading", actions: assign({ trackId: ({ event }) => event.trackId, position: 0 }) } },
          },
          loading: {
            invoke: {
              id: "loadTrack",
              src: "loadTrack",
              input: ({ context }) => ({ trackId: context.trackId }),
              onDone: { target: "ready", actions: assign(({ event }) => event.output) },
              onError: "failed",
            },
            on: { LOAD: { target: "loading", reenter: true } },
          },
          ready: {
            initial: "paused",
            states: {
              paused: { on: { PLAY: "playing" } },
              playing: {
                entry: "startAudio",
                exit: "stopAudio",
                on: {
                  PAUSE: "paused",
                  TICK: [
                    { target: "#player.playback.ended", guard: "isAtEnd" },
                    { actions: assign({ position: ({ context }) => context.position + 1 }) },
                  ],
                  WAITING: "#player.playback.buffering",
                },
              },
              hist: { type: "history" },
            },
            on: {
              SEEK: { actions: assign({ position: ({ event }) => event.position }) },
              STOP: { target: "idle", actions: raise({ type: "STOPPED" }) },
            },
          },
          buffering: {
            on: { CAN_PLAY: "ready.hist" },
            after: { bufferTimeout: "failed" },
          },
          ended: {
            entry: emit({ type: "trackEnded" }),
            on: { REPLAY: { target: "ready.playing", actions: assign({ position: 0 }) }, LOAD: "loading" },
          },
          failed: {
            on: { RETRY: "loading", LOAD: "loading" },
          },
        },
      },
      volume: {
        initial: "unmuted",
        states: {
          unmuted: {
            on: {
              MUTE: "muted",
              VOLUME: { actions: assign({ level: ({ event }) => event.level }) },
            },
          },
          muted: {
            on: { UNMUTE: "unmuted", VOLUME: { target: "unmuted", actions: assign({ level: ({ event }) => event.level }) } },
          },
        },
      },
      fullscreen: {
        initial: "off",
        states: {
          off: {
            on: { ENTER_FULLSCREEN: { target: "on", guard: stateIn({ playback: "ready" }) } },
          },
          on: {
            on: {
              EXIT_FULLSCREEN: "off",
              STOPPED: "off",
              VOLUME: { guard: not("isLoud"), actions: emit({ type: "showVolume" }) },
            },
          },
        },
      },
    },
  });
}
