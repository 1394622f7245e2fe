// Worker mode: the same events sent to the Cloudflare Worker's HTTP API (pkg/src/http.js,
// D1 behind it) instead of the in-browser engine. The page finds out whether the Worker
// serves it by asking for `/api/health`; a static server answers 404 and the page stays local.
//
//   POST /processes/:id/events   Idempotency-Key: <event id>   body { type, payload }
//     -> 201/200 { processId, eventId, status, revision, response } for an applied event;
//        a replay gets the first status and body again plus `Idempotency-Replayed: true`;
//        409 event_not_accepted (ignored), 422 id_conflict, 4xx problems for rejected events.
//        Every answer says the engine's outcome in `Idem-Outcome`.
//   GET  /processes/:id          -> { processId, version, ...machine.inspect(snapshot) } or 404

export const REPLAY_HEADER = "Idempotency-Replayed";
export const OUTCOME_HEADER = "Idem-Outcome";

/** The Worker's health answer ({ ok, store, ... }), or null when no Worker serves the page. */
export async function detectWorker() {
  try {
    const res = await fetch("/api/health", { headers: { accept: "application/json" } });
    if (!res.ok || !(res.headers.get("content-type") ?? "").includes("json")) return null;
    const body = await res.json();
    return body && body.ok ? body : null;
  } catch {
    return null;
  }
}

export class RemoteProcess {
  constructor(info) {
    this.info = info;
  }

  /**
   * Send one event. Resolves to `{ http, replayed, outcome }` where `outcome` has the
   * fields the page shows for a local outcome: status, response, revision, error.
   */
  async send(processId, event) {
    const res = await fetch(`/processes/${encodeURIComponent(processId)}/events`, {
      method: "POST",
      headers: { "content-type": "application/json", "idempotency-key": event.id },
      body: JSON.stringify({ type: event.type, payload: event.payload ?? {} }),
    });
    const body = await res.json().catch(() => null);
    const replayed = res.headers.get(REPLAY_HEADER) === "true";
    const status = res.headers.get(OUTCOME_HEADER) ?? (res.ok ? "applied" : "rejected");
    const outcome = { status, duplicate: status === "duplicate" };
    if (res.ok && body) {
      outcome.response = body.response ?? null;
      outcome.revision = body.revision ?? null;
    } else if (body && body.code) {
      outcome.error = { code: body.code, message: body.detail ?? body.title ?? "" };
    }
    return { http: res.status, replayed, outcome };
  }

  /** The process as `inspect` shows it, or null when it does not exist yet. */
  async inspect(processId) {
    const res = await fetch(`/processes/${encodeURIComponent(processId)}`, { headers: { accept: "application/json" } });
    if (res.status === 404) return null;
    if (!res.ok) throw new Error(`GET /processes/${processId}: HTTP ${res.status}`);
    return res.json();
  }
}
