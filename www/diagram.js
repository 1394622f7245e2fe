// The machine drawn as SVG from its definition: states as boxes (compound states contain
// their children), transitions as labelled arrows, targetless transitions written inside
// the state that handles them, the active states highlighted, hazard findings marked.
//
// The layout is deliberately simple: inside each compound state the children are put in
// columns by their distance from the initial child (transitions lifted to siblings), and
// each column is ordered by the position of the states that lead into it. A parallel
// state's regions stand side by side, divided by dashed lines as in statechart notation;
// inside a region the states flow top to bottom, so the regions stay narrow.

const SVG = "http://www.w3.org/2000/svg";
const CHAR_W = 7.2; // width of one character at the diagram's font size (monospace 12px)
const LINE_H = 15;
const PAD = 14;
const COL_GAP = 40;
const ROW_GAP = 26;
const HEADER_H = 24;
const BADGE_CHAR_W = 6.4;
const BADGE_ROW = 22;
const REGION_INSET = 4; // between a parallel state's border and its regions

/** Parse a definition into a tree of states with resolved transitions. */
export function parseDefinition(def) {
  const byId = new Map();
  const root = node(def, "", null, def.id ?? "machine");
  function node(raw, path, parent, key) {
    const n = {
      key,
      path, // "" for the root, "payment.collecting" for nested states
      parent,
      raw,
      final: raw.type === "final",
      parallel: raw.type === "parallel",
      region: parent?.raw.type === "parallel", // a child of a parallel state
      initial: raw.initial ?? null,
      children: [],
      transitions: [],
    };
    if (raw.id && parent) byId.set(raw.id, n);
    for (const [k, child] of Object.entries(raw.states ?? {})) {
      n.children.push(node(child, path ? `${path}.${k}` : k, n, k));
    }
    return n;
  }
  const all = [];
  (function walk(n) {
    all.push(n);
    n.children.forEach(walk);
  })(root);
  const byPath = new Map(all.map((n) => [n.path, n]));

  function resolve(from, target) {
    if (target == null) return null;
    if (target.startsWith("#")) {
      const ref = target.slice(1);
      if (byId.has(ref)) return byId.get(ref);
      const prefix = `${def.id}.`;
      const p = ref.startsWith(prefix) ? ref.slice(prefix.length) : ref === def.id ? "" : ref;
      return byPath.get(p) ?? null;
    }
    if (target.startsWith(".")) return byPath.get(from.path ? `${from.path}${target}` : target.slice(1)) ?? null;
    const parent = from.parent ?? root;
    return byPath.get(parent.path ? `${parent.path}.${target}` : target) ?? null;
  }
  const candidates = (v) => (v == null ? [] : Array.isArray(v) ? v : [v]).map((c) => (typeof c === "string" ? { target: c } : c));

  for (const n of all) {
    for (const [event, v] of Object.entries(n.raw.on ?? {})) {
      for (const c of candidates(v)) n.transitions.push(transition(n, event, c));
    }
    for (const c of candidates(n.raw.always)) n.transitions.push(transition(n, "always", c));
    for (const [delay, v] of Object.entries(n.raw.after ?? {})) {
      for (const c of candidates(v)) n.transitions.push(transition(n, `after ${delay} ms`, c));
    }
    // The done event's name is XState's: the state's id, by default the machine id and its path.
    const id = n.raw.id ?? `${def.id ?? "machine"}.${n.path}`;
    for (const c of candidates(n.raw.onDone)) n.transitions.push(transition(n, `xstate.done.state.${id}`, c, "onDone"));
  }
  function transition(n, event, c, label = event) {
    const target = c.target == null ? null : resolve(n, Array.isArray(c.target) ? c.target[0] : c.target);
    return {
      source: n,
      event,
      label,
      target,
      guard: c.guard ? formatExpr(c.guard) : null,
      actions: (c.actions ?? []).map(actionName),
      reenter: !!c.reenter,
    };
  }
  return { root, all, byPath };
}

