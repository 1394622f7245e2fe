// A file-upload machine written for XState 4, in the style of the upload
// widgets of production apps and of XState 4's documentation on invoking
// callbacks and machines: a presigned URL fetched by an inline promise, the
// upload itself an inline callback service that reports progress and listens
// for an abort (`src: (ctx) => (send, onReceive) => ...`), a second callback
// without an id, a child machine invoked inline (`src: scanMachine`) and one
// spawned into the context, guards given inline as functions, `forwardTo`,
// `send` to a service, `stop`, `pure` and `activities`.
//
// Written for idem's tests; licensed MIT OR Apache-2.0, as the project.
// Its JSON form (upload-v4.json) is a plain `JSON.stringify(machine.config)`
// under XState 4.38.3: `XSTATE4=<dir with xstate@4 installed> node tests/xstate/make.mjs`.

const MAX_BYTES = 50 * 1024 * 1024;

export default function uploadV4({ createMachine, assign, send, spawn, actions }) {
  const { forwardTo, stop, pure } = actions;

  // Scans the uploaded file for malware, as the storage service reports it.
  const scanMachine = createMachine({
    id: "scan",
    initial: "queued",
    states: {
      queued: { on: { SCAN_STARTED: "scanning" } },
      scanning: { on: { CLEAN: "clean", INFECTED: "infected" } },
      clean: { type: "final", data: { clean: true } },
      infected: { type: "final", data: { clean: false } },
    },
  });

  const thumbnailMachine = createMachine({
    id: "thumbnail",
    initial: "rendering",
    states: { rendering: { after: { 3000: "done" } }, done: { type: "final" } },
  });

  return createMachine(
    {
      id: "upload",
      initial: "idle",
      predictableActionArguments: true,
      context: { files: [], uploadUrl: null, progress: 0, attempts: 0, maxAttempts: 3, error: null, thumbnailRef: null },
      states: {
        idle: {
          on: {
            SELECT_FILES: { target: "validating", actions: assign({ files: (_, event) => event.files }) },
            DROP: { target: "validating", actions: assign({ files: (_, event) => [...event.dataTransfer.files] }) },
          },
        },
        validating: {
          always: [
            { target: "idle", cond: (ctx) => ctx.files.length === 0 },
            { target: "rejected", cond: (ctx) => ctx.files.some((f) => f.size > MAX_BYTES), actions: assign({ error: "too large" }) },
            { target: "requestingUrl" },
          ],
        },
        rejected: {
          on: {
            SELECT_FILES: { target: "validating", actions: assign({ files: (_, event) => event.files, error: null }) },
            RESET: { target: "idle", actions: "reset" },
          },
        },
        requestingUrl: {
          invoke: {
            id: "presign",
            src: (ctx) => fetch("/uploads/presign", { method: "POST", body: JSON.stringify({ name: ctx.files[0].name }) }).then((r) => r.json()),
            onDone: { target: "uploading", actions: assign({ uploadUrl: (_, event) => event.data.url }) },
            onError: { target: "failed", actions: assign({ error: (_, event) => event.data.message }) },
          },
        },
        uploading: {
          entry: assign({ progress: 0 }),
          activities: ["beaconOnline"],
          invoke: [
            {
              id: "uploader",
              src: (ctx) => (sendBack, onReceive) => {
                const xhr = new XMLHttpRequest();
                xhr.upload.onprogress = (e) => sendBack({ type: "PROGRESS", loaded: e.loaded, total: e.total });
                xhr.onload = () => sendBack(xhr.status < 300 ? "UPLOADED" : { type: "UPLOAD_ERROR", status: xhr.status });
                xhr.onerror = () => sendBack({ type: "UPLOAD_ERROR", status: 0 });
                onReceive((event) => event.type === "ABORT" && xhr.abort());
                xhr.open("PUT", ctx.uploadUrl);
                xhr.send(ctx.files[0]);
                return () => xhr.abort();
              },
            },
            {
              src: () => (sendBack) => {
                const timer = setInterval(() => sendBack("TICK"), 1000);
                return () => clearInterval(timer);
              },
            },
          ],
          on: {
            PROGRESS: { actions: assign({ progress: (_, event) => Math.round((event.loaded / event.total) * 100) }) },
            TICK: { actions: "updateEta" },
            UPLOADED: "scanning",
            UPLOAD_ERROR: [
              { target: "retrying", cond: (ctx) => ctx.attempts < ctx.maxAttempts },
              { target: "failed", actions: assign({ error: "upload failed" }) },
            ],
            PAUSE: { target: "paused", actions: send("ABORT", { to: "uploader" }) },
            CANCEL: { target: "idle", actions: [forwardTo("uploader"), "reset"] },
          },
        },
        paused: {
          on: {
            RESUME: "requestingUrl",
            CANCEL: { target: "idle", actions: "reset" },
          },
        },
        retrying: {
          entry: assign({ attempts: (ctx) => ctx.attempts + 1 }),
          after: { 2000: "requestingUrl" },
          on: { CANCEL: { target: "idle", actions: "reset" } },
        },
        scanning: {
          entry: assign({ thumbnailRef: () => spawn(thumbnailMachine, "thumbnail") }),
          invoke: {
            id: "scan",
            src: scanMachine,
            autoForward: true,
            onDone: [
              { target: "done", cond: (_, event) => event.data.clean },
              { target: "quarantined" },
            ],
            onError: "failed",
          },
          on: {
            CANCEL: { target: "idle", actions: [stop("scan"), "reset"] },
          },
        },
        quarantined: {
          entry: pure((ctx) => ctx.files.map((f) => send({ type: "NOTIFY", file: f.name }))),
          on: { RESET: { target: "idle", actions: "reset" } },
        },
        failed: {
          on: {
            RETRY: { target: "requestingUrl", actions: assign({ attempts: 0, error: null }) },
            RESET: { target: "idle", actions: "reset" },
          },
        },
        done: {
          type: "final",
          data: (ctx) => ({ url: ctx.uploadUrl.split("?")[0] }),
        },
      },
    },
    {
      actions: {
        reset: assign({ files: [], uploadUrl: null, progress: 0, attempts: 0, error: null }),
        updateEta: () => {},
      },
      activities: {
        beaconOnline: () => {
          const id = setInterval(() => navigator.sendBeacon?.("/uploads/alive"), 10000);
          return () => clearInterval(id);
        },
      },
    },
  );
}
