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
    let bench = smxrun::ExtraCommand::new(smx_bench::command(), smx_bench::run_matches);
    std::process::exit(smxrun::main_with([], [bench]));
}
