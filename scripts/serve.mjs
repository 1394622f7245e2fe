// A tiny static server for the demo and the end-to-end tests (Node built-ins only).
//
//   node scripts/serve.mjs [--port 8080] [--host 127.0.0.1]
//
// Serves pkg/ under /pkg/ (the wasm package: /pkg/dist/idem.js) and www/ under /.
// Until www/index.html exists, / is a placeholder page that loads the package and
// prints its version. Tests can start it in-process:
//
//   import { serve } from "../../scripts/serve.mjs";
//   const { url, close } = await serve({ port: 0 });

import { createServer } from "node:http";
import { createReadStream } from "node:fs";
import { stat } from "node:fs/promises";
import { extname, join, normalize, resolve, sep } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { parseArgs } from "node:util";

const ROOT = resolve(fileURLToPath(import.meta.url), "..", "..");

const MOUNTS = [
  ["/pkg/", join(ROOT, "pkg")],
  ["/", join(ROOT, "www")],
];

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".mjs": "text/javascript; charset=utf-8",
  ".wasm": "application/wasm",
  ".json": "application/json; charset=utf-8",
  ".map": "application/json; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".ico": "image/x-icon",
  ".txt": "text/plain; charset=utf-8",
  ".ts": "text/plain; charset=utf-8",
};

const PLACEHOLDER = `<!doctype html>
<meta charset="utf-8">
<title>idem</title>
<h1>idem</h1>
<p>The demo page (www/index.html) is not there yet. The wasm package:
<output id="out">loading…</output></p>
<script type="module">
  import init, { version } from "/pkg/dist/idem.js";
  const out = document.getElementById("out");
  init().then(() => { out.textContent = "idem " + version() + " loaded"; },
              (e) => { out.textContent = "failed: " + e; });
</script>
`;

/** Map a URL path to a file under one of the mounts, or null if outside them. */
function locate(pathname) {
  for (const [prefix, dir] of MOUNTS) {
    if (!pathname.startsWith(prefix)) continue;
    const file = normalize(join(dir, pathname.slice(prefix.length)));
    return file === dir || file.startsWith(dir + sep) ? file : null;
  }
  return null;
}

async function handle(req, res) {
  const send = (status, type, body) => {
    res.writeHead(status, { "content-type": type, "cache-control": "no-store" });
    res.end(req.method === "HEAD" ? undefined : body);
  };
  if (req.method !== "GET" && req.method !== "HEAD") return send(405, TYPES[".txt"], "method not allowed\n");

  let pathname;
  try {
    pathname = decodeURIComponent(new URL(req.url, "http://localhost").pathname);
  } catch {
    return send(400, TYPES[".txt"], "bad request\n");
  }
  let file = locate(pathname);
  if (file === null) return send(404, TYPES[".txt"], "not found\n");

  let info = await stat(file).catch(() => null);
  if (info?.isDirectory()) {
    file = join(file, "index.html");
    info = await stat(file).catch(() => null);
  }
  if (!info?.isFile()) {
    if (pathname === "/" || pathname === "/index.html") return send(200, TYPES[".html"], PLACEHOLDER);
    if (pathname === "/favicon.ico") return send(204, TYPES[".txt"], "");
    return send(404, TYPES[".txt"], "not found\n");
  }

  res.writeHead(200, {
    "content-type": TYPES[extname(file)] ?? "application/octet-stream",
    "content-length": info.size,
    "cache-control": "no-store",
  });
  if (req.method === "HEAD") return res.end();
  createReadStream(file).pipe(res);
}

/** Start the server; resolves to { url, server, close }. Port 0 picks a free port. */
export function serve({ port = 8080, host = "127.0.0.1" } = {}) {
  const server = createServer((req, res) => {
    handle(req, res).catch((err) => {
      console.error(err);
      if (!res.headersSent) res.writeHead(500);
      res.end();
    });
  });
  return new Promise((ok, fail) => {
    server.once("error", fail);
    server.listen(port, host, () => {
      const { port } = server.address();
      const url = `http://${host.includes(":") ? `[${host}]` : host}:${port}/`;
      ok({ url, server, close: () => new Promise((done) => server.close(done)) });
    });
  });
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? "").href) {
  const { values } = parseArgs({
    options: { port: { type: "string", default: "8080" }, host: { type: "string", default: "127.0.0.1" } },
  });
  const { url } = await serve({ port: Number(values.port), host: values.host });
  console.log(`idem demo: ${url}  (serving www/ and /pkg/; Ctrl-C to stop)`);
}
