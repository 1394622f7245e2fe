//! `runCli`: the command line (`crate::cli`) for the package's `npx idem` (pkg/bin/idem.mjs), in
//! the full module only. Its files, streams and clock are the host's `io` object, so the output
//! is the Rust binary's byte for byte except the figures that are times.

use crate::cli::Io;
use wasm_bindgen::prelude::*;
use wasm_bindgen::JsCast;

#[wasm_bindgen]
extern "C" {
    /// `{ readFile(path): Uint8Array, writeFile(path, text), write("stdout" | "stderr", text), now(): ms }`
    pub type CliIo;
    #[wasm_bindgen(method, catch, js_name = readFile)]
    fn read_file(this: &CliIo, path: &str) -> Result<JsValue, JsValue>;
    #[wasm_bindgen(method, catch, js_name = writeFile)]
    fn write_file(this: &CliIo, path: &str, text: &str) -> Result<(), JsValue>;
    #[wasm_bindgen(method)]
    fn write(this: &CliIo, stream: &str, text: &str);
    #[wasm_bindgen(method)]
    fn now(this: &CliIo) -> f64;
}

/// A thrown JavaScript value as the reason an operation failed (an `Error`'s message).
fn reason(e: &JsValue) -> String {
    match e.dyn_ref::<js_sys::Error>() {
        Some(err) => String::from(err.message()),
        None => e.as_string().unwrap_or_else(|| "failed".into()),
    }
}

impl Io for CliIo {
    fn read_file(&mut self, path: &str) -> Result<Vec<u8>, String> {
        let bytes = CliIo::read_file(self, path).map_err(|e| reason(&e))?;
        bytes.dyn_into::<js_sys::Uint8Array>().map(|a| a.to_vec()).map_err(|_| "readFile did not return a Uint8Array".into())
    }
    fn write_file(&mut self, path: &str, text: &str) -> Result<(), String> {
        CliIo::write_file(self, path, text).map_err(|e| reason(&e))
    }
    fn out(&mut self, text: &str) {
        self.write("stdout", text);
    }
    fn err(&mut self, text: &str) {
        self.write("stderr", text);
    }
    fn now_ms(&mut self) -> f64 {
        self.now()
    }
}

/// Run `idem ARGS...` (`args` without the program's name) against `io`; the exit status.
///
/// ```js
/// process.exitCode = runCli(process.argv.slice(2), {
///   readFile: (p) => readFileSync(p), writeFile: (p, t) => writeFileSync(p, t),
///   write: (s, t) => process[s].write(t), now: () => performance.now(),
/// });
/// ```
#[wasm_bindgen(js_name = runCli)]
pub fn run_cli(args: Vec<String>, mut io: CliIo) -> u8 {
    crate::cli::run(&args, &mut io)
}
