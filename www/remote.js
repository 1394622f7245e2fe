// Worker mode: the same events sent to the Cloudflare Worker's HTTP API instead of the
// in-browser engine. The page finds out whether it is served by the Worker by asking for
// its health endpoint; a static server answers 404 and the page stays local.
//
//   POST /processes/:id/events   Idempotency-Key: <event id>   body { type, payload }
//     -> status code + JSON outcome; a replayed answer carries a replay header
//   GET  /processes/:id          -> the process as `machine.inspect` shows it

const HEALTH = ["/api/health", "/health"];
const REPLAY_HEADERS = ["idempotent-replayed", "idempotency-replayed", "x-idempotent-replayed"];

/** `{ url, ... }` from the Worker's health endpoint, or null when there is no Worker. */
export async function detectWorker() {
  for (const path of HEALTH) {
    try {
      const res = await fetch(path, { headers: { accept: "application/json" } });
      if (!res.ok || !(res.headers.get("content-type") ?? "").includes("json")) continue;
      const body = await res.json();
      return { ...body, health: path };
    } catch {
      // not served by the Worker
    }
  }
  return null;
}

export class RemoteProcess {
  constructor(info) {
    this.info = info;
  }

  /** Send one event; resolves to { status, replayed, outcome, headers }. */
  async send(processId, event) {
    const res = await fetch(`/processes/${encodeURIComponent(processId)}/events`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": event.id },
      body: JSON.stringify({ type: event.type, payload: event.payload ?? {} }),
    });
    const replay = REPLAY_HEADERS.map((h) => res.headers.get(h)).find((v) => v != null);
    let outcome = null;
    try {
      outcome = await res.json();
    } catch {
      outcome = null;
    }
    return { status: res.status, replayed: replay != null && replay !== "false", replayHeader: replay ?? null, outcome };
  }

  /** The process as `inspect` shows it, or null when it does not exist. */
  async inspect(processId) {
    const res = await fetch(`/processes/${encodeURIComponent(processId)}`, { headers: { accept: "application/json" } });
    if (res.status === 404) return null;
    if (!res.ok) throw new Error(`GET /processes/${processId}: HTTP ${res.status}`);
    return res.json();
  }
}
