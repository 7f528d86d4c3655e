fn main() {
    eprintln!("devarray: not built yet");
    std::process::exit(2);
}
