fn main() {
    std::process::exit(smxrun::main());
}