function actionName(a) {
  const [k, v] = Object.entries(a)[0] ?? ["?"];
  if (k === "assign") return `assign ${Object.keys(v).join(", ")}`;
  if (k === "effect") return `effect ${v.type}`;
  return k;
}

/** A short readable rendering of a JSONLogic expression, for labels. */
export function formatExpr(e) {
  if (e === null || typeof e !== "object") return JSON.stringify(e);
  if (Array.isArray(e)) return `[${e.map(formatExpr).join(", ")}]`;
  const [op, args] = Object.entries(e)[0];
  const a = Array.isArray(args) ? args : [args];
  if (op === "var") return String(a[0]).replace(/^(context|event\.payload)\./, "");
  if (op === "!") return `not ${formatExpr(a[0])}`;
  if (op === "in") return `${formatExpr(a[0])} in ${formatExpr(a[1])}`;
  if (op === "in_state") return `in ${String(a[0]).replace(/^#[^.]*\./, "")}`;
  if (["==", "===", "!=", "!==", ">", ">=", "<", "<=", "+", "-", "*", "/", "%", "and", "or"].includes(op)) {
    return a.map(formatExpr).join(` ${op.replace(">=", "≥").replace("<=", "≤")} `);
  }
  return `${op}(${a.map(formatExpr).join(", ")})`;
}

