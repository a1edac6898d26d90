//! The launcher as a program of its own, for the tests and the benchmark; the service's
//! `sleuth sandbox-exec` does the same.

fn main() {
    sleuth_sandbox::launcher_main(std::env::args_os().skip(1).collect())
}
