/// An allocation that fails ends smxrun with exit code 1 and a line naming the limit, not an
/// abort (`cli::memory`).
#[global_allocator]
static ALLOCATOR: smxrun::cli::memory::ExitOnOom = smxrun::cli::memory::ExitOnOom;

fn main() {
    std::process::exit(smxrun::main());
}
