fn main() {
    std::process::exit(smx::cli::main());
}