/** Positions for every state: { boxes: Map(path -> {x,y,w,h,node}), width, height }. */
export function layout(parsed, { badges = new Map() } = {}) {
  const boxes = new Map();
  const badgeW = (path) => (badges.has(path) ? badges.get(path).length * BADGE_CHAR_W + 12 : 0);
  const lines = (n) => n.transitions.filter((t) => !t.target || t.target === n).flatMap(inlineLines);
  const headerOf = (n) => (n.path === "" ? 0 : HEADER_H + lines(n).length * LINE_H + (lines(n).length ? 4 : 0));

  // Sizes, bottom-up; children positions relative to their parent. The top level and a
  // parallel state's regions flow top to bottom, other nested levels left to right (a
  // compound state stays wide and short).
  function size(n, depth) {
    if (n.children.length === 0) {
      const text = [n.key, ...lines(n)];
      const w = Math.max(92, Math.max(...text.map((t) => t.length)) * CHAR_W + 2 * PAD + 12, badgeW(n.path) + 2 * PAD);
      const h = HEADER_H + lines(n).length * LINE_H + (lines(n).length ? 8 : 4) + (badges.has(n.path) ? BADGE_ROW : 0);
      boxes.set(n.path, { node: n, w, h, x: 0, y: 0 });
      return;
    }
    n.children.forEach((c) => size(c, depth + 1));
    if (n.parallel) return sizeParallel(n);
    const lr = depth > 0 && !n.region;
    const ranks = rank(n);
    // An edge that skips ranks gets a narrow virtual node in each rank it crosses, so the
    // ordering keeps a lane free for it and the edge bends through that lane.
    const rankOf = new Map();
    ranks.forEach((g, i) => g.forEach((c) => rankOf.set(c, i)));
    for (const [a, b, t] of edges(n)) {
      const ra = rankOf.get(a);
      const rb = rankOf.get(b);
      if (rb - ra < 2) continue;
      const chain = [];
      for (let r = ra + 1; r < rb; r++) {
        const v = { virtual: true, path: `~${n.path}~${ranks[r].length}~${r}~${t.event}`, parent: n, children: [], transitions: [], from: a, to: b };
        boxes.set(v.path, { node: v, w: lr ? 8 : 24, h: lr ? 24 : 8, x: 0, y: 0 });
        ranks[r].push(v);
        chain.push(v);
      }
      t.via = chain.map((v) => v.path);
      for (let i = 0; i < chain.length; i++) chain[i].pred = i ? chain[i - 1] : a;
    }
    const gap = lr ? Math.max(64, labelWidthBetween(n) + 28) : 58;
    // Each rank is centred on the cross axis as it is placed (around 0), so the ordering of
    // the next rank sees final relative positions; everything is shifted into place after.
    const placed = new Map();
    let main = lr ? PAD : headerOf(n) + PAD;
    for (const group of ranks) {
      group.sort((p, q) => crossOf(p, placed, lr) - crossOf(q, placed, lr));
      const thick = Math.max(...group.map((c) => (lr ? boxes.get(c.path).w : boxes.get(c.path).h)));
      const span = group.reduce((sum, c) => sum + (lr ? boxes.get(c.path).h + ROW_GAP : boxes.get(c.path).w + COL_GAP), 0) - (lr ? ROW_GAP : COL_GAP);
      let cross = -span / 2;
      for (const c of group) {
        const b = boxes.get(c.path);
        if (lr) {
          b.x = main + (thick - b.w) / 2;
          b.y = cross;
          cross += b.h + ROW_GAP;
        } else {
          b.x = cross;
          b.y = main + (thick - b.h) / 2;
          cross += b.w + COL_GAP;
        }
        placed.set(c, b);
      }
      main += thick + gap;
    }
    const all = [...placed.values()];
    const least = Math.min(...all.map((b) => (lr ? b.y : b.x)));
    // A region is narrow: its edge labels, centred on its column, may be wider than its states.
    const span = Math.max(...all.map((b) => b.x + b.w)) - least;
    const margin = n.region ? Math.max(0, (Math.max(0, ...edges(n).map(([, , t]) => edgeLabel(t).length * 6.6 + 8)) - span) / 2) : 0;
    const first = lr ? headerOf(n) + PAD : PAD + margin;
    all.forEach((b) => (lr ? (b.y += first - least) : (b.x += first - least)));
    const w = Math.max(
      Math.max(...all.map((b) => b.x + b.w)) + PAD + margin,
      (n.key.length + 2) * CHAR_W + 2 * PAD + badgeW(n.path),
      ...lines(n).map((t) => t.length * CHAR_W + 2 * PAD),
    );
    const h = Math.max(...all.map((b) => b.y + b.h)) + PAD;
    boxes.set(n.path, { node: n, w, h, x: 0, y: 0 });
  }

  // A parallel state: its regions side by side in document order, each as tall as the
  // tallest, flush against each other (the dashed lines between them are drawn at the seams).
  function sizeParallel(n) {
    const regions = n.children.map((c) => boxes.get(c.path));
    const tall = Math.max(...regions.map((b) => b.h));
    let x = REGION_INSET;
    for (const b of regions) {
      b.x = x;
      b.y = headerOf(n);
      b.h = tall;
      x += b.w;
    }
    const w = Math.max(x + REGION_INSET, (n.key.length + 2) * CHAR_W + 2 * PAD + badgeW(n.path), ...lines(n).map((t) => t.length * CHAR_W + 2 * PAD));
    boxes.set(n.path, { node: n, w, h: headerOf(n) + tall + REGION_INSET, x: 0, y: 0 });
  }

  // The child of n that contains s, or null when s is outside n.
  const childOf = (n, s) => {
    for (let c = s; c; c = c.parent) if (c.parent === n) return c;
    return null;
  };
  // Transitions among n's children, lifted to the children that contain their ends.
  function edges(n) {
    const out = [];
    for (const k of n.children) {
      (function walk(s) {
        for (const t of s.transitions) {
          const to = t.target && childOf(n, t.target);
          if (to && to !== k) out.push([k, to, t]);
        }
        s.children.forEach(walk);
      })(k);
    }
    return out;
  }
  function labelWidthBetween(n) {
    return Math.max(0, ...edges(n).map(([, , t]) => edgeLabel(t).length * 6.6));
  }

  // Longest-path layering from the initial child, back edges ignored.
  function rank(n) {
    const kids = n.children;
    const succ = new Map(kids.map((k) => [k, []]));
    for (const [a, b] of edges(n)) succ.get(a).push(b);
    const start = kids.find((k) => k.key === n.initial) ?? kids[0];
    const order = [];
    const mark = new Map();
    (function dfs(k) {
      mark.set(k, 1);
      for (const to of succ.get(k)) if (!mark.has(to)) dfs(to);
      mark.set(k, 2);
      order.unshift(k);
    })(start);
    for (const k of kids) if (!mark.has(k)) order.push(k);
    const pos = new Map(order.map((k, i) => [k, i]));
    const r = new Map(kids.map((k) => [k, 0]));
    for (const k of order) for (const to of succ.get(k)) if (pos.get(to) > pos.get(k)) r.set(to, Math.max(r.get(to), r.get(k) + 1));
    const groups = [];
    for (const k of kids) (groups[r.get(k)] ??= []).push(k);
    return groups.filter(Boolean);
  }

  // Where the states leading into c sit on the cross axis (their mean), for ordering.
  function crossOf(c, placed, lr) {
    if (c.virtual) {
      const b = placed.get(c.pred) ?? boxes.get(c.pred.path);
      if (!b) return 1e6;
      // the lane sits where the edge's real source is
      const src = c.pred.virtual ? b : sourceBox(c.pred, c.to, b, lr);
      return lr ? src.y + src.h / 2 : src.x + src.w / 2;
    }
    const xs = [];
    for (const [p, b] of placed) {
      const leads = p.virtual
        ? p.to === c
        : (function any(s) {
            return s.transitions.some((t) => t.target && isWithin(t.target, c)) || s.children.some(any);
          })(p);
      if (leads) {
        // a nested source counts where it is inside its parent
        let cx = lr ? b.y + b.h / 2 : b.x + b.w / 2;
        (function deepest(s) {
          for (const ch of s.children) {
            const hit = (function any(x) {
              return x.transitions.some((t) => t.target && isWithin(t.target, c)) || x.children.some(any);
            })(ch);
            if (hit) {
              const cb = boxes.get(ch.path);
              cx = lr ? b.y + cb.y + cb.h / 2 : b.x + cb.x + cb.w / 2;
              deepest(ch);
              return;
            }
          }
        })(p);
        xs.push(cx);
      }
    }
    return xs.length ? xs.reduce((a, b) => a + b, 0) / xs.length : 1e6 + c.parent.children.indexOf(c);
  }

  // The box, in parent coordinates, of the deepest state inside p that leads to c.
  function sourceBox(p, c, b) {
    let out = b;
    (function deepest(s, ox, oy) {
      for (const ch of s.children) {
        const hit = (function any(x) {
          return x.transitions.some((t) => t.target && isWithin(t.target, c)) || x.children.some(any);
        })(ch);
        if (hit) {
          const cb = boxes.get(ch.path);
          out = { x: ox + cb.x, y: oy + cb.y, w: cb.w, h: cb.h };
          deepest(ch, ox + cb.x, oy + cb.y);
          return;
        }
      }
    })(p, b.x, b.y);
    return out;
  }

  size(parsed.root, 0);
  const root = boxes.get("");
  // absolute positions
  (function abs(n, ox, oy) {
    const b = boxes.get(n.path);
    b.x += ox;
    b.y += oy;
    n.children.forEach((c) => abs(c, b.x, b.y));
    for (const [path, vb] of boxes) if (vb.node.virtual && vb.node.parent === n) (vb.x += b.x), (vb.y += b.y);
  })(parsed.root, 0, 0);
  return { boxes, width: root.w, height: root.h };
}

