//! `toolstorm-tui`: the binary. A thin shell around [`toolstorm::cli`]: installs color-eyre's
//! panic and error hooks first (the explorer's terminal setup wraps them, so a panic restores
//! the terminal before the report is printed), then runs the command.

use std::io::Write;
use std::process::ExitCode;

fn main() -> ExitCode {
    if let Err(e) = color_eyre::install() {
        eprintln!("toolstorm-tui: could not install error reporting: {e}");
    }
    let stdout = std::io::stdout();
    let stderr = std::io::stderr();
    let mut out = stdout.lock();
    let mut err = stderr.lock();
    let code = toolstorm::cli::run(
        std::env::args_os(),
        &mut toolstorm::cli::Io {
            out: &mut out,
            err: &mut err,
        },
    );
    let _ = out.flush();
    ExitCode::from(u8::try_from(code).unwrap_or(2))
}
