//! `idem`: drive the engine from a shell. The command line itself is `idem::cli` (shared with
//! the package's `npx idem`); this gives it the process's files, streams and clock.

use std::io::Write;
use std::process::ExitCode;
use std::time::Instant;

struct Process {
    start: Instant,
}

impl idem::cli::Io for Process {
    fn read_file(&mut self, path: &str) -> Result<Vec<u8>, String> {
        std::fs::read(path).map_err(|e| e.to_string())
    }
    fn write_file(&mut self, path: &str, text: &str) -> Result<(), String> {
        std::fs::write(path, text).map_err(|e| e.to_string())
    }
    fn out(&mut self, text: &str) {
        std::io::stdout().lock().write_all(text.as_bytes()).ok();
    }
    fn err(&mut self, text: &str) {
        std::io::stderr().lock().write_all(text.as_bytes()).ok();
    }
    fn now_ms(&mut self) -> f64 {
        self.start.elapsed().as_secs_f64() * 1000.0
    }
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    ExitCode::from(idem::cli::run(&args, &mut Process { start: Instant::now() }))
}