function isWithin(s, ancestor) {
  for (let c = s; c; c = c.parent) if (c === ancestor) return true;
  return false;
}

// A targetless transition written inside its state: the event, then its guard and actions.
function inlineLines(t) {
  const out = [t.label];
  if (t.guard) out.push(`[${t.guard}]`);
  if (t.actions.length) out.push(`/ ${t.actions.join("; ")}`);
  return out;
}

function edgeLabel(t) {
  return t.guard ? `${t.label} [${t.guard}]` : t.label;
}

/** The active state paths for a state value ("a" or { a: "b" } or { a: { b: "c" } }). */
export function activePaths(value, prefix = "") {
  if (value == null) return [];
  if (typeof value === "string") return [prefix ? `${prefix}.${value}` : value];
  const out = [];
  for (const [k, v] of Object.entries(value)) {
    const p = prefix ? `${prefix}.${k}` : k;
    out.push(p, ...activePaths(v, p));
  }
  return out;
}

/** A findings' state path as a diagram path: "states.a.states.b" / "#order.a.b" / "a.b" -> "a.b". */
export function findingPath(p, machineId) {
  if (!p) return "";
  let s = String(p).replace(/^#/, "");
  if (machineId && s.startsWith(`${machineId}.`)) s = s.slice(machineId.length + 1);
  s = s.replace(/(^|\.)states\./g, "$1").replace(/\.(on|always|after|entry|exit)(\.|\[|$).*$/, "");
  return s;
}

/**
 * Draw into `svg` (an <svg> element). `active`: array of active paths;
 * `findings`: [{ code, severity, path, event }] with path already in diagram form.
 */
export function render(svg, parsed, { active = [], findings = [], focus = null } = {}) {
  const badges = new Map(); // filled below, before the layout, from the findings
  const margin = 8;
  svg.replaceChildren();
  const defs = el("defs");
  defs.innerHTML =
    '<marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">' +
    '<path d="M0,0 L10,5 L0,10 z" class="arrowhead"/></marker>' +
    '<marker id="arrow-hot" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" orient="auto-start-reverse">' +
    '<path d="M0,0 L10,5 L0,10 z" class="arrowhead hot"/></marker>';
  svg.append(defs);

  const activeSet = new Set(active);
  // Errors and warnings flag their state (badge, dashed outline) and colour the transitions
  // they name; informational findings about an event (protected by topology, guarded by an
  // identified set) mark those transitions as safe; other informational ones get a grey badge.
  const isInfo = (f) => String(f.severity).toLowerCase() === "info";
  const flagged = new Map(); // path -> findings shown as a badge
  const safe = new Map(); // path -> events whose repeat is harmless
  for (const f of findings) {
    if (isInfo(f) && f.event) {
      if (!safe.has(f.path)) safe.set(f.path, new Set());
      safe.get(f.path).add(f.event);
      continue;
    }
    if (!flagged.has(f.path)) flagged.set(f.path, []);
    flagged.get(f.path).push(f);
  }
  for (const [path, fs] of flagged) badges.set(path, fs.map((f) => f.code).join(" · "));
  const { boxes, width, height } = layout(parsed, { badges });
  svg.setAttribute("viewBox", `${-margin} ${-margin} ${width + 2 * margin} ${height + 2 * margin}`);
  const hotFor = (path, event) => (flagged.get(path) ?? []).some((f) => !isInfo(f) && (!f.event || f.event === event));
  const safeFor = (path, event) => !hotFor(path, event) && !!safe.get(path)?.has(event);

  // states, parents first so children draw on top
  const gStates = el("g", { class: "states" });
  for (const n of parsed.all) {
    if (n.path === "") continue;
    const b = boxes.get(n.path);
    const cls = ["state", n.children.length ? "compound" : "atomic"];
    if (n.final) cls.push("final");
    if (n.parallel) cls.push("parallel");
    if (n.region) cls.push("region");
    if (activeSet.has(n.path)) cls.push("active");
    if (flagged.has(n.path)) cls.push("flagged", `sev-${worst(flagged.get(n.path))}`);
    if (focus && focus === n.path) cls.push("focus");
    const g = el("g", { class: cls.join(" "), "data-state": n.path });
    const title = el("title");
    title.textContent = `${n.path}${activeSet.has(n.path) ? " (current)" : ""}${
      flagged.has(n.path) ? `\n${flagged.get(n.path).map((f) => `${f.code}: ${f.message ?? ""}`).join("\n")}` : ""
    }`;
    g.append(title);
    g.append(el("rect", { x: b.x, y: b.y, width: b.w, height: b.h, rx: n.final ? 14 : 8 }));
    if (n.final) g.append(el("rect", { class: "inner", x: b.x + 3, y: b.y + 3, width: b.w - 6, height: b.h - 6, rx: 11 }));
    if (n.parallel) {
      // the regions' seams: dashed lines from the name's row to the bottom border
      for (const r of n.children.slice(1)) {
        const rb = boxes.get(r.path);
        g.append(el("line", { class: "separator", x1: rb.x, y1: rb.y + 2, x2: rb.x, y2: b.y + b.h }));
      }
    }
    const label = el("text", { x: b.x + PAD, y: b.y + 17, class: "name" });
    label.textContent = n.key;
    g.append(label);
    let ly = b.y + HEADER_H + 11;
    for (const t of n.transitions.filter((t) => !t.target || t.target === n)) {
      const hot = hotFor(n.path, t.event);
      const ok = safeFor(n.path, t.event);
      for (const [i, text] of inlineLines(t).entries()) {
        const cls = `inline${i ? " detail" : ""}${hot ? " hot" : ok ? " safe" : ""}`;
        const line = el("text", { x: b.x + PAD + (i ? 12 : 0), y: ly, class: cls, "data-event": t.event });
        line.textContent = text;
        g.append(line);
        ly += LINE_H;
      }
    }
    if (flagged.has(n.path)) {
      const fs = flagged.get(n.path);
      const badge = el("g", { class: "badge" });
      const text = badges.get(n.path);
      const bw = text.length * BADGE_CHAR_W + 12;
      // atomic states: a row at the bottom of the box; compound states: beside the name
      const bx = n.children.length ? b.x + PAD + (n.key.length + 1) * CHAR_W : b.x + PAD - 4;
      const by = n.children.length ? b.y + 5 : b.y + b.h - BADGE_ROW + 1;
      badge.append(el("rect", { x: bx, y: by, width: bw, height: 17, rx: 8 }));
      const bt = el("text", { x: bx + 6, y: by + 12.5 });
      bt.textContent = text;
      badge.append(bt);
      g.append(badge);
    }
    gStates.append(g);
  }
  svg.append(gStates);

  // initial markers
  const gEdges = el("g", { class: "edges" });
  for (const n of parsed.all) {
    if (!n.children.length || n.parallel) continue; // every region of a parallel state is entered
    const first = n.children.find((c) => c.key === n.initial) ?? n.children[0];
    const b = boxes.get(first.path);
    gEdges.append(el("circle", { class: "initial", cx: b.x - 12, cy: b.y + 12, r: 4 }));
    gEdges.append(el("path", { class: "edge", d: `M${b.x - 8},${b.y + 12} L${b.x - 1},${b.y + 12}`, "marker-end": "url(#arrow)" }));
  }

  // transitions between boxes, through the lanes kept for them; labels placed greedily
  // along their edge where they overlap no box and no other label
  const gLabels = el("g", { class: "labels" });
  const taken = [...boxes.values()].filter((b) => !b.node.virtual && b.node.children.length === 0).map((b) => ({ x: b.x, y: b.y, w: b.w, h: b.h }));
  const seen = new Map();
  for (const n of parsed.all) {
    for (const t of n.transitions) {
      if (!t.target || t.target === n) continue;
      const a = boxes.get(n.path);
      const z = boxes.get(t.target.path);
      const via = (t.via ?? []).map((p) => boxes.get(p)).filter(Boolean).map((b) => [b.x + b.w / 2, b.y + b.h / 2]);
      const pair = `${n.path}->${t.target.path}`;
      const k = seen.get(pair) ?? 0;
      seen.set(pair, k + 1);
      const first = via[0] ?? centre(z);
      const last = via[via.length - 1] ?? centre(a);
      const p = border(a, centre(a), first);
      const q = border(z, centre(z), last);
      const pts = [p, ...via, q].map(([x, y]) => [x + k * 10, y + k * 10]);
      const hot = hotFor(n.path, t.event);
      const ok = safeFor(n.path, t.event);
      gEdges.append(
        el("path", {
          class: `edge${hot ? " hot" : ok ? " safe" : ""}`,
          d: smooth(pts),
          "marker-end": hot ? "url(#arrow-hot)" : "url(#arrow)",
          "data-event": t.event,
          "data-from": n.path,
          "data-to": t.target.path,
        }),
      );
      const text = edgeLabel(t);
      const tw = text.length * 6.6 + 8;
      const th = 15;
      let spot = null;
      for (const f of [0.5, 0.62, 0.38, 0.75, 0.25, 0.85]) {
        const [mx, my] = along(pts, f);
        const r = { x: mx - tw / 2, y: my - 10, w: tw, h: th };
        if (!taken.some((o) => overlap(o, r))) {
          spot = r;
          break;
        }
        spot ??= r;
      }
      taken.push(spot);
      const lg = el("g", { class: `label${hot ? " hot" : ok ? " safe" : ""}`, "data-event": t.event });
      if (hot || ok) {
        const title = el("title");
        title.textContent = hot ? "a repeat of this event is applied again (see the hazard analysis)" : "a repeat of this event is harmless (see the hazard analysis)";
        lg.append(title);
      }
      lg.append(el("rect", { x: spot.x, y: spot.y, width: tw, height: th, rx: 3 }));
      const tx = el("text", { x: spot.x + tw / 2, y: spot.y + 11.5, "text-anchor": "middle" });
      tx.textContent = text;
      lg.append(tx);
      gLabels.append(lg);
    }
  }
  svg.append(gEdges, gLabels);
  return { width, height };
}

function worst(fs) {
  const order = ["error", "warning", "info"];
  return order.find((s) => fs.some((f) => String(f.severity).toLowerCase() === s)) ?? "warning";
}

const centre = (b) => [b.x + b.w / 2, b.y + b.h / 2];
const overlap = (a, b) => a.x < b.x + b.w && b.x < a.x + a.w && a.y < b.y + b.h && b.y < a.y + a.h;

// A path through the points: straight for two, rounded corners (quadratic) for more.
function smooth(pts) {
  if (pts.length === 2) return `M${pts[0][0]},${pts[0][1]} L${pts[1][0]},${pts[1][1]}`;
  let d = `M${pts[0][0]},${pts[0][1]}`;
  for (let i = 1; i < pts.length - 1; i++) {
    const [x, y] = pts[i];
    const [nx, ny] = pts[i + 1];
    d += ` Q${x},${y} ${(x + nx) / 2},${(y + ny) / 2}`;
  }
  const [lx, ly] = pts[pts.length - 1];
  return `${d} L${lx},${ly}`;
}

// The point at fraction f of the polyline's length.
function along(pts, f) {
  const seg = [];
  let total = 0;
  for (let i = 1; i < pts.length; i++) {
    const l = Math.hypot(pts[i][0] - pts[i - 1][0], pts[i][1] - pts[i - 1][1]);
    seg.push(l);
    total += l;
  }
  let d = total * f;
  for (let i = 0; i < seg.length; i++) {
    if (d <= seg[i] || i === seg.length - 1) {
      const r = seg[i] ? d / seg[i] : 0;
      return [pts[i][0] + (pts[i + 1][0] - pts[i][0]) * r, pts[i][1] + (pts[i + 1][1] - pts[i][1]) * r];
    }
    d -= seg[i];
  }
  return pts[0];
}

function border(box, from, to) {
  const dx = to[0] - from[0];
  const dy = to[1] - from[1];
  if (dx === 0 && dy === 0) return from;
  const sx = dx ? box.w / 2 / Math.abs(dx) : Infinity;
  const sy = dy ? box.h / 2 / Math.abs(dy) : Infinity;
  const s = Math.min(sx, sy);
  return [from[0] + dx * s, from[1] + dy * s];
}

function el(name, attrs = {}) {
  const e = document.createElementNS(SVG, name);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, String(v));
  return e;
}
