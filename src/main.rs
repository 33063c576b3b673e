//! `toolstorm-tui`: the binary. Installs color-eyre's panic and error hooks first (the
//! explorer's terminal setup wraps them, so a panic restores the terminal before the report is
//! printed), then hands the arguments to the command line; when they ask for no command, it
//! starts the explorer. The two faces meet only here.

use std::io::{IsTerminal, Write};
use std::process::ExitCode;

use toolstorm::cli::{self, Io, Outcome};

/// mimalloc serves the MCP proxy's allocations, many freed on another thread than the one
/// that made them, well (see Cargo.toml).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    if let Err(e) = color_eyre::install() {
        eprintln!("toolstorm-tui: could not install error reporting: {e}");
    }
    // Unlocked handles: other threads (sweep's progress, an MCP server's stderr) write to the
    // same streams, and holding a lock for the whole run would make them wait forever.
    // Piped or redirected output is buffered (a write per line would dominate a big sweep);
    // the MCP proxy flushes each message itself.
    let people = std::io::stdout().is_terminal();
    let mut out: Box<dyn Write> = if people {
        Box::new(std::io::stdout())
    } else {
        Box::new(std::io::BufWriter::with_capacity(
            1 << 16,
            std::io::stdout(),
        ))
    };
    let mut err = std::io::stderr();
    let outcome = cli::dispatch(
        std::env::args_os(),
        &mut Io {
            out: &mut out,
            err: &mut err,
            people,
            reference: false,
        },
    );
    let _ = out.flush();
    drop(out);
    let code = match outcome {
        Outcome::Exit(code) => code,
        Outcome::Explore(file) => toolstorm::tui::explore(file, &mut err),
    };
    ExitCode::from(u8::try_from(code).unwrap_or(2))
}
