/// An allocation that fails ends smxrun with exit code 1 and a line naming the limit, not an
/// abort (`smxrun::cli::memory`).
#[global_allocator]
static ALLOCATOR: smxrun::cli::memory::ExitOnOom = smxrun::cli::memory::ExitOnOom;

/// The command line, with the benchmarks as its `bench` command.
fn main() {
    // `bench load`'s busy loops are this program too, so that they need nothing installed.
    if std::env::args().nth(1).as_deref() == Some(smx_bench::load::BUSY_ARG) {
        smx_bench::load::busy_loop();
    }
    let bench = smxrun::ExtraCommand::new(smx_bench::command(), run_bench);
    std::process::exit(smxrun::main_with([], [bench]));
}

/// `smxrun bench`: a stop signal finishes it early with the runs measured before it
/// (`smx_bench::interrupt`); a second one quits without them.
fn run_bench(matches: &clap::ArgMatches) -> i32 {
    if let Err(e) = smxrun::cli::signals::finish_on_signal(smx_bench::interrupt::request, "the bench's results") {
        eprintln!("warning: bench: cannot catch signals ({e}); a Ctrl-C ends it without writing results");
    }
    smx_bench::run_matches(matches)
}
