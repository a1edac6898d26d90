//! The sandbox launcher as a program of this package, for its HTTP tests and benchmark: Cargo
//! names only a package's own binaries to them (`CARGO_BIN_EXE_*`). In production the
//! `sleuth` binary re-executes itself as `sleuth sandbox-exec` instead.

#![forbid(unsafe_code)]

fn main() {
    sleuth_sandbox::launcher_main(std::env::args_os().skip(1).collect())
}
